"""Step 2 of a batch's life (consumer/_lifecycle.py): from the kill log's messages to a `Batch`.

Transport errors are dropped (counted; a position outside the log holds its partition,
consumer/_log_range.py; a fatal client error raises), the records decoded and checked
(consumer/_decoding.py), and the rejected ones copied to the dead-letter topic before anything
is applied. A partition whose copy the broker did not acknowledge stops at that message
(consumer/_blocked.py): nothing at or after it is applied, so its stored offset stays there. The
rating step's rejected events (Plan.rejected) are dead-lettered the same way (`dead_letter`).
"""

from __future__ import annotations

import logging
import time
from typing import cast

from confluent_kafka import KafkaError, Message

from consumer._clients import Clients
from consumer._dead_letters import Stop
from consumer._decoding import Accepted, Batch, decode_messages, next_offsets
from consumer._degraded import KILL_EVENTS
from consumer._kafka_faults import classify
from consumer._metrics import Metrics
from consumer._partitions import Partitions
from consumer._stages import DECODE, NO_STAGES, StageTimer
from consumer.config import Config
from redis_layout import Keys
from schemas import Limits

log = logging.getLogger("adr.consumer")


class Intake:
    """Step 2 with what it needs: the clients (the kill log, the dead-letter sink), the
    partitions (stops, held ones) and the decoder's limits."""

    def __init__(
        self,
        config: Config,
        clients: Clients,
        metrics: Metrics,
        partitions: Partitions,
        stages: StageTimer = NO_STAGES,
    ) -> None:
        self._topic, self._keys = config.topic, Keys(config.namespace)
        self._clients, self._metrics, self._stages = clients, metrics, stages
        self._partitions = partitions
        self._limits = Limits(max_age_ms=config.max_age_ms, max_future_ms=config.max_future_ms)

    def take(self, messages: list[Message]) -> Batch | None:
        """The batch's kill events and next offsets (None: nothing to apply).

        Rejected messages are copied to the dead-letter topic first; a partition with a copy the
        broker did not acknowledge stops at that message (consumer/_blocked.py): nothing at or
        after it is applied, so its stored offset stays there."""
        started = time.perf_counter()
        good = self._keep_data(messages)
        if not good:
            return None
        self._stages.start()
        accepted, rejected = self._decode(good)
        self._stages.stop(DECODE)
        stops = self.dead_letter(rejected)
        if stops:  # nothing at or after a stop is applied: the partition stays there
            good = [m for m in good if not _stopped(stops, m.partition(), m.offset())]
            accepted = [a for a in accepted if not _stopped(stops, a.partition, a.offset)]
            if not good:
                return None
        return Batch(accepted, next_offsets(good), len(good), started, self._keys)

    def _keep_data(self, messages: list[Message]) -> list[Message]:
        """Drop (and count) transport errors; what remains are records of our partitions."""
        good: list[Message] = []
        log_range = self._partitions.log_range
        for m in self._partitions.blocked.admit(messages):
            err = m.error()
            if err is None:
                good.append(m)
                continue
            self._clients.errors.raise_if_fatal(err)  # the batch is not applied
            if err.code() == KafkaError._AUTO_OFFSET_RESET:
                partition = m.partition()
                if partition is not None and partition not in log_range.held:
                    # the position fell outside the log while reading (retention, truncation)
                    log_range.hold(self._clients.kafka, partition, str(err))
            else:  # one summary line per cause, the metric, /readyz (consumer/_degraded.py)
                self._metrics.degraded.failed(
                    KILL_EVENTS, self._topic, classify(err), sample=_where(m)
                )
            self._metrics.swallowed.labels("kafka_consume").inc()
        if good:
            self._clients.errors.answered()
            self._metrics.degraded.recovered(KILL_EVENTS, self._topic)
        return good

    def _decode(self, messages: list[Message]) -> tuple[list[Accepted], list[tuple[Message, str]]]:
        """Typed kill events, and the messages that are not (with their reason)."""
        decoded = decode_messages(messages, time.time_ns() // 1_000_000, self._limits)
        for m, error in decoded.failures:
            self._metrics.swallowed.labels("decode").inc()
            log.error("decoder raised", extra={"error": error, "offset": m.offset()})
        return decoded.accepted, decoded.rejected

    def dead_letter(
        self,
        rejected: list[tuple[Message, str]],
        event_ids: dict[tuple[int, int], str] | None = None,
    ) -> dict[int, Stop]:
        """Copy `rejected` to the dead-letter topic; the partitions whose copy the broker did not
        take are stopped there (consumer/_blocked.py), and their stops returned. `event_ids`:
        (partition, offset) -> id of the rejected events that decoded (the summary's sample)."""
        stops = self._clients.dead_letters.send(rejected, self._metrics.tick, event_ids)
        self._partitions.blocked.stop(self._clients.kafka, stops)
        return stops


def _where(m: Message) -> str:
    """topic/partition@offset of a consume error, "" for one of no partition (the group's)."""
    if m.topic() is None or m.partition() is None:
        return ""
    return f"{m.topic()}/{m.partition()}@{m.offset()}"


def _stopped(stops: dict[int, Stop], partition: int | None, offset: int | None) -> bool:
    """Whether a message is at or after its partition's stop."""
    stop = stops.get(cast(int, partition))
    return stop is not None and cast(int, offset) >= stop.offset
