"""Time decay toward the active mean and the returning-player test (§5, §8.2)."""

from __future__ import annotations

import math

from engine.params import MS_PER_DAY, Params


def gap_days(ts: int, last_ts: int | None) -> float:
    """d = max(0, t − t_last)/T_day as int/int (correctly rounded); 0 for a new player (§2.2)."""
    if last_ts is None:
        return 0.0
    return max(0, ts - last_ts) / MS_PER_DAY


def is_returning(gap: float, params: Params) -> bool:
    """The last counted event lies more than T_return days back, strictly (§8.2)."""
    return gap > params.t_return


def decay_mu(mu: float, gap: float, mean_mu_active: float, params: Params) -> float:
    """μ ← μ̄_A + (μ − μ̄_A)·exp(−d/τ) when d > 0 (§5), d = `idle_days` of the gap (the gap
    itself unless the opt-in decay_grace is set)."""
    idle = idle_days(gap, params)
    if idle <= 0.0:
        return mu
    return mean_mu_active + (mu - mean_mu_active) * math.exp(-idle / params.tau)


def decay_sigma(sigma: float, gap: float, params: Params) -> float:
    """σ ← min(σ_max, σ + σ_drift·d) when d > 0 (§5)."""
    if gap <= 0.0:
        return sigma
    return min(params.sigma_max, sigma + params.sigma_drift * gap)


def bounded_return_decay(mu: float, decayed: float, returning: bool, params: Params) -> float:
    """Opt-in (params.bound_return_decay = 1; the paper: 0): at a return, the §5 decay moves μ
    by at most Δmax, like one event's update (§8.4), instead of up to |μ − μ̄_A|; otherwise
    `decayed` unchanged. The part of the decay beyond Δmax is dropped, not deferred."""
    if not (params.bound_return_decay and returning):
        return decayed
    return mu + max(-params.delta_max, min(params.delta_max, decayed - mu))


def idle_days(gap: float, params: Params) -> float:
    """Opt-in (params.decay_grace = g days > 0; the paper: 0): the part of a gap the §5 μ decay
    acts on, max(0, gap − g); `gap` itself when g = 0 (the paper: decay on every gap > 0). The
    σ drift and the return test (§8.2) still take the whole gap.

    The paper decays on every gap, so a player between two sessions a day apart is pulled
    exp(−1/τ) ≈ 3% toward μ̄_A at each of them: over weeks of regular play the ratings shrink
    toward the mean and the predictions flatten (adr-no-decay in the report: 0.08 nats)."""
    grace = params.decay_grace
    if not grace:
        return gap
    return gap - grace if gap > grace else 0.0
