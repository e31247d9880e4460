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

import msgspec

from engine._elo import EMPTY_WINDOW, in_domain, in_tiers, no_window
from engine._gaussian import cdf, v_win, w_win
from engine._model import HashFields
from engine._model_config import check
from engine._state import Snapshot
from engine._tiers import display_tier_step

TRUESKILL: Final = "trueskill"
_ENCODE: Final = msgspec.msgpack.Encoder().encode
_ACCUMULATORS: Final = msgspec.msgpack.Decoder(tuple[float, float])


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


class TrueSkillState(msgspec.Struct, frozen=True, gc=False):
    """A player's TrueSkill belief N(μ, σ²), counted kills and the last one's time."""

    mu: float
    sigma: float
    n: int
    last_ts: int | None
    tier: int = 0
    """0 unplaced, 1..15 (§6 on the display rating: engine.display_tier_step)."""
    h_up: float = 0.0
    h_down: float = 0.0


class TrueSkillOutcome(msgspec.Struct, frozen=True, gc=False):
    """`TrueSkillModel.rate`'s result (engine.Outcome)."""

    attacker: TrueSkillState
    victim: TrueSkillState
    p_ab: float
    sigma_units_delta: int


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


class TrueSkillModel:
    """TrueSkill behind engine.RatingModel."""

    def __init__(self, config: TrueSkillConfig) -> None:
        self.config = config
        self._new = TrueSkillState(mu=config.mu, sigma=config.sigma, n=0, last_ts=None)

    @property
    def name(self) -> str:
        return TRUESKILL

    def new_player(self) -> TrueSkillState:
        return self._new

    def units(self, state: TrueSkillState) -> int:
        return 0

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
            attacker=self._placed(a, TrueSkillState(mu_a, sigma_a, a.n + 1, ts), snapshot),
            victim=self._placed(b, TrueSkillState(mu_b, sigma_b, b.n + 1, ts), snapshot),
            p_ab=win_probability(a, b, config.beta),
            sigma_units_delta=0,
        )

    def display(self, state: TrueSkillState) -> float:
        """μ − k·σ."""
        return state.mu - self.config.display_k * state.sigma

    def tier(self, state: TrueSkillState) -> int:
        return state.tier

    def _placed(
        self, old: TrueSkillState, new: TrueSkillState, snapshot: Snapshot
    ) -> TrueSkillState:
        """`new` with its tier (engine.display_tier_step on its display rating)."""
        config = self.config
        tier, h_up, h_down = display_tier_step(
            old.tier, old.h_up, old.h_down, self.display(new), new.n, snapshot.boundaries,
            config.tier_n_min, config.tier_h_req,
        )  # fmt: skip
        return TrueSkillState(new.mu, new.sigma, new.n, new.last_ts, tier, h_up, h_down)

    def activity_time(self, state: TrueSkillState) -> int | None:
        return state.last_ts

    def to_fields(self, state: TrueSkillState) -> HashFields:
        """mu: μ, sigma: σ, tier; state: [h_up, h_down]."""
        return (
            state.mu, state.sigma, state.n, state.last_ts, state.tier, EMPTY_WINDOW,
            _ENCODE((state.h_up, state.h_down)),
        )  # fmt: skip

    def from_fields(self, fields: HashFields) -> TrueSkillState:
        mu, sigma, n, last_ts, tier, window, packed = fields
        no_window(window)
        h_up, h_down = _ACCUMULATORS.decode(packed)
        in_domain("mu", mu)
        in_domain("sigma", sigma, positive=True)
        in_tiers(tier, h_up, h_down)
        return TrueSkillState(mu, sigma, n, last_ts, tier, h_up, h_down)
