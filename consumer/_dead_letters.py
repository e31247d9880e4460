"""Dead letters that count only once the broker acknowledged them.

A rejected message is copied, bytes and headers untouched plus the reason headers, to the
dead-letter topic by a producer of its own, and the batch waits for every copy's delivery report.
A copy the broker did not take (the topic is missing and the broker does not create topics, the
consumer may not write to it, the copy is over the topic's `max.message.bytes`, the broker did
not answer within `dead_letter_timeout_ms`) is not delivered: `send` names, per partition, the
first message that must not be passed, and the pipeline stops that partition there
(consumer/_blocked.py) until a retry delivers it.

Why a copy was not taken is consumer/_kafka_faults.py's classification (the `reason` label of
`adr_dead_letters_undeliverable_total`); each refusal is also reported as the `dead_letters` path
degraded (consumer/_degraded.py) until a copy is acknowledged again. Acknowledged copies are
logged as one summary line per reason (counts and a sample: the event id where the event
decoded, else partition@offset; never the bytes).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Final, cast

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from consumer._degraded import DEAD_LETTERS
from consumer._kafka import KAFKA_LOG
from consumer._kafka_faults import CAUSES, Action, Cause, Fault, classify
from consumer._metrics import Metrics
from consumer.config import Config
from runtime.kafka_produce import produce_waiting

log = logging.getLogger("adr.consumer")

REASONS: Final = CAUSES
"""Why a dead letter was not delivered (the `reason` label of the metrics; bounded)."""
_MISSING: Final = frozenset((KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC))
_MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
"""The producer's own bound, above any topic's: the topic's `max.message.bytes` decides, and
raising it is the fix an operator can make."""
_METADATA_TIMEOUT_S: Final = 5.0
_WAIT_STEP_S: Final = 0.2
_LOG_WAIT_EVERY_S: Final = 10.0
_NO_TOPIC: Final = Fault(
    Cause.TOPIC_MISSING, Action.WAIT, "UNKNOWN_TOPIC_OR_PART", "the broker has no such topic"
)


@dataclasses.dataclass(frozen=True, slots=True)
class Stop:
    """Where a partition must stop: the first message whose dead letter was not delivered."""

    offset: int
    reason: str
    error: str


def new_dead_letter_producer(config: Config, on_error: Callable[[KafkaError], None]) -> Producer:
    ours: dict[str, object] = {"linger.ms": 5, "message.max.bytes": _MAX_MESSAGE_BYTES}
    guarded: dict[str, object] = {
        "bootstrap.servers": config.bootstrap_servers,
        "enable.idempotence": True,
        "acks": "all",
        # A report within this long, delivered or not: an undeliverable copy stops its
        # partition with a reason instead of holding every partition in an endless wait.
        "message.timeout.ms": config.dead_letter_timeout_ms,
    }
    settings = config.kafka.apply(ours, guarded)
    return Producer({**settings, "error_cb": on_error, "logger": KAFKA_LOG})


class DeadLetters:
    """The dead-letter topic of one consumer instance."""

    def __init__(
        self, config: Config, metrics: Metrics, on_error: Callable[[KafkaError], None]
    ) -> None:
        self._config = config
        self._topic = config.dlq_topic
        self._metrics = metrics
        self._on_error = on_error
        self._producer = new_dead_letter_producer(config, on_error)
        self._missing = False
        """The last try found the topic missing: check that first instead of waiting again."""
        self._event_ids: dict[tuple[int, int], str] = {}

    def renew(self) -> None:
        """A new producer (after a fatal client error)."""
        self.close(0)
        self._producer = new_dead_letter_producer(self._config, self._on_error)

    def close(self, timeout_s: float) -> None:
        try:
            self._producer.flush(timeout_s)
        except Exception as exc:
            log.warning("closing the dead-letter producer", extra={"error": str(exc)})

    def send(
        self,
        rejected: list[tuple[Message, str]],
        tick: Callable[[], None],
        event_ids: dict[tuple[int, int], str] | None = None,
    ) -> dict[int, Stop]:
        """Copy each rejected message to the dead-letter topic and wait for every report.

        Returns partition -> Stop for each partition with a copy the broker did not take (the
        first such message); the copies of all other messages were acknowledged. `tick` is
        called while waiting (the wait is bounded by `dead_letter_timeout_ms`). `event_ids`:
        (partition, offset) -> event id of the rejected events that decoded, for the log.
        """
        if not rejected:
            return {}
        self._event_ids = event_ids or {}
        if self._missing:
            self._missing = self._topic_missing()
            if self._missing:  # still: fail at once, do not wait for the timeout again
                return self._stops([(m, _NO_TOPIC) for m, _ in rejected])
        failed = self._deliver(rejected, tick)
        if len(failed) > 1 and any(f.cause is Cause.TOO_LARGE for _, f in failed):
            # The broker refuses a whole batch of copies for one that is too large: send the
            # refused ones one at a time, so that only a copy that is itself too large stops.
            refused = {id(m) for m, _ in failed}
            again = [(m, r) for m, r in rejected if id(m) in refused]
            failed = [f for item in again for f in self._deliver([item], tick)]
        if failed and any(f.cause is Cause.TIMED_OUT for _, f in failed):
            self._missing = self._topic_missing()
            if self._missing:
                failed = [(m, _NO_TOPIC) for m, _ in failed]
        return self._stops(failed)

    def _deliver(
        self, rejected: list[tuple[Message, str]], tick: Callable[[], None]
    ) -> list[tuple[Message, Fault]]:
        """Produce the copies and wait for their reports; returns (message, why) of each copy
        the broker did not take."""
        failed: list[tuple[Message, Fault]] = []
        pending = 0

        def report(m: Message, reason: str) -> Callable[[KafkaError | None, Message], None]:
            def delivered(err: KafkaError | None, _msg: Message) -> None:
                nonlocal pending
                pending -= 1
                if err is None:
                    self._metrics.dead_lettered.labels(reason).inc()
                    self._metrics.logs.dead_letters.add(1, self._sample(m), reason=reason)
                    self._metrics.degraded.recovered(DEAD_LETTERS, self._topic)
                else:
                    failed.append((m, classify(err)))

            return delivered

        for m, reason in rejected:
            original = cast("list[tuple[str, str | bytes | None]] | None", m.headers())
            headers = list(original or [])
            headers += (
                ("reason", reason.encode()),
                ("source_topic", (m.topic() or "").encode()),
                ("source_partition", str(m.partition()).encode()),
                ("source_offset", str(m.offset()).encode()),
            )
            try:
                produce_waiting(
                    self._producer,
                    self._topic,
                    m.value(),
                    m.key(),
                    headers=headers,
                    on_delivery=report(m, reason),
                    wait_s=_WAIT_STEP_S,
                )
                pending += 1
            except KafkaException as exc:  # refused before it was queued
                failed.append((m, classify(exc)))
        started = time.monotonic()
        while pending > 0:
            self._producer.poll(_WAIT_STEP_S)
            tick()
            if time.monotonic() - started > _LOG_WAIT_EVERY_S:
                started = time.monotonic()
                log.warning("dead letters not acknowledged yet", extra={"pending": pending})
        return failed

    def _topic_missing(self) -> bool:
        """Whether the broker says the dead-letter topic does not exist."""
        try:
            md = self._producer.list_topics(self._topic, timeout=_METADATA_TIMEOUT_S)
        except KafkaException:
            return False
        topic = md.topics.get(self._topic)
        return topic is None or (topic.error is not None and topic.error.code() in _MISSING)

    def _sample(self, m: Message) -> str:
        """The event id of `m` if it decoded, else where it is: never its bytes."""
        partition, offset = cast(int, m.partition()), cast(int, m.offset())
        known = self._event_ids.get((partition, offset))
        return known if known is not None else f"{m.topic()}/{partition}@{offset}"

    def _stops(self, failed: list[tuple[Message, Fault]]) -> dict[int, Stop]:
        stops: dict[int, Stop] = {}
        for m, fault in failed:
            reason = fault.cause.value
            self._metrics.dead_letters_undeliverable.labels(reason).inc()
            self._metrics.degraded.failed(DEAD_LETTERS, self._topic, fault, sample=self._sample(m))
            partition, offset = cast(int, m.partition()), cast(int, m.offset())
            stop = stops.get(partition)
            if stop is None or offset < stop.offset:
                stops[partition] = Stop(offset, reason, fault.error or fault.code)
        return stops


def _reason(err: KafkaError | None) -> str:
    """Why a copy was not delivered (consumer/_kafka_faults.py's cause)."""
    return classify(err).cause.value
