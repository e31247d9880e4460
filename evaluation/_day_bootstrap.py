"""Intervals for one real log: a bootstrap over whole UTC days of the held-out part.

A studio's log is one realisation (one seed), so the §10 suite's t interval over seeds does not
apply. Kills on the same day share players, sessions and rating states, so single events are not
independent; whole days are resampled instead (a cluster, or block, bootstrap with the UTC day as
the block): each resample draws D days with replacement from the D held-out days, every
statistic is recomputed on the events of the days drawn (a day drawn twice counts twice), and the
95% interval is the 2.5% and 97.5% percentiles of the resampled values, widened if needed to
contain the point estimate. All models are measured on the same resamples, so differences between
two models get a paired interval. Dependence across days (a rating carries over) is not
resampled: the interval says how much the figures move with which days happened, for these
players, not how they would move on another game's log.

Every statistic here is a function of per-day sums, so a resample is a vector of day
multiplicities m (B × D for B resamples) and a statistic is a few matrix products: exact, and fast
enough for a year of days and thousands of resamples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation._errors import EvaluationError
from evaluation._intervals import Interval
from evaluation._metrics import LOG_LOSS_EPS

CALIBRATION_BINS = 10


def day_multiplicities(days: int, resamples: int, seed: int) -> np.ndarray:
    """B × D: how often each of D days is drawn in each of B resamples (each row sums to D)."""
    if days < 1 or resamples < 1:
        raise EvaluationError("the bootstrap needs at least one day and one resample")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, days, size=(resamples, days))
    out = np.zeros((resamples, days), dtype=float)
    rows = np.repeat(np.arange(resamples), days)
    np.add.at(out, (rows, draws.ravel()), 1.0)
    return out


def percentile_interval(point: float, values: np.ndarray) -> Interval:
    """The 2.5/97.5% percentiles of finite resampled values, widened to contain the point."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return Interval(point, point, point, 0)
    lo, hi = np.quantile(finite, [0.025, 0.975])
    return Interval(point, float(min(lo, point)), float(max(hi, point)), int(finite.size))


def per_day(values: np.ndarray, day: np.ndarray, days: int) -> np.ndarray:
    """Σ values per day index 0..days-1."""
    return np.bincount(day, weights=values, minlength=days).astype(float)


@dataclass(frozen=True)
class HeldOut:
    """The held-out predictions of one model: P(first kills second), outcome, day index."""

    p: np.ndarray
    y: np.ndarray
    day: np.ndarray
    days: int

    def log_losses(self) -> np.ndarray:
        pc = np.clip(self.p, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS)
        out: np.ndarray = -(self.y * np.log(pc) + (1.0 - self.y) * np.log(1.0 - pc))
        return out


def ratio(num: np.ndarray, den: np.ndarray, m: np.ndarray) -> tuple[float, np.ndarray]:
    """A ratio of per-day sums: the point Σnum/Σden and its B resampled values m@num / m@den."""
    total = float(den.sum())
    point = float(num.sum()) / total if total else float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        return point, (m @ num) / (m @ den)


def log_loss_draws(h: HeldOut, m: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean log loss: point and resampled values."""
    return ratio(
        per_day(h.log_losses(), h.day, h.days), per_day(np.ones_like(h.p), h.day, h.days), m
    )


def brier_draws(h: HeldOut, m: np.ndarray) -> tuple[float, np.ndarray]:
    sq = (h.p - h.y) ** 2
    return ratio(per_day(sq, h.day, h.days), per_day(np.ones_like(h.p), h.day, h.days), m)


def calibration_bin(p: np.ndarray, bins: int = CALIBRATION_BINS) -> np.ndarray:
    """Equal-width bin of each prediction over [0, 1] (the last bin includes 1), as _metrics."""
    out: np.ndarray = np.minimum((p * bins).astype(int), bins - 1)
    return out


def ece_draws(h: HeldOut, m: np.ndarray, bins: int = CALIBRATION_BINS) -> tuple[float, np.ndarray]:
    """Expected calibration error Σ_b |Σ_b (y − p)| / N over equal-width bins."""
    cell = h.day * bins + calibration_bin(h.p, bins)
    gap = np.bincount(cell, weights=h.y - h.p, minlength=h.days * bins).reshape(h.days, bins)
    count = np.bincount(h.day, minlength=h.days).astype(float)
    point = float(np.abs(gap.sum(axis=0)).sum() / count.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return point, np.abs(m @ gap).sum(axis=1) / (m @ count)


def auc_draws(h: HeldOut, m: np.ndarray) -> tuple[float, np.ndarray]:
    """AUC = P(p of a positive > p of a negative), ties ½, on the days drawn.

    C[d, e] counts the concordant (positive of day d, negative of day e) pairs, ties ½; a
    resample's AUC is mᵀCm / ((m·P)(m·N)) with P, N the positives and negatives per day."""
    pos = h.y == 1.0
    positives = np.bincount(h.day[pos], minlength=h.days).astype(float)
    negatives = np.bincount(h.day[~pos], minlength=h.days).astype(float)
    if positives.sum() == 0 or negatives.sum() == 0:
        raise EvaluationError("AUC needs both outcomes among the held-out events")
    pp, pd = h.p[pos], h.day[pos]
    concordant = np.zeros((h.days, h.days))
    for e in range(h.days):
        neg = np.sort(h.p[(~pos) & (h.day == e)])
        if neg.size == 0:
            continue
        below = np.searchsorted(neg, pp, side="left")
        ties = np.searchsorted(neg, pp, side="right") - below
        concordant[:, e] = np.bincount(pd, weights=below + 0.5 * ties, minlength=h.days)
    point = float(concordant.sum() / (positives.sum() * negatives.sum()))
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = np.einsum("bd,de,be->b", m, concordant, m) / ((m @ positives) * (m @ negatives))
    return point, draws
