"""The interval code: exact t quantiles, and properties every 95% interval must have."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation._errors import EvaluationError
from evaluation._intervals import bootstrap_interval, t_interval, t_quantile_975

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.706205), (2, 4.302653), (9, 2.262157), (30, 2.042272), (40, 2.021075),
     (60, 2.000298), (120, 1.979930), (1000, 1.962339)],
)  # fmt: skip
def test_t_quantiles_match_published_tables(df: int, expected: float) -> None:
    assert t_quantile_975(df) == pytest.approx(expected, abs=2e-4)


def test_t_interval_by_hand() -> None:
    # mean 2, s = 1 (values 1, 2, 3), half width t_{2}·1/√3
    iv = t_interval([1.0, 2.0, 3.0])
    assert iv.mean == 2.0
    assert iv.half_width == pytest.approx(4.302653 / math.sqrt(3))
    assert iv.n == 3


def test_degenerate_and_bad_input() -> None:
    one = t_interval([5.0])
    assert (one.lo, one.mean, one.hi) == (5.0, 5.0, 5.0)
    with pytest.raises(EvaluationError):
        t_interval([])
    with pytest.raises(EvaluationError):
        t_interval([1.0, math.nan])
    with pytest.raises(EvaluationError):
        t_quantile_975(0)


@given(st.lists(finite, min_size=2, max_size=30))
def test_t_interval_contains_the_mean_and_is_symmetric(xs: list[float]) -> None:
    iv = t_interval(xs)
    assert iv.lo <= iv.mean <= iv.hi
    assert iv.mean - iv.lo == pytest.approx(iv.hi - iv.mean, rel=1e-9, abs=1e-6)


@given(st.lists(finite, min_size=2, max_size=20), finite, st.floats(0.1, 100.0))
def test_t_interval_moves_and_scales_with_the_data(xs: list[float], shift: float, k: float) -> None:
    a = t_interval(xs)
    b = t_interval([k * x + shift for x in xs])
    tol = 1e-6 * (1.0 + abs(shift) + k * max(abs(x) for x in xs))
    assert b.mean == pytest.approx(k * a.mean + shift, abs=tol)
    assert b.half_width == pytest.approx(k * a.half_width, abs=tol)


def test_t_interval_covers_the_true_mean_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(11)
    trials = 4000
    hits = sum(
        t_interval(rng.normal(3.0, 2.0, size=10).tolist()).contains(3.0) for _ in range(trials)
    )
    # binomial sd at p = 0.95 over 4000 trials is 0.0034: allow about 3 sd
    assert abs(hits / trials - 0.95) < 0.011


@given(st.lists(finite, min_size=1, max_size=15))
def test_bootstrap_contains_its_point_estimate(xs: list[float]) -> None:
    iv = bootstrap_interval(xs, resamples=200)
    assert iv.lo <= iv.mean <= iv.hi
    assert min(xs) <= iv.lo and iv.hi <= max(xs)  # the median of resamples stays in range


def test_bootstrap_is_seeded_and_constant_data_has_zero_width() -> None:
    data = [1.0, 4.0, 2.0, 8.0, 5.0, 7.0]
    assert bootstrap_interval(data) == bootstrap_interval(data)
    flat = bootstrap_interval([3.0] * 8)
    assert (flat.lo, flat.hi) == (3.0, 3.0)
