"""The checker behind the alert/dashboard tests catches what it must (names, suffixes, labels)."""

from __future__ import annotations

import pytest

from tests.deploy._metrics import defined_in_source, problems, promql_refs

SOURCE = """
from prometheus_client import Counter, Gauge, Histogram
import prometheus_client as pc

LAG = "adr_consumer_lag"
consumed = Counter("adr_events_consumed_total", "read")
dead = Counter("adr_events_dead_lettered", "dlq", ["reason"])
lag = Gauge(LAG, "lag", labelnames=("partition",))
batch = pc.Histogram("batch_duration_seconds", "t", namespace="adr")
"""


@pytest.fixture
def defs():  # type: ignore[no-untyped-def]
    return defined_in_source(SOURCE, "example.py")


def test_counter_suffix_and_histogram_series_are_derived(defs) -> None:  # type: ignore[no-untyped-def]
    names = set(defs.by_exposed_name())
    assert {"adr_events_consumed_total", "adr_events_dead_lettered_total"} <= names
    assert {"adr_batch_duration_seconds_bucket", "adr_batch_duration_seconds_count"} <= names
    assert "adr_consumer_lag" in names
    assert "adr_events_consumed_total_total" not in names


@pytest.mark.parametrize(
    "expr",
    [
        "sum(rate(adr_events_consumed_total[5m]))",
        "sum by (reason) (rate(adr_events_dead_lettered_total[$__rate_interval]))",
        "histogram_quantile(0.99, sum by (le) (rate(adr_batch_duration_seconds_bucket[5m])))",
        "deriv(sum(adr_consumer_lag)[10m:1m]) > 0",
        "max by (partition, instance) (adr_consumer_lag)",
    ],
)
def test_good_queries_pass(defs, expr: str) -> None:  # type: ignore[no-untyped-def]
    assert problems(expr, defs) == []


@pytest.mark.parametrize(
    "expr",
    [
        "rate(adr_events_consumed[5m])",  # counter without _total
        "adr_consumer_lag_bucket",  # a gauge has no buckets
        "sum(rate(adr_events_counted_total[5m]))",  # not defined at all
        "sum by (partition) (rate(adr_events_dead_lettered_total[5m]))",  # wrong label
        "absent(adr_nope) or time() - max(adr_consumer_lag) > 1",
    ],
)
def test_bad_queries_are_caught(defs, expr: str) -> None:  # type: ignore[no-untyped-def]
    assert problems(expr, defs) != []


def test_a_name_that_is_not_a_literal_is_reported() -> None:
    defs = defined_in_source(
        "from prometheus_client import Gauge\ng = Gauge(make(), 'x')\n", "m.py"
    )
    assert defs.unresolved == ["m.py:2"]


def test_refs_walk_every_node_kind() -> None:
    expr = '-(a) + on(x) group_left b offset 5m * count_values("v", c) and topk(3, rate(d[5m:]))'
    assert promql_refs(expr).metrics == {"a", "b", "c", "d"}
