"""The arctangent outcome model with population diffusion (§3)."""

from __future__ import annotations

import math

from engine.params import Params


def diffusion(sigma_bar: float, params: Params) -> float:
    """D = θ + λ·σ̄ (§3.2)."""
    return params.theta + params.lambda_sigma * sigma_bar


def p_ab(mu_a: float, mu_b: float, d: float) -> float:
    """P_ab = 1/2 + arctan((μ_a − μ_b)/D)/π, the probability that a kills b (§3.1)."""
    return 0.5 + math.atan((mu_a - mu_b) / d) / math.pi
