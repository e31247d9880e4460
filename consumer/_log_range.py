"""Stored offsets checked against the partition's log: a partition whose stored offset lies
outside it is held (paused), not read from wherever Kafka would reset it to.

Redis's next offset for a partition must lie between the log start and the log end. Before the
start (retention or delete-records removed events never applied) or past the end (the topic was
deleted and recreated, an unclean leader election truncated the log, an offset reset) the events
in between are not in the log as they were: reading on would skip them, or rate other events on
top of a state they never built, without a word. The partition is held instead, with an error
log line, `adr_partition_held{partition}` = 1 (alert AdrPartitionHeld) and `/readyz` 503
(`offsets=0 held=<partitions>`) until the stored offset
lies inside the log again: what to do is in docs/operations.md, "AdrPartitionHeld".
"""

from __future__ import annotations

import logging
import time
from typing import Final

from confluent_kafka import KafkaException, TopicPartition

from consumer._health import Status
from consumer._metrics import Metrics
from consumer._ports import KillLog

log = logging.getLogger("adr.consumer")

_WATERMARK_TIMEOUT_S: Final = 5.0


class LogRange:
    """The partitions held because their stored offset is outside the log (or unchecked)."""

    def __init__(self, topic: str, metrics: Metrics, recheck_s: float) -> None:
        self._topic = topic
        self._metrics = metrics
        self._recheck_s = recheck_s
        self._next_check = 0.0
        self.held: dict[int, str] = {}
        """partition -> why it is held."""
        self.status = Status(True)
        """Readiness part `offsets` (consumer/_health.py): down while a partition is held; the
        detail names them (`held=<partition>,...`)."""

    def outside(self, consumer: KillLog, partition: int, stored: int | None) -> str | None:
        """Why `stored` cannot be read from (None: it can).

        Nothing stored is a first run, read from the log start, unless the log no longer starts
        at 0 and the group has committed an offset for the partition: then Redis lost its state
        (the group's offsets follow Redis's) and the events before the log start are gone.
        """
        tp = TopicPartition(self._topic, partition)
        try:
            low, high = consumer.get_watermark_offsets(
                tp, timeout=_WATERMARK_TIMEOUT_S, cached=False
            )
            if stored is None:
                if low <= 0:
                    return None
                (committed,) = consumer.committed([tp], timeout=_WATERMARK_TIMEOUT_S)
                if committed.offset < 0:
                    return None
        except KafkaException as exc:
            return f"the log's range is unknown ({exc})"
        if stored is None:
            return (
                f"no offset stored in Redis, but the group committed {committed.offset} and the "
                f"log starts at {low}: Redis lost its state, and offsets 0..{low - 1} are gone"
            )
        if stored < low:
            return (
                f"stored next offset {stored} is before the log start {low}: "
                f"offsets {stored}..{low - 1} were deleted before they were applied"
            )
        if stored > high:
            return (
                f"stored next offset {stored} is past the log end {high}: the log was recreated "
                "or truncated since the state was written"
            )
        return None

    def hold(self, consumer: KillLog, partition: int, why: str) -> None:
        """Stop fetching the partition and say why (once per reason)."""
        consumer.pause([TopicPartition(self._topic, partition)])
        if self.held.get(partition) != why:
            log.error(
                "partition held: its stored offset is outside the log",
                extra={"topic": self._topic, "partition": partition, "why": why},
            )
        self.held[partition] = why
        self._metrics.partition_held.labels(str(partition)).set(1)
        self._publish()

    def forget(self, partition: int) -> None:
        """The partition left this instance (revoked) or is read again."""
        if self.held.pop(partition, None) is not None:
            self._metrics.partition_held.labels(str(partition)).set(0)
            self._publish()

    def due(self) -> bool:
        """Whether the held partitions should be checked again now."""
        now = time.monotonic()
        if not self.held or now < self._next_check:
            return False
        self._next_check = now + self._recheck_s
        return True

    def _publish(self) -> None:
        """/readyz: `offsets=0 held=<partition>,...` while any partition is held."""
        self.status = Status(not self.held, ",".join(str(p) for p in sorted(self.held)) or None)
