"""One player's update on a counted event: §4.2–§4.5 with the safeguards of §8.2–§8.4."""

from __future__ import annotations

import math
from typing import TypeVar

from engine.params import Params


def evidence_weight(sigma: float, params: Params) -> float:
    """r = σ0/(σ + σ0), the evidence-confidence weight of a returning player (§8.2)."""
    return params.sigma0 / (sigma + params.sigma0)


def pool_returning(
    mu: float, nu: float, raw: float, sigma: float, params: Params
) -> tuple[float, float]:
    """(ν', target) for a returning player: eff = raw·r is split, ν drains (§8.2–8.3)."""
    eff = raw * evidence_weight(sigma, params)
    lam = params.lambda_pool
    nu_next = min(params.nu_max, max(params.nu_min, (1.0 - lam) * nu + params.alpha * eff))
    return nu_next, mu + (1.0 - params.alpha) * eff + lam * nu


def victim_raw(raw_a: float, eta_b_loss: float, p: float, params: Params) -> float:
    """The victim's raw change: −c_loss·η_b·P_ab (§7, the paper). Opt-in zero_sum_update = 1:
    −raw_a, the victim loses exactly what the attacker gains before pools and caps, so the
    update itself no longer drains the mean μ (against a much weaker victim the paper's victim
    loses about c_loss·η_b while the attacker gains about 0)."""
    if params.zero_sum_update:
        return -raw_a
    return -(eta_b_loss * p)


def pool_regular(mu: float, nu: float, raw: float, params: Params) -> tuple[float, float]:
    """(ν', target) for any other player: the pool only drains into μ (§8.3, algorithm.md#r10)."""
    lam = params.lambda_pool
    return (1.0 - lam) * nu, mu + raw + lam * nu


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


def capped_mu(mu: float, target: float, params: Params) -> float:
    """μ' = clip(μ + clip(target − μ, −Δ_max, Δ_max), μ_min, μ_max) (§8.4 then §4.2); with the
    opt-in floor_margin a downward step is first scaled by `soft_floor`."""
    step = min(params.delta_max, max(-params.delta_max, target - mu))
    if step < 0.0 and params.floor_margin:
        step = soft_floor(mu, step, params)
    return min(params.mu_max, max(params.mu_min, mu + step))


def soft_floor(mu: float, step: float, params: Params) -> float:
    """Opt-in (params.floor_margin = m > 0; the paper: 0): a downward step of a player d = μ − μ_min
    above the floor, d < m, is scaled by d/m; at d ≥ m, and for any rise, `step` is unchanged.

    The paper's hard clip (§4.2) stacks every player the update pushes below μ_min on exactly
    μ_min, where they tie and their losses are discarded. Scaled, a loss of s ≤ Δmax < m leaves
    d·(1 − s/m) > 0: the distance to the floor shrinks geometrically, a player above μ_min never
    reaches it, and the order among players near the floor is kept."""
    d = mu - params.mu_min
    if step >= 0.0 or d >= params.floor_margin:
        return step
    return step * (d / params.floor_margin)


def sigma_next(sigma: float, delta_mu: float, params: Params) -> float:
    """σ' = clip((1/σ_mid² + 1/γ²)^(−1/2), σ_min, σ_max), σ_mid² = σ² + Δμ² (§4.3)."""
    mid_sq = sigma * sigma + delta_mu * delta_mu
    gamma = params.gamma
    reduced = 1.0 / math.sqrt(1.0 / mid_sq + 1.0 / (gamma * gamma))
    return min(params.sigma_max, max(params.sigma_min, reduced))


def phi_next(phi: float, error: float, params: Params) -> float:
    """φ' = clip((1 − λ_φ)·φ + λ_φ·error, −1, 1); error = 1 − P_ab (a) or P_ab − 1 (b) (§4.4)."""
    lam = params.lambda_phi
    return min(1.0, max(-1.0, (1.0 - lam) * phi + lam * error))


def window_next(window: tuple[float, ...], delta_mu: float, params: Params) -> tuple[float, ...]:
    """Append |Δμ|, keeping the newest L entries, oldest first (§4.5).

    Cut before appending, by tuple concatenation: compiled, `(*window, x)` builds a list first
    and the cut another tuple (this runs for both players of every event)."""
    return _newest(window, params.window - 1) + (abs(delta_mu),)  # noqa: RUF005 (see above)


_T = TypeVar("_T")


def _newest(items: tuple[_T, ...], keep: int) -> tuple[_T, ...]:
    """The last `keep` (>= 0) of `items`, `items` itself if it holds no more."""
    size = len(items)
    return items[size - keep :] if size > keep else items


def recent_next(recent: tuple[int, ...], ts: int, params: Params) -> tuple[int, ...]:
    """The n_active latest counted event times after counting one at ts, ascending (§2.3)."""
    if not recent or ts >= recent[-1]:  # the usual case: no sort (see `window_next`)
        return _newest(recent, params.n_active - 1) + (ts,)  # noqa: RUF005 (window_next)
    grown = tuple(sorted((*recent, ts)))
    return grown[-params.n_active :] if len(grown) > params.n_active else grown
