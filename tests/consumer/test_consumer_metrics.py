"""observe_many: a batch of observations in one update per bucket, as `observe` one by one;
observe_ages: event times observed as their ages, as observe_many does."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram

from consumer._metrics import _LATENCY_BUCKETS, observe_ages, observe_many


def _samples(histogram: Histogram) -> dict[tuple[str, str], float]:
    [metric] = histogram.collect()
    return {
        (s.name, s.labels.get("le", "")): s.value for s in metric.samples if "created" not in s.name
    }


def _assert_same_counts(expected_histogram: Histogram, histogram: Histogram) -> None:
    """The same bucket counts and count; the sum up to float rounding."""
    expected, got = _samples(expected_histogram), _samples(histogram)
    assert expected.keys() == got.keys()
    for key, value in expected.items():
        if key[0] == "h_sum":
            assert math.isclose(got[key], value, rel_tol=1e-12, abs_tol=1e-9)
        else:
            assert got[key] == value, key


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
    _assert_same_counts(one_by_one, bulk)


def test_observe_many_of_nothing_changes_nothing() -> None:
    one_by_one, bulk = _pair()
    observe_many(bulk, [])
    assert _samples(bulk) == _samples(one_by_one)


_NOW_MS = 1_764_900_000_000
times = st.lists(
    st.one_of(
        st.integers(min_value=_NOW_MS - 200_000, max_value=_NOW_MS + 5_000),  # future: age 0
        # on a bound and 1 ms either side of it
        st.tuples(st.sampled_from(_LATENCY_BUCKETS), st.integers(-1, 1)).map(
            lambda b: _NOW_MS - round(b[0] * 1000) + b[1]
        ),
    ),
    max_size=300,
)


@given(st.lists(times, max_size=4))
def test_observe_ages_counts_as_observe_many_of_the_ages(batches: list[list[int]]) -> None:
    by_amounts, by_times = _pair()
    for batch in batches:
        observe_many(by_amounts, [max(0, _NOW_MS - t) / 1000 for t in batch])
        observe_ages(by_times, _NOW_MS, batch)
    _assert_same_counts(by_amounts, by_times)


def test_observe_ages_of_nothing_changes_nothing() -> None:
    one_by_one, bulk = _pair()
    observe_ages(bulk, _NOW_MS, [])
    assert _samples(bulk) == _samples(one_by_one)


class _Part:
    """A part reporting its readiness, as Blocked, LogRange, RedisRetry ... do."""

    def __init__(self, up: bool, detail: str | None = None) -> None:
        from consumer._health import Status

        self.status = Status(up, detail)


def test_readiness_is_one_health_object_read_from_its_parts() -> None:
    from consumer._health import Health, Status
    from consumer._metrics import Metrics

    health = Health()
    assert not health.ready()  # no part wired: not known, so not ready
    assert health.report() == (
        False,
        "assigned=0 redis=0 broker=0 consume=0 dead_letters=0 offsets=0",
    )
    parts = {p: _Part(True) for p in Health.PARTS}
    health.watch(**parts)
    assert health.ready()
    parts["dead_letters"].status = Status(False, "3@1234:topic_missing")
    parts["offsets"].status = Status(False, "2")
    parts["consume"].status = Status(True, "rating_changes:ratings:not_authorized")
    assert health.report() == (
        False,
        "assigned=1 redis=1 broker=1 consume=1 dead_letters=0 offsets=0"
        " degraded=rating_changes:ratings:not_authorized stopped=3@1234:topic_missing held=2",
    )
    assert health.detail("stopped") == "3@1234:topic_missing" and not health.up("offsets")
    parts["dead_letters"].status = Status(True)
    parts["offsets"].status = Status(True)
    parts["consume"].status = Status(True)
    assert health.report() == (
        True,
        "assigned=1 redis=1 broker=1 consume=1 dead_letters=1 offsets=1",
    )
    with pytest.raises(KeyError):
        health.watch(**{"no such part": _Part(True)})
    with pytest.raises(KeyError):
        health.detail("no such detail")
    fresh = Metrics()
    assert not fresh.ready()  # a fresh consumer is not ready
    assert fresh.health.up("consume")  # its Degraded paths are wired: none degraded yet


def test_no_consumer_module_writes_readiness() -> None:
    """Readiness has one owner: Health reads it from its parts (their `status`); the only
    wiring is the pipeline's (and Metrics' own Degraded). No module sets or notes into it."""
    import pathlib
    import re

    import consumer

    root = pathlib.Path(consumer.__file__).parent
    wiring: list[str] = []
    for path in sorted(root.glob("*.py")):
        text = path.read_text()
        assert not re.search(r"health\.(set|note)\(", text), path.name
        if re.search(r"health\.watch\(", text):
            wiring.append(path.name)
    assert wiring == ["_metrics.py", "pipeline.py"]
