"""Which Kafka path of the consumer is degraded, and why: the metrics, the log and /readyz.

Three paths meet the broker: `kill_events` (the group member reading), `rating_changes` (the
outbox relay) and `dead_letters` (the copies of rejected events). A refusal classified by
consumer/_kafka_faults.py is reported here with the path and topic it hit:

- `adr_produce_failures_total{topic,cause}` / `adr_consume_failures_total{topic,cause}` count
  every refusal (a message, a batch of delivery reports, a consume error);
- `adr_kafka_degraded{path,topic,cause}` is 1 for the cause a path is degraded by now, 0 once it
  works again (what the AdrKafkaPathDegraded alert reads: it names the topic and the cause);
- one rate-limited log line per (path, topic, cause) (consumer/_log_summary.py);
- /readyz names it: `degraded=<path>:<topic>:<cause>`. A degraded `rating_changes` path keeps the
  instance ready (ratings and ranks go on; the changes wait in the outbox and are sent once the
  path is back): failing readiness would not bring the path back, and would take the one process
  that can send them out of rotation during a rollout. A degraded `kill_events` path makes it not
  ready (`consume=0`): it rates nothing. The `dead_letters` path is shown here; the partitions it
  stops make the instance not ready as before (`stopped=...`, consumer/_blocked.py).

A path is back when it works again: a settled outbox entry, an acknowledged dead letter, a kill
event read (or a partition assigned).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from consumer._health import Status
from consumer._kafka_faults import Fault

if TYPE_CHECKING:
    from consumer._metrics import Metrics

KILL_EVENTS: Final = "kill_events"
RATING_CHANGES: Final = "rating_changes"
DEAD_LETTERS: Final = "dead_letters"
PATHS: Final = (KILL_EVENTS, RATING_CHANGES, DEAD_LETTERS)
_NOT_READY_WHILE: Final = frozenset((KILL_EVENTS,))
log = logging.getLogger("adr.consumer")  # not .kafka: its RepeatThrottle holds lines back


class Degraded:
    """The degraded paths of one consumer instance, reported to its `metrics`."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._now: dict[tuple[str, str], Fault] = {}  # (path, topic) -> the fault it has now
        self.status = Status(True)
        """Readiness part `consume` (consumer/_health.py): down while the kill-event path is
        degraded; the detail names every degraded path (`degraded=...`)."""

    def failed(self, path: str, topic: str, fault: Fault, count: int = 1, sample: str = "") -> None:
        """`count` refusals of `fault` on `path` to or from `topic` (`sample`: an id or a
        partition@offset of one of them, never its bytes)."""
        m = self._metrics
        counter = m.consume_failures if path == KILL_EVENTS else m.produce_failures
        counter.labels(topic, fault.cause.value).inc(count)
        m.logs.kafka.add(
            count,
            sample or None,
            path=path,
            topic=topic,
            cause=fault.cause.value,
            code=fault.code,
            action=fault.action.value,
            error=fault.error,
        )
        before = self._now.get((path, topic))
        if before is not None and before.cause is fault.cause:
            return
        if before is not None:
            m.kafka_degraded.labels(path, topic, before.cause.value).set(0)
        self._now[(path, topic)] = fault
        m.kafka_degraded.labels(path, topic, fault.cause.value).set(1)
        self._show()

    def recovered(self, path: str, topic: str) -> None:
        """`path` to or from `topic` works again (a no-op unless it was degraded)."""
        fault = self._now.pop((path, topic), None)
        if fault is None:
            return
        self._metrics.kafka_degraded.labels(path, topic, fault.cause.value).set(0)
        log.info(
            "kafka path back",
            extra={"path": path, "topic": topic, "was": fault.cause.value},
        )
        self._show()

    def cause(self, path: str, topic: str) -> str | None:
        """The cause `path` is degraded by now (None: it works)."""
        fault = self._now.get((path, topic))
        return None if fault is None else fault.cause.value

    def _show(self) -> None:
        shown = sorted(f"{p}:{t}:{f.cause.value}" for (p, t), f in self._now.items())
        self.status = Status(
            not any(p in _NOT_READY_WHILE for p, _ in self._now),
            ",".join(shown) if shown else None,
        )
