"""Metric functions against values worked out by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation._errors import EvaluationError
from evaluation._metrics import (
    auc,
    average_ranks,
    brier,
    calibration_curve,
    expected_calibration_error,
    log_loss,
    spearman,
)


def test_log_loss_by_hand() -> None:
    # −(ln 0.8 + ln 0.6 + ln 0.9)/3 with outcomes 1, 0, 1 for p = 0.8, 0.4, 0.9
    expected = -(math.log(0.8) + math.log(0.6) + math.log(0.9)) / 3
    assert log_loss([0.8, 0.4, 0.9], [1, 0, 1]) == pytest.approx(expected)
    assert log_loss([0.5], [1]) == pytest.approx(math.log(2))
    assert log_loss([0.0], [1]) == pytest.approx(-math.log(1e-15))  # clipped, finite


def test_brier_by_hand() -> None:
    # ((0.2)² + (0.4)² + (0.1)²)/3 = 0.07
    assert brier([0.8, 0.4, 0.9], [1, 0, 1]) == pytest.approx(0.07)


def test_auc_by_hand() -> None:
    # positives 0.9, 0.4; negatives 0.6, 0.1: 0.9>0.6, 0.9>0.1, 0.4<0.6, 0.4>0.1 -> 3/4
    assert auc([0.9, 0.6, 0.4, 0.1], [1, 0, 1, 0]) == pytest.approx(0.75)
    assert auc([0.5, 0.5], [1, 0]) == pytest.approx(0.5)  # a tie counts half
    assert auc([0.7, 0.5, 0.5], [1, 1, 0]) == pytest.approx(0.75)  # (1 + ½)/2
    with pytest.raises(EvaluationError):
        auc([0.1, 0.2], [1, 1])


def test_average_ranks_ties() -> None:
    assert list(average_ranks([10, 20, 20, 5])) == [2.0, 3.5, 3.5, 1.0]


def test_spearman_by_hand() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # d = (0, 0, 1, −1): 1 − 6·2/(4·15) = 0.8
    assert spearman([1, 2, 3, 4], [1, 2, 4, 3]) == pytest.approx(0.8)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0


def test_calibration_curve_by_hand() -> None:
    curve = calibration_curve([0.05, 0.15, 0.12, 0.95, 1.0], [0, 1, 0, 1, 1], bins=10)
    assert [(b.lo, b.count) for b in curve] == [(0.0, 1), (0.1, 2), (0.9, 2)]
    assert curve[1].mean_predicted == pytest.approx(0.135)
    assert curve[1].observed == pytest.approx(0.5)
    assert curve[2].observed == 1.0
    # |0 − 0.05|·1 + |0.5 − 0.135|·2 + |1 − 0.975|·2, over 5
    assert expected_calibration_error(curve) == pytest.approx((0.05 + 0.73 + 0.05) / 5)


@given(
    st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 1)), min_size=2, max_size=40).filter(
        lambda rows: len({y for _, y in rows}) == 2
    )
)
def test_auc_is_the_pairwise_win_rate(rows: list[tuple[float, int]]) -> None:
    p = [r[0] for r in rows]
    y = [r[1] for r in rows]
    pos = [pi for pi, yi in rows if yi == 1]
    neg = [pi for pi, yi in rows if yi == 0]
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg)
    assert auc(p, y) == pytest.approx(wins / (len(pos) * len(neg)))
