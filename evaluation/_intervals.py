"""95% intervals over seeds: Student-t for means, percentile bootstrap for any statistic.

No scipy: the t quantiles come from a table (df 1..30, the usual four-digit values to six
places) and, above 30 degrees of freedom, from the Cornish-Fisher expansion around the normal
quantile (error below 1e-4 there).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from evaluation._errors import EvaluationError

# t_{0.975, df} for df = 1..30.
_T975 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
    2.262157, 2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
    2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
    2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
)  # fmt: skip
_Z975 = 1.959963984540054


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom."""
    if df < 1:
        raise EvaluationError("a t interval needs at least two values")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    g1 = (z**3 + z) / 4.0
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96.0
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384.0
    return z + g1 / df + g2 / df**2 + g3 / df**3


@dataclass(frozen=True)
class Interval:
    """A point estimate with its 95% interval over n values (lo = hi = mean when n = 1)."""

    mean: float
    lo: float
    hi: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2.0

    def contains(self, value: float) -> bool:
        return self.lo <= value <= self.hi


def t_interval(values: Sequence[float]) -> Interval:
    """Mean ± t_{0.975, n−1}·s/√n; a single value gets a zero-width interval."""
    xs = [float(v) for v in values]
    if not xs:
        raise EvaluationError("an interval needs at least one value")
    if any(not math.isfinite(x) for x in xs):
        raise EvaluationError("interval values must be finite")
    mean = math.fsum(xs) / len(xs)
    if len(xs) == 1:
        return Interval(mean, mean, mean, 1)
    half = t_quantile_975(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return Interval(mean, mean - half, mean + half, len(xs))


def bootstrap_interval(
    values: Sequence[float],
    statistic: Callable[[np.ndarray], float] = lambda a: float(np.median(a)),
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap (2.5%, 97.5%) of `statistic`, seeded so reports are reproducible."""
    xs = np.asarray([float(v) for v in values], dtype=float)
    if xs.size == 0:
        raise EvaluationError("an interval needs at least one value")
    point = statistic(xs)
    if xs.size == 1:
        return Interval(point, point, point, 1)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, xs.size, size=(resamples, xs.size))
    stats = np.array([statistic(xs[row]) for row in draws])
    lo, hi = np.quantile(stats, [0.025, 0.975])
    return Interval(point, float(min(lo, point)), float(max(hi, point)), int(xs.size))
