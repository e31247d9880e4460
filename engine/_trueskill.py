"""TrueSkill (Herbrich, Minka, Graepel 2006) for a kill: a 1-vs-1 game the attacker wins, no
draws, as the `trueskill` package rates `rate_1vs1` with draw_probability 0.

Both σ first grow by the dynamics τ (σ² + τ²); then with c = √(2β² + σ_a² + σ_b²) and
t = (μ_a − μ_b)/c: μ_a' = μ_a + (σ_a²/c)·V(t), μ_b' = μ_b − (σ_b²/c)·V(t),
σ' = σ·√(1 − (σ²/c²)·W(t)). P(a kills b) = Φ(t) with the σ before τ (the trueskill
documentation's win probability). The display rating is the conservative μ − k·σ (k = 3: the
package's `expose` is μ − 3σ with its defaults). Idle time: none; σ grows by τ at each kill only.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Final

from engine._gaussian import cdf, v_win, w_win
from engine._gaussian_player import GaussianModel, GaussianOutcome, GaussianState
from engine._model_config import check
from engine._state import Snapshot

TRUESKILL: Final = "trueskill"


@dataclasses.dataclass(frozen=True, slots=True)
class TrueSkillConfig:
    """The package's defaults: μ 25, σ 25/3, β σ/2, τ σ/100; display μ − 3σ."""

    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    beta: float = 25.0 / 3.0 / 2.0
    tau: float = 25.0 / 3.0 / 100.0  # the package's SIGMA / 100 (not 25/300: one ulp apart)
    display_k: float = 3.0
    tier_n_min: int = 15  # placed once n >= this (ADR's N_min)
    tier_h_req: float = 10.0  # §6.4's h_req in the model's rating points

    def __post_init__(self) -> None:
        check(
            [
                (self.sigma > 0, "sigma > 0"),
                (self.beta > 0, "beta > 0"),
                (self.tau >= 0, "tau >= 0"),
                (self.display_k >= 0, "display_k >= 0"),
                (self.tier_n_min >= 0, "tier_n_min >= 0"),
                (self.tier_h_req > 0, "tier_h_req > 0"),
            ],
            self,
        )


class TrueSkillState(GaussianState, frozen=True, gc=False):
    """A player's TrueSkill belief N(μ, σ²), counted kills and the last one's time (the fields:
    engine._gaussian_player.GaussianState)."""


class TrueSkillOutcome(GaussianOutcome[TrueSkillState], frozen=True, gc=False):
    """`TrueSkillModel.rate`'s result (engine.Outcome)."""


def win_probability(a: TrueSkillState, b: TrueSkillState, beta: float) -> float:
    """Φ((μ_a − μ_b)/√(2β² + σ_a² + σ_b²))."""
    c = math.sqrt(2.0 * beta * beta + a.sigma * a.sigma + b.sigma * b.sigma)
    return cdf((a.mu - b.mu) / c)


def rate_1vs1(
    mu_a: float, sigma_a: float, mu_b: float, sigma_b: float, beta: float, tau: float
) -> tuple[float, float, float, float]:
    """(μ_a', σ_a', μ_b', σ_b') after a beats b (no draw)."""
    var_a = sigma_a * sigma_a + tau * tau
    var_b = sigma_b * sigma_b + tau * tau
    c2 = 2.0 * beta * beta + var_a + var_b
    c = math.sqrt(c2)
    t = (mu_a - mu_b) / c
    v = v_win(t)
    w = w_win(t)
    return (
        mu_a + var_a / c * v,
        math.sqrt(var_a * (1.0 - var_a / c2 * w)),
        mu_b - var_b / c * v,
        math.sqrt(var_b * (1.0 - var_b / c2 * w)),
    )


class TrueSkillModel(GaussianModel[TrueSkillState]):
    """TrueSkill behind engine.RatingModel (its players: engine._gaussian_player)."""

    def __init__(self, config: TrueSkillConfig) -> None:
        super().__init__(
            TrueSkillState, config.mu, config.sigma, config.display_k, config.tier_n_min,
            config.tier_h_req,
        )  # fmt: skip
        self.config = config

    @property
    def name(self) -> str:
        return TRUESKILL

    def predict(
        self,
        a: TrueSkillState,
        b: TrueSkillState,
        ts: int,
        total_units: int,
        count: int,
        snapshot: Snapshot,
    ) -> float:
        return win_probability(a, b, self.config.beta)

    def rate(
        self,
        a: TrueSkillState,
        b: TrueSkillState,
        ts: int,
        total_units: int,
        count: int,
        snapshot: Snapshot,
        pair_last: int | None = None,
    ) -> TrueSkillOutcome:
        config = self.config
        mu_a, sigma_a, mu_b, sigma_b = rate_1vs1(
            a.mu, a.sigma, b.mu, b.sigma, config.beta, config.tau
        )
        return TrueSkillOutcome(
            attacker=self.placed(a, mu_a, sigma_a, ts, snapshot),
            victim=self.placed(b, mu_b, sigma_b, ts, snapshot),
            p_ab=win_probability(a, b, config.beta),
            sigma_units_delta=0,
        )
