"""The consumer's Prometheus metrics (names per docs/design.md) and /metrics /healthz /readyz."""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Iterable
from http.server import ThreadingHTTPServer
from typing import Final

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
)

from consumer._degraded import Degraded
from consumer._health import Health
from consumer._log_summary import Summaries
from runtime.http import DISCONNECTS_HELP, serve_probes

_LATENCY_BUCKETS: Final = (
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0,
    30.0, 60.0,
)  # fmt: skip
_SIZE_BUCKETS: Final = (1, 10, 50, 100, 250, 500, 1000, 2000, 5000, 10000)
_STALL_AFTER_S: Final = 60.0
"""/healthz fails when the main loop has not ticked for this long."""


class Metrics:
    """One registry per consumer process (tests can run several side by side)."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.consumed = Counter("adr_events_consumed", "kill events read from Kafka", registry=r)
        self.counted = Counter("adr_events_counted", "kill events rated and applied", registry=r)
        self.duplicate = Counter(
            "adr_events_duplicate", "kill events dropped by the cooldown (§2.1)", registry=r
        )
        self.late = Counter(
            "adr_events_late",
            "kill events older than their partition's watermark minus the lateness, not rated",
            registry=r,
        )
        self.dead_lettered = Counter(
            "adr_events_dead_lettered",
            "kill events sent to the dead-letter topic",
            ["reason"],
            registry=r,
        )
        self.batch_size = Histogram(
            "adr_batch_size", "messages per batch", buckets=_SIZE_BUCKETS, registry=r
        )
        self.batch_duration = Histogram(
            "adr_batch_duration_seconds",
            "decode to atomic write, per batch",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.event_to_commit = Histogram(
            "adr_event_to_commit_seconds",
            "event time (ts) to the atomic Redis write that applied it",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.lag = Gauge("adr_consumer_lag", "high watermark - position", ["partition"], registry=r)
        self.redis_write = Histogram(
            "adr_redis_write_seconds",
            "one atomic batch write",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.conflicts = Counter(
            "adr_redis_conflict_retries",
            "batches recomputed because another instance changed a player, pair or offset",
            registry=r,
        )
        self.outbox_backlog = Gauge(
            "adr_outbox_backlog", "outbox entries (one per batch) not yet relayed", registry=r
        )
        self.pool_players = Gauge(
            "adr_pool_players",
            "tracked players of the rating pool (P) after the last batch",
            registry=r,
        )
        self.pool_max_players = Gauge(
            "adr_pool_max_players",
            "max_players: events that would add players beyond it are dead-lettered (pool_full)",
            registry=r,
        )
        self.rebalances = Counter("adr_rebalances", "partition assignments", registry=r)
        self.partition_held = Gauge(
            "adr_partition_held",
            "1 while the partition is not read: its stored offset lies outside the log",
            ["partition"],
            registry=r,
        )
        self.redis_rewinds = Counter(
            "adr_redis_rewinds",
            "times Redis held less than it had acknowledged and the partitions were re-read",
            registry=r,
        )
        self.epoch_raises = Counter(
            "adr_pool_epoch_raises",
            "raises of the pool epoch (rating changes carry it) before a lost range is re-applied",
            ["why"],
            registry=r,
        )
        self.swallowed = Counter(
            "adr_errors_swallowed", "errors handled by retrying or skipping", ["where"], registry=r
        )
        self.corrupt_state = Counter(
            "adr_corrupt_state",
            "reads of a Redis value that does not decode (each read counts): quarantined or "
            "waited on, never applied",
            ["what"],
            registry=r,
        )
        self.redis_refused = Counter(
            "adr_redis_refused",
            "Redis commands refused and retried (OOM, READONLY, BUSY, WRONGTYPE, ...)",
            ["code"],
            registry=r,
        )
        self.dead_letters_undeliverable = Counter(
            "adr_dead_letters_undeliverable",
            "dead letters the broker did not acknowledge (their partition stops there)",
            ["reason"],
            registry=r,
        )
        self.dead_letter_blocked = Gauge(
            "adr_dead_letter_blocked_partitions",
            "partitions stopped at a dead letter the broker did not acknowledge",
            ["reason"],
            registry=r,
        )
        self.produce_failures = Counter(
            "adr_produce_failures",
            "messages the broker or the producer refused, or failed to deliver, by topic and "
            "cause (consumer/_kafka_faults.py): rating changes and dead letters",
            ["topic", "cause"],
            registry=r,
        )
        self.consume_failures = Counter(
            "adr_consume_failures",
            "errors reading the kill-event topic or its group, by cause",
            ["topic", "cause"],
            registry=r,
        )
        self.kafka_degraded = Gauge(
            "adr_kafka_degraded",
            "1 while a Kafka path (kill_events, rating_changes, dead_letters) is degraded by the "
            "cause, 0 once it works again",
            ["path", "topic", "cause"],
            registry=r,
        )
        self.probe_disconnects = Counter("adr_probe_disconnects", DISCONNECTS_HELP, registry=r)
        self.last_tick = time.monotonic()
        self.health = Health()
        """Readiness (/readyz), read from the parts wired to it (consumer/_health.py)."""
        self.logs = Summaries()
        """Rate-limited summary lines (dead letters, late events, Kafka refusals)."""
        self.degraded = Degraded(self)
        """The degraded Kafka paths (consumer/_degraded.py)."""
        self.health.watch(consume=self.degraded)

    def tick(self) -> None:
        self.last_tick = time.monotonic()

    def healthy(self) -> bool:
        return time.monotonic() - self.last_tick < _STALL_AFTER_S

    def ready(self) -> bool:
        return self.health.ready()


def observe_many(histogram: Histogram, amounts: Iterable[float]) -> None:
    """`histogram.observe(a)` for every amount, as one update of each bucket and of the sum.

    The bucket counts are exactly those of one `observe` per amount (an amount counts in the
    first bucket whose bound is >= it) and the sum differs at most by float rounding (added once,
    not amount by amount); for the ~1,000 event times of a batch this is one lock and one `inc`
    per bucket instead of per event. It reads prometheus_client's Histogram internals
    (`_upper_bounds`, `_buckets`, `_sum`: the version is pinned in constraints.txt), so it takes
    only a histogram without labels; tests/consumer/test_consumer_metrics.py compares it with
    `observe`.
    """
    ordered = sorted(amounts)
    if not ordered:
        return
    below = 0
    for bound, bucket in zip(histogram._upper_bounds, histogram._buckets, strict=True):
        upto = bisect.bisect_right(ordered, bound)
        if upto > below:
            bucket.inc(upto - below)
            below = upto
    histogram._sum.inc(sum(ordered))


def observe_ages(histogram: Histogram, now_ms: int, times_ms: Iterable[int]) -> None:
    """`observe_many(histogram, [max(0, now_ms - t) / 1000 for t in times_ms])` (ages in
    seconds of event times in ms) without a Python step per time: the times are sorted (in C),
    and a bound's cumulative count is the number of times at or after `now_ms - d`, d being the
    largest whole age in ms with d / 1000 <= bound (d / 1000 grows with d, so the ages within
    the bound are exactly d or less; a time after `now_ms` is age 0). The bucket counts are
    exactly observe_many's; the sum is the exact integer sum of the ages over 1000 (observe_many
    adds floats: they differ by float rounding). ~0.3 µs per event less than the list of ages
    for the ~1,000 event times of a batch (docs/benchmarks.md, 2026-12-05)."""
    ordered = sorted(times_ms)
    if not ordered:
        return
    n = len(ordered)
    below = 0
    for bound, bucket in zip(histogram._upper_bounds, histogram._buckets, strict=True):
        most = _most_ms(bound)
        upto = n if most is None else n - bisect.bisect_left(ordered, now_ms - most)
        if upto > below:
            bucket.inc(upto - below)
            below = upto
    past = bisect.bisect_left(ordered, now_ms)  # the others' age is 0
    histogram._sum.inc((now_ms * past - sum(ordered[:past])) / 1000)


def _most_ms(bound: float) -> int | None:
    """The largest d >= 0 with d / 1000 <= bound; None for an infinite bound (every age),
    a negative number for a negative one (none)."""
    if math.isinf(bound):
        return None if bound > 0 else -(10**30)
    if bound < 0:
        return -(10**30)
    most = int(bound * 1000)
    while (most + 1) / 1000 <= bound:
        most += 1
    while most >= 0 and most / 1000 > bound:
        most -= 1
    return most


def serve(metrics: Metrics, host: str, port: int) -> ThreadingHTTPServer:
    """Start /metrics, /healthz, /readyz on a daemon thread; port 0 picks a free one."""

    return serve_probes(
        metrics.registry,
        host,
        port,
        metrics.healthy,
        metrics.health.report,
        metrics.probe_disconnects.inc,
    )
