"""One counted kill event, steps 5–13 of docs/algorithm.md#steps: decay, predict, update, tiers.

Every step is written once, here, on a player's scalars (`Scalars` in, `NextScalars` out):
`kill_update` runs steps 5–13 (`prediction` 5–6, `raw_changes` 7–8, `next_scalars` 9–13) for
both `rate_kill` (on PlayerState, used by the consumer) and RatingBook's columnar hot path, which
differ only in how they store a player (immutable states vs mutable records with ring buffers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import msgspec
from msgspec.structs import astuple

from engine._cooldown import repeat_weight
from engine._decay import bounded_return_decay, decay_mu, decay_sigma, gap_days, is_returning
from engine._errors import EngineError
from engine._learning_rate import eta, window_mean
from engine._outcome import diffusion, outcome_probability
from engine._pair_load import load_weight
from engine._sigma import sigma_mean, sigma_units
from engine._state import PlayerState, Snapshot
from engine._tiers import tier_step
from engine._update import phi_next, recent_next, updated_skill, victim_raw, window_next
from engine.params import Params

Scalars = tuple[float, float, int, int | None, int, float, float, int, float, float]
"""A player's stored scalars before an event, as both state forms hold them: μ, σ, n, last_ts,
streak, φ, ν (pool), tier, h_up, h_down. (A plain tuple: mypyc passes it unboxed.)"""


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
    """P_ab with σ̄ over all tracked players, a and b at their post-decay σ (§3, step 6), under
    the configured link (the paper's arctangent unless `logistic_link`).

    `stored_units_*` are sigma_units of a's and b's stored (pre-decay) σ, as counted in S.
    With the opt-in `own_sigma`, σ̄ is replaced by the mean of a's and b's own σ (`pair_sigma`)."""
    if params.own_sigma:
        return outcome_probability(
            mu_a, mu_b, diffusion(pair_sigma(sigma_a, sigma_b), params), params
        )
    units = (
        total_units
        + sigma_units(sigma_a, params)
        - stored_units_a
        + sigma_units(sigma_b, params)
        - stored_units_b
    )
    d = diffusion(sigma_mean(units, count, params), params)
    return outcome_probability(mu_a, mu_b, d, params)


def pair_sigma(sigma_a: float, sigma_b: float) -> float:
    """(σ_a + σ_b)/2: the opt-in `own_sigma`'s stand-in for σ̄ in D = θ + λ·σ̄ (extends §3.2).

    With σ̄ a pair with a newcomer (σ0 = 350) is predicted as confidently as two veterans of the
    same μ gap; with the pair's own σ, D widens by λ·(σ0 − σ)/2 and P moves toward 1/2 where
    either rating is still a guess. One add and a halving: exact on every platform."""
    return (sigma_a + sigma_b) * 0.5


def prediction(
    a: Scalars,
    units_a: int,
    b: Scalars,
    units_b: int,
    ts: int,
    total_units: int,
    count: int,
    mean_mu_active: float,
    params: Params,
) -> tuple[float, float, float, bool, float, float, bool]:
    """Steps 5–6 of "a kills b at ts": (P_ab, then μ, σ, returning of a and of b after decay).

    `units_*` are sigma_units of a's and b's stored σ; S (`total_units`) and P include both."""
    mean = mean_mu_active  # a[0..3], b[0..3]: μ, σ, n, last_ts (Scalars)
    mu_a, sigma_a, returning_a = decayed(a[0], a[1], a[2], a[3], ts, mean, params)
    mu_b, sigma_b, returning_b = decayed(b[0], b[1], b[2], b[3], ts, mean, params)
    p = kill_probability(mu_a, sigma_a, units_a, mu_b, sigma_b, units_b, total_units, count, params)
    return p, mu_a, sigma_a, returning_a, mu_b, sigma_b, returning_b


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
    units_a, units_b = sigma_units(a.sigma, params), sigma_units(b.sigma, params)
    mean = snapshot.mean_mu_active
    return prediction(
        scalars(a), units_a, scalars(b), units_b, ts, total_units, count, mean, params
    )[0]


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


NextScalars = tuple[float, float, int, float, int, int, float, float, int, float, float]
"""A player's scalars after an event (steps 9–13), what both state forms store: μ', σ',
sigma_units(σ') (its new share of S), ν', n, tier, h_up, h_down, streak, φ', and Δμ = μ' − the
post-decay μ (the window takes |Δμ|, §4.5). The recent times are the caller's (their storage
differs). A plain tuple, like `Scalars`: mypyc passes it unboxed, with no allocation."""


def next_scalars(
    before: Scalars,
    mu: float,
    sigma: float,
    returning: bool,
    raw: float,
    error: float,
    won: bool,
    boundaries: Sequence[float] | None,
    params: Params,
) -> NextScalars:
    """Steps 9–13 from the stored scalars, the post-decay μ, σ and the raw change: capped μ, σ,
    pool, n, tier and hysteresis (§6), streak and φ."""
    pool, n, tier, h_up, h_down = before[6], before[2], before[7], before[8], before[9]
    mu_next, sigma_new, pool_next = updated_skill(mu, sigma, pool, returning, raw, params)
    n_next = n + 1
    tier_next, h_up_next, h_down_next = tier_step(
        tier, h_up, h_down, mu_next, sigma_new, n_next, boundaries, params
    )
    streak = before[4] + 1 if won else 0
    phi = phi_next(before[5], error, params)
    units = sigma_units(sigma_new, params)
    return (mu_next, sigma_new, units, pool_next, n_next, tier_next, h_up_next, h_down_next,
            streak, phi, mu_next - mu)  # fmt: skip


def kill_update(
    a: Scalars,
    w_bar_a: float,
    units_a: int,
    b: Scalars,
    w_bar_b: float,
    units_b: int,
    ts: int,
    total_units: int,
    count: int,
    snapshot: Snapshot,
    params: Params,
    weight: float = 1.0,
) -> tuple[float, NextScalars, NextScalars, int]:
    """Steps 5–13 of a counted "a kills b at ts", written once for both state forms: (P_ab,
    a's and b's next scalars, the change of S). `w_bar_*` are the players' window means and
    `units_*` the sigma_units of their stored σ; S (`total_units`) and P include both; `weight`
    is the pair's `repeat_weight` (1: the paper)."""
    p, mu_a, sigma_a, returning_a, mu_b, sigma_b, returning_b = prediction(
        a, units_a, b, units_b, ts, total_units, count, snapshot.mean_mu_active, params
    )
    eta_a = eta(sigma_a, a[4], w_bar_a, a[5], params)
    eta_b = eta(sigma_b, b[4], w_bar_b, b[5], params)
    raw_a, raw_b = raw_changes(p, eta_a, eta_b, params, weight)
    bounds = snapshot.boundaries
    next_a = next_scalars(a, mu_a, sigma_a, returning_a, raw_a, 1.0 - p, True, bounds, params)
    next_b = next_scalars(b, mu_b, sigma_b, returning_b, raw_b, p - 1.0, False, bounds, params)
    return p, next_a, next_b, next_a[2] - units_a + next_b[2] - units_b


StateFields = tuple[
    float, float, int, float, float, int, int | None, int, float, float,
    tuple[float, ...], tuple[int, ...],
]  # fmt: skip
"""A PlayerState's fields in their declaration order (engine/_state.py: μ, σ, streak, φ, ν, n,
last_ts, tier, h_up, h_down, window, recent), as `fields` reads them (checked by
tests/engine/test_engine_formulas.py)."""


def fields(state: PlayerState) -> StateFields:
    """All of `state`'s fields in one call (msgspec.structs.astuple): compiled, each `state.x`
    is a generic attribute lookup, and `rate_kill` reads 14 of them per player."""
    return cast(StateFields, astuple(state))


def scalars(state: PlayerState) -> Scalars:
    """The scalars `kill_update` reads from a PlayerState."""
    return _scalars(fields(state))


def _scalars(f: StateFields) -> Scalars:
    mu, sigma, streak, phi, pool, n, last_ts, tier, h_up, h_down, _window, _recent = f
    return (mu, sigma, n, last_ts, streak, phi, pool, tier, h_up, h_down)


def _updated(state: StateFields, s: NextScalars, ts: int, params: Params) -> PlayerState:
    """A player's state after the event at ts, from its fields before and its next scalars."""
    window, recent = state[10], state[11]
    mu, sigma, _units, pool, n, tier, h_up, h_down, streak, phi, delta_mu = s
    return PlayerState(
        mu=mu,
        sigma=sigma,
        streak=streak,
        phi=phi,
        pool=pool,
        n=n,
        last_ts=ts,
        tier=tier,
        h_up=h_up,
        h_down=h_down,
        window=window_next(window, delta_mu, params),
        recent=recent_next(recent, ts, params),
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
    pair_load: int | None = None,
) -> KillOutcome:
    """Apply one counted event "a kills b at ts" (steps 5–13); S, P include a and b at stored σ.

    `pair_last`: the last counted a→b time, for the opt-in repeat_window (None: none in memory).
    `pair_load`: the pair's leaked load at ts (engine.leaked_load), required by the opt-in
    pair_decay; EngineError without it, so a caller that keeps no loads cannot run it silently."""
    fa, fb = fields(a), fields(b)  # fa[1]: σ, fa[10]: window (StateFields)
    units_a, units_b = sigma_units(fa[1], params), sigma_units(fb[1], params)
    w_a, w_b = window_mean(fa[10]), window_mean(fb[10])
    weight = repeat_weight(pair_last, ts, params)
    if params.pair_decay_ms:
        if pair_load is None:
            raise EngineError("pair_decay needs the pair's load (pair_load)")
        weight *= load_weight(pair_load, params)
    p, next_a, next_b, delta = kill_update(
        _scalars(fa), w_a, units_a, _scalars(fb), w_b, units_b,
        ts, total_units, count, snapshot, params, weight,
    )  # fmt: skip
    new_a, new_b = _updated(fa, next_a, ts, params), _updated(fb, next_b, ts, params)
    return KillOutcome(attacker=new_a, victim=new_b, p_ab=p, sigma_units_delta=delta)
