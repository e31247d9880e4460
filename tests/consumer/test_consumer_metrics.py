"""observe_many: a batch of observations in one update per bucket, as `observe` one by one."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram

from consumer._metrics import _LATENCY_BUCKETS, observe_many


def _samples(histogram: Histogram) -> dict[tuple[str, str], float]:
    [metric] = histogram.collect()
    return {
        (s.name, s.labels.get("le", "")): s.value for s in metric.samples if "created" not in s.name
    }


def _pair() -> tuple[Histogram, Histogram]:
    return tuple(  # type: ignore[return-value]
        Histogram("h", "h", buckets=_LATENCY_BUCKETS, registry=CollectorRegistry())
        for _ in range(2)
    )


amounts = st.lists(
    st.one_of(
        st.floats(min_value=0, max_value=100, allow_nan=False),
        st.sampled_from(_LATENCY_BUCKETS),  # on a bound: counts in that bucket, not the next
        st.integers(min_value=0, max_value=120_000).map(lambda ms: ms / 1000),
    ),
    max_size=300,
)


@given(st.lists(amounts, max_size=4))
def test_observe_many_counts_as_observe_does(batches: list[list[float]]) -> None:
    one_by_one, bulk = _pair()
    for batch in batches:
        for amount in batch:
            one_by_one.observe(amount)
        observe_many(bulk, batch)
    expected, got = _samples(one_by_one), _samples(bulk)
    assert expected.keys() == got.keys()
    for key, value in expected.items():
        if key[0] == "h_sum":
            assert math.isclose(got[key], value, rel_tol=1e-12, abs_tol=1e-9)
        else:
            assert got[key] == value, key


def test_observe_many_of_nothing_changes_nothing() -> None:
    one_by_one, bulk = _pair()
    observe_many(bulk, [])
    assert _samples(bulk) == _samples(one_by_one)
