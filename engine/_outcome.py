"""The outcome model with population diffusion (§3): the paper's arctangent, or the opt-in
logistic link with the same slope at P = 1/2."""

from __future__ import annotations

import math
from math import atan, pi

from engine.params import Params

LOGISTIC_SLOPE = 4.0 / math.pi
"""z = (4/π)·(μ_a − μ_b)/D: the logistic 1/(1 + e^−z) then has the arctangent's slope at P = 1/2,
1/(πD) per rating point, so D keeps its meaning and only the tails differ."""


def diffusion(sigma_bar: float, params: Params) -> float:
    """D = θ + λ·σ̄ (§3.2)."""
    return params.theta + params.lambda_sigma * sigma_bar


def p_ab(mu_a: float, mu_b: float, d: float) -> float:
    """P_ab = 1/2 + arctan((μ_a − μ_b)/D)/π, the probability that a kills b (§3.1)."""
    return 0.5 + atan((mu_a - mu_b) / d) / pi


def p_ab_logistic(mu_a: float, mu_b: float, d: float) -> float:
    """P_ab = 1/(1 + e^−z), z = (4/π)·(μ_a − μ_b)/D (the opt-in `logistic_link`).

    Same D and the same slope at μ_a = μ_b as the arctangent, with light (exponential) tails:
    the arctangent's 1 − P falls only as D/(π·Δμ), so against much weaker players it keeps
    predicting upsets that do not happen (docs/evaluation.md). Written so that e^x never
    overflows: e^−z for z ≥ 0, and e^z/(1 + e^z) for z < 0; P(b kills a) = 1 − P(a kills b)
    to a few ulps (z for b is exactly −z for a; exp, + and / each round once)."""
    z = LOGISTIC_SLOPE * ((mu_a - mu_b) / d)
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def outcome_probability(mu_a: float, mu_b: float, d: float, params: Params) -> float:
    """P_ab under the configured link: the paper's `p_ab`, or `p_ab_logistic` when
    `logistic_link` = 1."""
    if params.logistic_link:
        return p_ab_logistic(mu_a, mu_b, d)
    return p_ab(mu_a, mu_b, d)
