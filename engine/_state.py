"""Plain data: a player's state (§2.2) and the population snapshot (§2.3, §6.3)."""

from __future__ import annotations

import msgspec

from engine.params import Params


class PlayerState(msgspec.Struct, frozen=True, gc=False):
    """One tracked player's ADR state (§2.2) plus its tier (§6) and activity record (§2.3)."""

    mu: float
    sigma: float
    streak: int
    phi: float
    pool: float
    n: int
    last_ts: int | None  # ms of the last counted event; None while n == 0
    tier: int  # 0 = unplaced ("No Tier"), 1..15 = TIER_LABELS[tier - 1]
    h_up: float
    h_down: float
    window: tuple[float, ...]  # |Δμ| of the last <= `window` updates, oldest first
    recent: tuple[int, ...]  # the <= n_active latest counted event times (ms), ascending


class Snapshot(msgspec.Struct, frozen=True, gc=False):
    """The population snapshot the events between two calibrations use (§2.3, §5, §6.3)."""

    taken_at: int | None  # event time (ms) it was taken at; None for the initial one
    mean_mu_active: float  # μ̄_A
    boundaries: tuple[float, ...] | None  # B_1..B_14, non-increasing; None until first calibration
    active_count: int  # |A| as used (the whole population when nobody is active)


def new_player(params: Params) -> PlayerState:
    """The initial state of a newly tracked player (§2.2)."""
    return PlayerState(
        mu=params.mu0,
        sigma=params.sigma0,
        streak=0,
        phi=0.0,
        pool=0.0,
        n=0,
        last_ts=None,
        tier=0,
        h_up=0.0,
        h_down=0.0,
        window=(),
        recent=(),
    )


def initial_snapshot(params: Params) -> Snapshot:
    """The snapshot before any calibration: μ̄_A = μ0, no boundaries (§5: A empty ⇒ μ0)."""
    return Snapshot(taken_at=None, mean_mu_active=params.mu0, boundaries=None, active_count=0)


EMPTY_SNAPSHOT = initial_snapshot
