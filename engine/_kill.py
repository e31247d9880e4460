"""One counted kill event, steps 5–13 of adr-reading.md: decay, predict, update, tiers.

Every step is written once, here: `decayed` (steps 5–6), `kill_probability`, `raw_changes`
(7–8) and `next_scalars` (9–13, with `updated_skill`) are shared by `rate_kill` (on PlayerState,
used by the consumer) and RatingBook's columnar hot path, which differ only in how they store a
player (immutable states vs mutable records with ring buffers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from engine._cooldown import repeat_weight
from engine._decay import bounded_return_decay, decay_mu, decay_sigma, gap_days, is_returning
from engine._learning_rate import eta, window_mean
from engine._outcome import diffusion, p_ab
from engine._sigma import sigma_mean, sigma_units
from engine._state import PlayerState, Snapshot
from engine._tiers import tier_step
from engine._update import (
    capped_mu,
    phi_next,
    pool_regular,
    pool_returning,
    recent_next,
    sigma_next,
    victim_raw,
    window_next,
)
from engine.params import Params


class KillOutcome(msgspec.Struct, frozen=True, gc=False):
    """The result of `rate_kill`: both new states, the P_ab used, and the change of S."""

    attacker: PlayerState
    victim: PlayerState
    p_ab: float
    sigma_units_delta: int


def decayed(
    mu: float,
    sigma: float,
    n: int,
    last_ts: int | None,
    ts: int,
    mean_mu_active: float,
    params: Params,
) -> tuple[float, float, bool]:
    """(μ, σ, returning) of a player at ts before its event; none before its first (§5, §8.2)."""
    if n == 0 or last_ts is None:
        return mu, sigma, False
    gap = gap_days(ts, last_ts)
    returning = is_returning(gap, params)
    return (
        bounded_return_decay(mu, decay_mu(mu, gap, mean_mu_active, params), returning, params),
        decay_sigma(sigma, gap, params),
        returning,
    )


def kill_probability(
    mu_a: float,
    sigma_a: float,
    stored_units_a: int,
    mu_b: float,
    sigma_b: float,
    stored_units_b: int,
    total_units: int,
    count: int,
    params: Params,
) -> float:
    """P_ab with σ̄ over all tracked players, a and b at their post-decay σ (§3, step 6).

    `stored_units_*` are sigma_units of a's and b's stored (pre-decay) σ, as counted in S."""
    units = (
        total_units
        + sigma_units(sigma_a, params)
        - stored_units_a
        + sigma_units(sigma_b, params)
        - stored_units_b
    )
    return p_ab(mu_a, mu_b, diffusion(sigma_mean(units, count, params), params))


def updated_skill(
    mu: float, sigma: float, pool: float, returning: bool, raw: float, params: Params
) -> tuple[float, float, float]:
    """(μ', σ', ν') from post-decay μ, σ and the raw change: pool, cap, bounds, σ (9–11)."""
    if returning:
        pool_next, target = pool_returning(mu, pool, raw, sigma, params)
    else:
        pool_next, target = pool_regular(mu, pool, raw, params)
    mu_next = capped_mu(mu, target, params)
    return mu_next, sigma_next(sigma, mu_next - mu, params), pool_next


def predict(
    a: PlayerState,
    b: PlayerState,
    ts: int,
    total_units: int,
    count: int,
    snapshot: Snapshot,
    params: Params,
) -> float:
    """P_ab as a counted "a kills b at ts" would use it (§3, §5); S, P include a and b."""
    mean = snapshot.mean_mu_active
    mu_a, sigma_a, _ = decayed(a.mu, a.sigma, a.n, a.last_ts, ts, mean, params)
    mu_b, sigma_b, _ = decayed(b.mu, b.sigma, b.n, b.last_ts, ts, mean, params)
    units_a, units_b = sigma_units(a.sigma, params), sigma_units(b.sigma, params)
    return kill_probability(
        mu_a, sigma_a, units_a, mu_b, sigma_b, units_b, total_units, count, params
    )


def raw_changes(
    p: float, eta_a: float, eta_b: float, params: Params, weight: float = 1.0
) -> tuple[float, float]:
    """The raw μ changes before the cap (§4.1, steps 7–8): the winner's η_a(1−P), the loser's
    `victim_raw` (the paper: −c_loss·η_b·P); both times the pair's `repeat_weight` (1: paper)."""
    raw_a = eta_a * (1.0 - p)
    raw_b = victim_raw(raw_a, params.c_loss * eta_b, p, params)
    if weight != 1.0:
        return raw_a * weight, raw_b * weight
    return raw_a, raw_b


class NextScalars(NamedTuple):
    """A player's scalar state after an event (steps 9–13): what both state forms store."""

    mu: float
    sigma: float
    pool: float
    n: int
    tier: int
    h_up: float
    h_down: float
    streak: int
    phi: float


def next_scalars(
    mu: float,
    sigma: float,
    pool: float,
    n: int,
    tier: int,
    h_up: float,
    h_down: float,
    streak: int,
    phi: float,
    returning: bool,
    raw: float,
    error: float,
    won: bool,
    boundaries: Sequence[float] | None,
    params: Params,
) -> NextScalars:
    """Steps 9–13 from the post-decay μ, σ and the raw change: capped μ, σ, pool, n, tier and
    hysteresis (§6), streak and φ; the window and recent times are the caller's (their storage
    differs), fed with μ_next − μ and ts."""
    mu_next, sigma_new, pool_next = updated_skill(mu, sigma, pool, returning, raw, params)
    n_next = n + 1
    tier_next, h_up_next, h_down_next = tier_step(
        tier, h_up, h_down, mu_next, sigma_new, n_next, boundaries, params
    )
    return NextScalars(
        mu=mu_next,
        sigma=sigma_new,
        pool=pool_next,
        n=n_next,
        tier=tier_next,
        h_up=h_up_next,
        h_down=h_down_next,
        streak=streak + 1 if won else 0,
        phi=phi_next(phi, error, params),
    )


def _updated(
    state: PlayerState,
    mu: float,
    sigma: float,
    returning: bool,
    raw: float,
    error: float,
    won: bool,
    ts: int,
    boundaries: Sequence[float] | None,
    params: Params,
) -> PlayerState:
    """A player's state after the event, from its post-decay μ, σ and raw change (steps 9–13)."""
    st = state
    s = next_scalars(mu, sigma, st.pool, st.n, st.tier, st.h_up, st.h_down, st.streak, st.phi,
                     returning, raw, error, won, boundaries, params)  # fmt: skip
    return PlayerState(
        mu=s.mu,
        sigma=s.sigma,
        streak=s.streak,
        phi=s.phi,
        pool=s.pool,
        n=s.n,
        last_ts=ts,
        tier=s.tier,
        h_up=s.h_up,
        h_down=s.h_down,
        window=window_next(state.window, s.mu - mu, params),
        recent=recent_next(state.recent, ts, params),
    )


def rate_kill(
    a: PlayerState,
    b: PlayerState,
    ts: int,
    total_units: int,
    count: int,
    snapshot: Snapshot,
    params: Params,
    pair_last: int | None = None,
) -> KillOutcome:
    """Apply one counted event "a kills b at ts" (steps 5–13); S, P include a and b at stored σ.

    `pair_last`: the last counted a→b time, for the opt-in repeat_window (None: none in memory)."""
    mean = snapshot.mean_mu_active
    mu_a, sigma_a, returning_a = decayed(a.mu, a.sigma, a.n, a.last_ts, ts, mean, params)
    mu_b, sigma_b, returning_b = decayed(b.mu, b.sigma, b.n, b.last_ts, ts, mean, params)
    units_a, units_b = sigma_units(a.sigma, params), sigma_units(b.sigma, params)
    p = kill_probability(mu_a, sigma_a, units_a, mu_b, sigma_b, units_b, total_units, count, params)
    eta_a = eta(sigma_a, a.streak, window_mean(a.window), a.phi, params)
    eta_b = eta(sigma_b, b.streak, window_mean(b.window), b.phi, params)
    raw_a, raw_b = raw_changes(p, eta_a, eta_b, params, repeat_weight(pair_last, ts, params))
    bounds = snapshot.boundaries
    new_a = _updated(a, mu_a, sigma_a, returning_a, raw_a, 1.0 - p, True, ts, bounds, params)
    new_b = _updated(b, mu_b, sigma_b, returning_b, raw_b, p - 1.0, False, ts, bounds, params)
    delta = sigma_units(new_a.sigma, params) - units_a + sigma_units(new_b.sigma, params) - units_b
    return KillOutcome(attacker=new_a, victim=new_b, p_ab=p, sigma_units_delta=delta)
