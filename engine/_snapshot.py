"""The population snapshot: active set, μ̄_A and the tier boundaries (§2.3, §5, §6.3)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

from engine._state import PlayerState, Snapshot
from engine.params import Params


def activity_time(state: PlayerState, params: Params) -> int | None:
    """The n_active-th most recent counted event time (ms), None while n < n_active (§2.3)."""
    recent = state.recent
    return recent[-params.n_active] if len(recent) >= params.n_active else None


def is_active(state: PlayerState, now_ms: int, params: Params) -> bool:
    """i ∈ A(now): its n_active-th most recent counted event is later than now − T_active (§2.3)."""
    t = activity_time(state, params)
    return t is not None and t > now_ms - params.active_ms


def quantile_index(p: Fraction, size: int) -> int:
    """Index of F⁻¹(p) in the sorted sample: ceil(p·|A|) − 1, clamped to [0, |A| − 1] (§6.3)."""
    return min(size - 1, max(0, math.ceil(p * size) - 1))


def boundary_targets(sorted_mus: Sequence[float], params: Params) -> tuple[float, ...]:
    """B_k^target = F⁻¹(1 − q_k), k = 1..14, from the ascending active μ sample (§6.3)."""
    size = len(sorted_mus)
    return tuple(sorted_mus[quantile_index(p, size)] for p in params.quantile_ps)


def smoothed(old: float, target: float, beta: float) -> float:
    """B_k ← (1 − β)·B_k + β·B_k^target, evaluated in exactly this form (§6.3)."""
    return (1 - beta) * old + beta * target


def take_snapshot(
    now_ms: int,
    active_mus: Sequence[float],
    fallback_mus: Iterable[float],
    previous: Snapshot | None,
    params: Params,
) -> Snapshot:
    """The snapshot at now from μ over A; `fallback_mus` (all of P) is read only if A is empty."""
    sample = list(active_mus) if active_mus else list(fallback_mus)
    size = len(sample)
    mean = math.fsum(sample) / size if size else params.mu0
    old = previous.boundaries if previous is not None else None
    boundaries = old
    if size >= params.p_min:
        sample.sort()
        targets = boundary_targets(sample, params)
        if old is None:
            boundaries = targets
        else:
            beta = params.beta
            boundaries = tuple(smoothed(b, t, beta) for b, t in zip(old, targets, strict=True))
    return Snapshot(taken_at=now_ms, mean_mu_active=mean, boundaries=boundaries, active_count=size)
