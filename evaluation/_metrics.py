"""Prediction and ranking metrics of §10.3, hand-written on numpy (no scipy/sklearn needed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluation._errors import EvaluationError

# Probabilities are clipped this far from 0 and 1 before the log: a system that predicts exactly
# 0 or 1 and is wrong scores log(1e-15) ≈ 34.5 nats for that event instead of infinity.
LOG_LOSS_EPS = 1e-15

Floats = Sequence[float] | np.ndarray
Ints = Sequence[int] | np.ndarray


def _arrays(p: Floats, y: Ints) -> tuple[np.ndarray, np.ndarray]:
    pa = np.asarray(p, dtype=float)
    ya = np.asarray(y, dtype=float)
    if pa.shape != ya.shape or pa.ndim != 1 or pa.size == 0:
        raise EvaluationError("predictions and outcomes must be equal-length, non-empty 1-D")
    return pa, ya


def log_loss(p: Floats, y: Ints) -> float:
    """Mean negative log-likelihood (nats) of outcomes y ∈ {0, 1} under predictions p."""
    pa, ya = _arrays(p, y)
    pc = np.clip(pa, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS)
    return float(-np.mean(ya * np.log(pc) + (1.0 - ya) * np.log(1.0 - pc)))


def brier(p: Floats, y: Ints) -> float:
    """Mean squared error of the predicted probabilities."""
    pa, ya = _arrays(p, y)
    return float(np.mean((pa - ya) ** 2))


def average_ranks(x: Floats) -> np.ndarray:
    """Ranks 1..n of x, ties sharing the mean of the ranks they span."""
    xa = np.asarray(x, dtype=float)
    order = np.argsort(xa, kind="mergesort")
    ranks = np.empty(xa.size, dtype=float)
    sorted_x = xa[order]
    i = 0
    n = xa.size
    while i < n:
        j = i
        while j + 1 < n and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def auc(p: Floats, y: Ints) -> float:
    """Area under the ROC curve: P(p of a random positive > p of a random negative), ties ½."""
    pa, ya = _arrays(p, y)
    positives = int(ya.sum())
    negatives = ya.size - positives
    if positives == 0 or negatives == 0:
        raise EvaluationError("AUC needs both outcomes among the events")
    ranks = average_ranks(pa)
    rank_sum = float(ranks[ya == 1.0].sum())
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def spearman(x: Floats, y: Floats) -> float:
    """Spearman's rank correlation (Pearson on average ranks); 0 when either side is constant."""
    rx, ry = average_ranks(x), average_ranks(y)
    if rx.size < 2:
        raise EvaluationError("rank correlation needs at least two players")
    dx, dy = rx - rx.mean(), ry - ry.mean()
    denom = float(np.sqrt((dx * dx).sum() * (dy * dy).sum()))
    return 0.0 if denom == 0.0 else float((dx * dy).sum() / denom)


@dataclass(frozen=True)
class CalibrationBin:
    """One bin of the reliability curve: predictions in [lo, hi)."""

    lo: float
    hi: float
    count: int
    mean_predicted: float
    observed: float


def calibration_curve(p: Floats, y: Ints, bins: int = 10) -> list[CalibrationBin]:
    """Equal-width reliability bins over [0, 1] (the last bin includes 1); empty bins omitted."""
    pa, ya = _arrays(p, y)
    index = np.minimum((pa * bins).astype(int), bins - 1)
    out = []
    for k in range(bins):
        mask = index == k
        count = int(mask.sum())
        if count:
            out.append(
                CalibrationBin(
                    k / bins,
                    (k + 1) / bins,
                    count,
                    float(pa[mask].mean()),
                    float(ya[mask].mean()),
                )
            )
    return out


def expected_calibration_error(curve: list[CalibrationBin]) -> float:
    """Count-weighted mean |observed − predicted| over the reliability bins."""
    total = sum(b.count for b in curve)
    return sum(b.count * abs(b.observed - b.mean_predicted) for b in curve) / total
