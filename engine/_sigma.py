"""Exact population mean uncertainty σ̄ (§3.2) through integer σ units (docs/design.md)."""

from __future__ import annotations

from operator import truediv

from engine.params import Params


def sigma_units(sigma: float, params: Params) -> int:
    """σ·2**k as an exact int; every σ in [sigma_min, sigma_max] is a multiple of 2**-k (§3.2)."""
    return int(sigma * params.sigma_scale)  # × 2**k is exact: no rounding, no overflow


def sigma_mean(total_units: int, count: int, params: Params) -> float:
    """σ̄ = S / (P·2**k), correctly rounded (int / int true division) (§3.2).

    Through `operator.truediv`, not `/`: compiled, mypyc divides two ints below 2**62 as
    doubles, each rounded first (S is above 2**53 from the first player: one σ0 is ~2**57
    units), so while S < 2**62 (a few dozen players, more as σ shrinks) σ̄ could be one ulp
    off the pure engine's (tests/engine/test_engine_compiled.py, `states`)."""
    mean: float = truediv(total_units, count << params.sigma_k)
    return mean
