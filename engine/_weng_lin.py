"""Weng–Lin (Weng & Lin 2011, Algorithm 4): the Bayesian Plackett–Luce update OpenSkill implements
(openskill.models.PlackettLuce), for a kill: two teams of one, the attacker ranked first.

For two players Plackett–Luce is Bradley–Terry: both σ first grow by τ (√(σ² + τ²)); then
c = √((σ_a² + β²) + (σ_b² + β²)), p = e^(μ_a/c)/(e^(μ_a/c) + e^(μ_b/c)) (the model's own
probability of the order "a before b": P(a kills b)), and
  μ_a' = μ_a + (σ_a²/c)(1 − p),            σ_a' = σ_a·√max(1 − (σ_a²/c²)(σ_a/c)·p(1 − p), κ),
  μ_b' = μ_b − (σ_b²/c)·q, q = e^(μ_b/c)/(e^(μ_a/c) + e^(μ_b/c)),
  σ_b' = σ_b·√max(1 − (σ_b²/c²)(σ_b/c)·q(1 − q), κ),
each in OpenSkill 6's order of operations (so its vectors match to the bit). The display rating
is the conservative μ − k·σ (OpenSkill's `ordinal`, k = 3). Idle time: none; σ grows by τ at
each kill only. e^(μ/c) overflows (OverflowError, an ArithmeticError) only for |μ|/c > 709.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Final

from engine._gaussian_player import GaussianModel, GaussianOutcome, GaussianState
from engine._model_config import check
from engine._state import Snapshot

WENG_LIN: Final = "weng-lin"


@dataclasses.dataclass(frozen=True, slots=True)
class WengLinConfig:
    """OpenSkill's PlackettLuce defaults: μ 25, σ 25/3, β 25/6, κ 0.0001, τ 25/300; display
    μ − 3σ."""

    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    beta: float = 25.0 / 6.0
    kappa: float = 0.0001
    tau: float = 25.0 / 300.0
    display_k: float = 3.0
    tier_n_min: int = 15  # placed once n >= this (ADR's N_min)
    tier_h_req: float = 10.0  # §6.4's h_req in the model's rating points

    def __post_init__(self) -> None:
        check(
            [
                (self.sigma > 0, "sigma > 0"),
                (self.beta > 0, "beta > 0"),
                (0 < self.kappa <= 1, "0 < kappa <= 1"),
                (self.tau >= 0, "tau >= 0"),
                (self.display_k >= 0, "display_k >= 0"),
                (self.tier_n_min >= 0, "tier_n_min >= 0"),
                (self.tier_h_req > 0, "tier_h_req > 0"),
            ],
            self,
        )


class WengLinState(GaussianState, frozen=True, gc=False):
    """A player's belief N(μ, σ²), counted kills and the last one's time (the fields:
    engine._gaussian_player.GaussianState)."""


class WengLinOutcome(GaussianOutcome[WengLinState], frozen=True, gc=False):
    """`WengLinModel.rate`'s result (engine.Outcome)."""


def _grown(sigma: float, tau: float) -> float:
    """σ with the additive dynamics: √(σ·σ + τ·τ) (OpenSkill's `rate`, before the update)."""
    return math.sqrt(sigma * sigma + tau * tau)


def _terms(
    mu_a: float, sigma_a: float, mu_b: float, sigma_b: float, beta: float
) -> tuple[float, float, float, float, float]:
    """(c, σ_a², σ_b², p, q) from the grown σ: OpenSkill's _c, _sum_q and the two shares."""
    var_a = sigma_a**2
    var_b = sigma_b**2
    beta2 = beta**2
    c = math.sqrt(0.0 + (var_a + beta2) + (var_b + beta2))
    e_a = math.exp(mu_a / c)
    e_b = math.exp(mu_b / c)
    total = e_a + e_b
    return c, var_a, var_b, e_a / total, e_b / total


def rate_pair(
    mu_a: float, sigma_a: float, mu_b: float, sigma_b: float, config: WengLinConfig
) -> tuple[float, float, float, float, float]:
    """(μ_a', σ_a', μ_b', σ_b', p) after a beats b."""
    tau = config.tau
    sigma_a, sigma_b = _grown(sigma_a, tau), _grown(sigma_b, tau)
    c, var_a, var_b, p, q = _terms(mu_a, sigma_a, mu_b, sigma_b, config.beta)
    c2 = c**2
    omega_a = (0.0 + (1 - p) / 1) * (var_a / c)
    delta_a = (0.0 + p * (1 - p) / 1) * (var_a / c2) * (math.sqrt(var_a) / c)
    omega_b = (0.0 - q / 1 + (1 - 1.0) / 1) * (var_b / c)
    delta_b = (0.0 + q * (1 - q) / 1 + 1.0 * (1 - 1.0) / 1) * (var_b / c2) * (math.sqrt(var_b) / c)
    kappa = config.kappa
    return (
        mu_a + omega_a,
        sigma_a * math.sqrt(max(1 - delta_a, kappa)),
        mu_b + omega_b,
        sigma_b * math.sqrt(max(1 - delta_b, kappa)),
        p,
    )


def win_probability(a: WengLinState, b: WengLinState, config: WengLinConfig) -> float:
    """p, the probability the update uses (with the σ grown by τ)."""
    tau = config.tau
    return _terms(a.mu, _grown(a.sigma, tau), b.mu, _grown(b.sigma, tau), config.beta)[3]


class WengLinModel(GaussianModel[WengLinState]):
    """Weng–Lin (OpenSkill's Plackett–Luce) behind engine.RatingModel (its players:
    engine._gaussian_player)."""

    def __init__(self, config: WengLinConfig) -> None:
        super().__init__(
            WengLinState, config.mu, config.sigma, config.display_k, config.tier_n_min,
            config.tier_h_req,
        )  # fmt: skip
        self.config = config

    @property
    def name(self) -> str:
        return WENG_LIN

    def predict(
        self,
        a: WengLinState,
        b: WengLinState,
        ts: int,
        total_units: int,
        count: int,
        snapshot: Snapshot,
    ) -> float:
        return win_probability(a, b, self.config)

    def rate(
        self,
        a: WengLinState,
        b: WengLinState,
        ts: int,
        total_units: int,
        count: int,
        snapshot: Snapshot,
        pair_last: int | None = None,
    ) -> WengLinOutcome:
        mu_a, sigma_a, mu_b, sigma_b, p = rate_pair(a.mu, a.sigma, b.mu, b.sigma, self.config)
        return WengLinOutcome(
            attacker=self.placed(a, mu_a, sigma_a, ts, snapshot),
            victim=self.placed(b, mu_b, sigma_b, ts, snapshot),
            p_ab=p,
            sigma_units_delta=0,
        )
