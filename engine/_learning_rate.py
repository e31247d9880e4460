"""The adaptive learning rate η = base·streak·vol·trend (§4.1, peak-shaped base of §8.1)."""

from __future__ import annotations

from collections.abc import Sequence
from math import fsum

from engine.params import Params


def eta_base(sigma: float, params: Params) -> float:
    """η_base = η_min + (η_max − η_min)·2σσ_peak/(σ² + σ_peak²) (§8.1, replaces §4.1's K_σ form)."""
    peak = params.sigma_peak
    shape = (2.0 * sigma * peak) / (sigma * sigma + peak * peak)
    return params.eta_min + (params.eta_max - params.eta_min) * shape


def eta_streak(streak: int, params: Params) -> float:
    """η_streak = 1 + ρ_s·min(s, S_max) (§4.1)."""
    return 1.0 + params.rho_s * min(streak, params.s_max)


def eta_vol(w_bar: float, params: Params) -> float:
    """η_vol = 1/(1 + ρ_v·w̄/W_ref) (§4.1)."""
    return 1.0 / (1.0 + params.rho_v * (w_bar / params.w_ref))


def eta_trend(phi: float, params: Params) -> float:
    """η_trend = 1 + γ_φ·max(0, φ) (§4.1)."""
    return 1.0 + params.gamma_phi * max(0.0, phi)


def window_mean(window: Sequence[float]) -> float:
    """w̄ = fsum(window)/len(window), 0 when empty (§2.2)."""
    return fsum(window) / len(window) if window else 0.0


def eta(sigma: float, streak: int, w_bar: float, phi: float, params: Params) -> float:
    """η = η_base·η_streak·η_vol·η_trend, evaluated left to right; w̄ = window_mean (§4.1)."""
    return (
        eta_base(sigma, params)
        * eta_streak(streak, params)
        * eta_vol(w_bar, params)
        * eta_trend(phi, params)
    )
