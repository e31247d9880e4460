"""Exact population mean uncertainty σ̄ (§3.2) through integer σ units (docs/design.md)."""

from __future__ import annotations

from engine.params import Params


def sigma_units(sigma: float, params: Params) -> int:
    """σ·2**k as an exact int; every σ in [sigma_min, sigma_max] is a multiple of 2**-k (§3.2)."""
    return int(sigma * params.sigma_scale)  # × 2**k is exact: no rounding, no overflow


def sigma_mean(total_units: int, count: int, params: Params) -> float:
    """σ̄ = S / (P·2**k), correctly rounded (int / int true division) (§3.2)."""
    return total_units / (count << params.sigma_k)
