"""Partitions stopped at a message whose dead letter the broker did not acknowledge.

Such a partition is paused with its stored offset at that message, so nothing after it is applied
and a restart or the next owner starts there too. After a backoff it is resumed from that message,
whose copy is then sent again; it stays stopped (with a longer backoff) until the broker takes the
copy. Meanwhile `/readyz` is 503 and names the partition, offset and reason, and
`adr_dead_letter_blocked_partitions{reason}` counts the stopped partitions (docs/operations.md,
"AdrDeadLetterUndeliverable").
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import cast

from confluent_kafka import KafkaException, Message, TopicPartition

from consumer._dead_letters import REASONS, Stop
from consumer._health import Status
from consumer._metrics import Metrics
from consumer._ports import KillLog

log = logging.getLogger("adr.consumer")


@dataclasses.dataclass(slots=True)
class _Block:
    stop: Stop
    delay_s: float
    retry_at: float
    resumed: bool = False
    """Fetching again from the stopped message, which has not come back yet."""
    passing: bool = False
    """The stopped message came back in the batch being processed: its copy is sent again."""


class Blocked:
    """The stopped partitions of one consumer instance."""

    def __init__(self, metrics: Metrics, topic: str, initial_s: float, max_s: float) -> None:
        self._metrics = metrics
        self._topic = topic
        self._initial_s = initial_s
        self._max_s = max_s
        self._blocks: dict[int, _Block] = {}
        self.status = Status(True)
        """Readiness part `dead_letters` (consumer/_health.py): down while a partition is
        stopped; the detail names each (`stopped=<partition>@<offset>:<reason>,...`)."""
        self._publish()

    def admit(self, messages: list[Message]) -> list[Message]:
        """`messages` without those a stopped partition must not pass (they come again)."""
        if not self._blocks:
            return messages
        out: list[Message] = []
        for m in messages:
            block = self._blocks.get(cast(int, m.partition()))
            offset = cast(int, m.offset())
            if block is None or block.passing or offset < block.stop.offset:
                out.append(m)
            elif block.resumed and offset == block.stop.offset:
                block.passing = True
                out.append(m)
        return out

    def stop(self, kafka: KillLog, stops: dict[int, Stop]) -> None:
        """Stop each partition at its Stop; then settle the partitions whose stopped message
        was delivered this time."""
        if not stops and not self._blocks:
            return
        now = time.monotonic()
        for partition, stop in stops.items():
            old = self._blocks.get(partition)
            again = old is not None and old.stop.offset == stop.offset
            delay = min(old.delay_s * 2, self._max_s) if again and old else self._initial_s
            self._blocks[partition] = _Block(stop, delay, now + delay)
            self._pause(kafka, partition)
            # The first stop at a message is an error line; each retry that fails again is a
            # debug line: the cause is summarized once per 30 s (consumer/_degraded.py).
            log.log(
                logging.DEBUG if again else logging.ERROR,
                "dead letter not delivered, partition stopped at it",
                extra={
                    "partition": partition,
                    "offset": stop.offset,
                    "reason": stop.reason,
                    "error": stop.error,
                    "retry_in_s": delay,
                },
            )
        for partition in [p for p, b in self._blocks.items() if b.passing]:
            del self._blocks[partition]
            log.info("dead letter delivered, partition resumed", extra={"partition": partition})
        self._publish()

    def retry_due(self, kafka: KillLog) -> None:
        """Resume the partitions whose backoff has passed, from their stopped message."""
        now = time.monotonic()
        for partition, block in self._blocks.items():
            if block.resumed or now < block.retry_at:
                continue
            tp = TopicPartition(self._topic, partition, block.stop.offset)
            try:
                kafka.resume([TopicPartition(self._topic, partition)])
                kafka.seek(tp)
            except KafkaException as exc:
                block.retry_at = now + block.delay_s
                log.warning("resuming a stopped partition", extra={"error": str(exc)})
                continue
            block.resumed = True
            log.debug(
                "retrying a stopped partition",
                extra={"partition": partition, "offset": block.stop.offset},
            )

    def forget(self, partitions: list[int] | None = None) -> None:
        """Drop the stops of revoked partitions (all: None); their next owner starts at the
        stored offset, which is the stopped message, and meets it again."""
        for partition in list(self._blocks) if partitions is None else partitions:
            self._blocks.pop(partition, None)
        self._publish()

    def _pause(self, kafka: KillLog, partition: int) -> None:
        try:
            kafka.pause([TopicPartition(self._topic, partition)])
        except KafkaException as exc:  # still held back by `admit`
            log.warning("pausing a stopped partition", extra={"error": str(exc)})

    def _publish(self) -> None:
        m = self._metrics
        for reason in REASONS:
            n = sum(1 for b in self._blocks.values() if b.stop.reason == reason)
            m.dead_letter_blocked.labels(reason).set(n)
        stopped = ",".join(
            f"{p}@{b.stop.offset}:{b.stop.reason}" for p, b in sorted(self._blocks.items())
        )
        self.status = Status(not self._blocks, stopped or None)
