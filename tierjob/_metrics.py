"""The tier job's Prometheus metrics (docs/design.md, "Metrics": tier job)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from engine import TIER_LABELS
from runtime.http import DISCONNECTS_HELP, serve_probes
from tierjob._calibration import CalibrationResult

_DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """One registry per process; `observe` records a calibration run."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.last_tick = time.monotonic()
        self.last_ok = True
        r = self.registry
        self.duration = Histogram(
            "adr_calibration_duration_seconds",
            "Duration of one calibration run that published",
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.last_success = Gauge(
            "adr_calibration_last_success_timestamp_seconds",
            "Wall-clock time of the last publication (seconds since the Unix epoch)",
            registry=r,
        )
        self.active = Gauge("adr_active_players", "|A| of the last published snapshot", registry=r)
        self.mean_mu = Gauge("adr_mean_mu_active", "μ̄_A of the last published snapshot", registry=r)
        self.boundary = Gauge(
            "adr_tier_boundary",
            "Boundary B_k of the last published snapshot (k = 1..14; absent before the first)",
            ["k"],
            registry=r,
        )
        self.tier_players = Gauge(
            "adr_tier_players",
            "Placed players per tier (the consumer's counts)",
            ["tier"],
            registry=r,
        )
        self.lease_held = Gauge(
            "adr_calibration_lease_held",
            "1 while this replica holds the calibration lease",
            registry=r,
        )
        self.probe_disconnects = Counter("adr_probe_disconnects", DISCONNECTS_HELP, registry=r)
        self.runs = Counter(
            "adr_calibration_runs_total",
            "Calibration runs by outcome (published, not_holder, lease_lost, moved_on, error)",
            ["outcome"],
            registry=r,
        )
        self.errors = Counter(
            "adr_errors_swallowed_total",
            "Errors the tier job logged and survived, by where",
            ["where"],
            registry=r,
        )
        self.corrupt_state = Counter(
            "adr_corrupt_state",
            "Published snapshots that did not decode and were replaced (what=snapshot); players"
            " skipped for a missing or unreadable mu (what=player)",
            ["what"],
            registry=r,
        )

    def observe(self, result: CalibrationResult) -> None:
        self.runs.labels(result.outcome).inc()
        self.corrupt(result)
        self.lease_held.set(1 if result.lease_held else 0)
        if result.population is not None and result.population.corrupt:
            self.corrupt_state.labels("player").inc(result.population.corrupt)
        if result.outcome != "published" or result.snapshot is None:
            return
        snapshot = result.snapshot
        self.duration.observe(result.duration_s)
        self.last_success.set(result.now_ms / 1000)
        self.active.set(snapshot.active_count)
        self.mean_mu.set(snapshot.mean_mu_active)
        if snapshot.boundaries is not None:
            for k, b in enumerate(snapshot.boundaries, start=1):
                self.boundary.labels(str(k)).set(b)
        for label in TIER_LABELS:
            self.tier_players.labels(label).set(result.tier_counts.get(label, 0))
        if result.topic_error is not None:
            self.errors.labels("topic_publish").inc()

    def corrupt(self, result: CalibrationResult) -> None:
        if result.corrupt_snapshot is not None:
            self.corrupt_state.labels("snapshot").inc()

    def failed(self, where: str) -> None:
        """A run that raised: counted, and the lease is not known to be held."""
        self.runs.labels("error").inc()
        self.errors.labels(where).inc()
        self.lease_held.set(0)

    def tick(self, ok: bool | None = None) -> None:
        """The loop went round; `ok`: whether the run just finished reached Redis and Kafka."""
        self.last_tick = time.monotonic()
        if ok is not None:
            self.last_ok = ok

    def serve(self, port: int, host: str, stall_after_s: float) -> None:
        """/metrics, /healthz (the loop went round within `stall_after_s`) and /readyz (the
        last run reached Redis and the topic; a standby replica without the lease is ready)."""
        self.last_tick = time.monotonic()

        def healthy() -> bool:
            return time.monotonic() - self.last_tick < stall_after_s

        def ready() -> tuple[bool, str]:
            return self.last_ok, f"last_run_ok={int(self.last_ok)}"

        serve_probes(self.registry, host, port, healthy, ready, self.probe_disconnects.inc)
