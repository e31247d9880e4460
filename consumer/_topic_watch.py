"""Whether the kill-event topic still exists, asked of the broker every few seconds.

A topic deleted under a running group member is silent: librdkafka reports no consume error and
revokes nothing until its next full metadata refresh (`topic.metadata.refresh.interval.ms`, 5
minutes); tested with 90 s of silence (tests/consumer/test_kafka_refusals.py). One metadata
request for the one topic every CHECK_EVERY_S finds it, and reports the `kill_events` path
degraded (`topic_missing`) through consumer/_degraded.py, and back once the broker lists it again
(created anew it is empty: the offsets Redis stored lie past its end, and consumer/_log_range.py
holds the partitions).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from confluent_kafka import KafkaError, KafkaException

from consumer._degraded import KILL_EVENTS
from consumer._kafka_faults import Cause, classify
from consumer._metrics import Metrics

if TYPE_CHECKING:
    from consumer._ports import KillLog

CHECK_EVERY_S: Final = 5.0
_TIMEOUT_S: Final = 1.0
_MISSING: Final = frozenset((KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC))
log = logging.getLogger("adr.consumer")


class TopicWatch:
    """Asks the broker about `topic` at most every CHECK_EVERY_S (`check`)."""

    def __init__(self, topic: str, metrics: Metrics) -> None:
        self._topic = topic
        self._metrics = metrics
        self._next = 0.0

    def check(self, consumer: KillLog, now: float) -> None:
        """If due: report the topic missing when the broker says so (a failed request says
        nothing: the other paths report a broker that does not answer)."""
        if now < self._next:
            return
        self._next = now + CHECK_EVERY_S
        try:
            md = consumer.list_topics(self._topic, timeout=_TIMEOUT_S)
        except KafkaException as exc:
            self._metrics.swallowed.labels("kafka_metadata").inc()
            log.debug("kill-event topic metadata", extra={"error": str(exc)})
            return
        found = md.topics.get(self._topic)
        error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART) if found is None else found.error
        degraded = self._metrics.degraded
        if error is not None and error.code() in _MISSING:
            degraded.failed(KILL_EVENTS, self._topic, classify(error))
        elif error is None and degraded.cause(KILL_EVENTS, self._topic) == Cause.TOPIC_MISSING:
            degraded.recovered(KILL_EVENTS, self._topic)  # there again (maybe empty: held)
