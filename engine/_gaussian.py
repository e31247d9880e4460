"""The standard normal's density and distribution, and TrueSkill's V and W for a win (no draw
margin), in plain float math (math.erfc: the same libm call pure and compiled)."""

from __future__ import annotations

import math
from typing import Final

_SQRT2: Final = math.sqrt(2.0)
_SQRT2PI: Final = math.sqrt(2.0 * math.pi)


def pdf(x: float) -> float:
    """φ(x) = e^(−x²/2)/√(2π)."""
    return math.exp(-x * x / 2.0) / _SQRT2PI


def cdf(x: float) -> float:
    """Φ(x) = erfc(−x/√2)/2 (erfc keeps the lower tail's precision)."""
    return 0.5 * math.erfc(-x / _SQRT2)


def v_win(x: float) -> float:
    """V(x) = φ(x)/Φ(x), the mean's correction for a win at a performance difference x; −x where
    Φ(x) underflows to 0 (its limit, as the trueskill package takes it)."""
    denom = cdf(x)
    return pdf(x) / denom if denom else -x


def w_win(x: float) -> float:
    """W(x) = V(x)(V(x) + x), in (0, 1); the package raises where rounding leaves that interval,
    here it takes the limit instead: 1 far below 0, 0 far above."""
    v = v_win(x)
    w = v * (v + x)
    if 0.0 < w < 1.0:
        return w
    return 1.0 if x < 0.0 else 0.0
