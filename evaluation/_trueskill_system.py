"""TrueSkill through the `trueskill` package: 1-vs-1, no draws, the package's default scale."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evaluation._errors import EvaluationError

try:
    import trueskill as _ts
except ImportError as exc:  # pragma: no cover - the eval extra installs it
    raise EvaluationError("TrueSkill needs the eval extra: pip install 'adr-stream[eval]'") from exc

TS_MU = 25.0
TS_SIGMA = TS_MU / 3.0


def make_environment(
    draw_probability: float = 0.0, beta: float = TS_SIGMA / 2.0, tau: float = TS_SIGMA / 100.0
) -> Any:
    """The package's environment (μ 25, σ 25/3; defaults β σ/2, τ σ/100) with the draw rate."""
    return _ts.TrueSkill(
        mu=TS_MU,
        sigma=TS_SIGMA,
        beta=beta,
        tau=tau,
        draw_probability=draw_probability,
    )


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


@dataclass
class TrueSkill:
    """TrueSkill (Herbrich et al. 2006), each kill a 1-vs-1 game won by the attacker.

    P(a beats b) = Φ((μa − μb) / sqrt(2β² + σa² + σb²)); the visible rating is μ.
    """

    draw_probability: float = 0.0
    beta: float = TS_SIGMA / 2.0
    tau: float = TS_SIGMA / 100.0
    name: str = "trueskill"
    env: Any = None
    players: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.env is None:
            self.env = make_environment(self.draw_probability, self.beta, self.tau)

    def _get(self, player: str) -> Any:
        found = self.players.get(player)
        return self.env.create_rating() if found is None else found

    def rating(self, player: str) -> float:
        return float(self._get(player).mu)

    def sigma(self, player: str) -> float:
        return float(self._get(player).sigma)

    def tier(self, player: str) -> int | None:
        return None

    def predict(self, a: str, b: str, ts: int) -> float:
        ra, rb = self._get(a), self._get(b)
        spread = math.sqrt(2.0 * self.env.beta**2 + ra.sigma**2 + rb.sigma**2)
        return _phi((ra.mu - rb.mu) / spread)

    def update(self, a: str, b: str, ts: int) -> None:
        self.players[a], self.players[b] = _ts.rate_1vs1(self._get(a), self._get(b), env=self.env)
