"""Tier placement and the promotion/demotion accumulators (§6.1, §6.3, §6.4)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.params import TIER_COUNT, Params


def can_place(n: int, sigma: float, params: Params) -> bool:
    """Placement condition: n ≥ N_min and σ ≤ σ_place (§6.1)."""
    return n >= params.n_min and sigma <= params.sigma_place


def tier_of(mu: float, boundaries: Sequence[float]) -> int:
    """The k with B_k ≤ μ < B_{k−1}, B_0 = +∞, B_15 = −∞ (§6.3)."""
    for k, bound in enumerate(boundaries, start=1):
        if mu >= bound:
            return k
    return TIER_COUNT


def h_up_next(h_up: float, mu: float, tier: int, boundaries: Sequence[float]) -> float:
    """h↑ += μ − B_{k−1} while μ ≥ B_{k−1} (k > 1), else 0 (§6.4)."""
    if tier > 1:
        upper = boundaries[tier - 2]
        if mu >= upper:
            return h_up + (mu - upper)
    return 0.0


def h_down_next(h_down: float, mu: float, tier: int, boundaries: Sequence[float]) -> float:
    """h↓ += B_k − μ while μ < B_k (k < 15), else 0 (§6.4)."""
    if tier < TIER_COUNT:
        lower = boundaries[tier - 1]
        if mu < lower:
            return h_down + (lower - mu)
    return 0.0


def tier_step(
    tier: int,
    h_up: float,
    h_down: float,
    mu: float,
    sigma: float,
    n: int,
    boundaries: Sequence[float] | None,
    params: Params,
) -> tuple[int, float, float]:
    """(tier, h↑, h↓) after a player's own counted event, from its post-event μ, σ, n (§6)."""
    if boundaries is None:
        return tier, h_up, h_down
    if tier == 0:
        if can_place(n, sigma, params):
            return tier_of(mu, boundaries), 0.0, 0.0
        return 0, h_up, h_down
    up = h_up_next(h_up, mu, tier, boundaries)
    down = h_down_next(h_down, mu, tier, boundaries)
    if up >= params.h_req:
        return tier - 1, 0.0, 0.0
    if down >= params.h_req:
        return tier + 1, 0.0, 0.0
    return tier, up, down


def display_tier_step(
    tier: int,
    h_up: float,
    h_down: float,
    display: float,
    n: int,
    boundaries: Sequence[float] | None,
    n_min: int,
    h_req: float,
) -> tuple[int, float, float]:
    """(tier, h↑, h↓) of a model other than ADR after a player's own counted event (§6's rule on
    the model's display rating): placed by `tier_of` once n ≥ n_min (no σ condition: the
    display rating of TrueSkill, Weng–Lin and Glicko-2 is already conservative), then moved one
    tier by the §6.4 accumulators reaching h_req, in the model's rating points."""
    if boundaries is None:
        return tier, h_up, h_down
    if tier == 0:
        if n >= n_min:
            return tier_of(display, boundaries), 0.0, 0.0
        return 0, h_up, h_down
    up = h_up_next(h_up, display, tier, boundaries)
    down = h_down_next(h_down, display, tier, boundaries)
    if up >= h_req:
        return tier - 1, 0.0, 0.0
    if down >= h_req:
        return tier + 1, 0.0, 0.0
    return tier, up, down
