"""The broker asked about a topic where the Kafka client stays silent.

- `TopicWatch`: whether the kill-event topic still exists, every few seconds. A topic deleted
  under a running group member is silent: librdkafka reports no consume error and revokes nothing
  until its next full metadata refresh (`topic.metadata.refresh.interval.ms`, 5 minutes); tested
  with 90 s of silence (tests/consumer/test_kafka_refusals.py). One metadata request for the one
  topic every CHECK_EVERY_S finds it, and reports the `kill_events` path degraded
  (`topic_missing`) through consumer/_degraded.py, and back once the broker lists it again
  (created anew it is empty: the offsets Redis stored lie past its end, and
  consumer/_log_range.py holds the partitions).
- `StuckWatch`: why the relay's rating changes wait (consumer/_relay.py). With
  `message.timeout.ms` 0 librdkafka reports nothing while the rating topic is gone (it waits
  `topic.metadata.propagation.max.ms`, 30 s, before failing its messages) or while no broker or
  leader answers, so silence is the symptom: while the producer's queue has not drained for
  STUCK_S, the broker is asked about the topic every STUCK_S and the `rating_changes` path
  reported degraded with what it says.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Final

from confluent_kafka import KafkaError, KafkaException, Producer

from consumer._degraded import KILL_EVENTS, RATING_CHANGES
from consumer._kafka_faults import Cause, Fault, classify
from consumer._metrics import Metrics

if TYPE_CHECKING:
    from consumer._ports import KillLog

CHECK_EVERY_S: Final = 5.0
STUCK_S: Final = 5.0
"""Messages unconfirmed this long (the producer's queue never drained): ask the broker why."""
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


class StuckWatch:
    """Asks the broker why the relay's messages to `topic` wait (`check`, after each pump)."""

    def __init__(self, topic: str, metrics: Metrics) -> None:
        self._topic = topic
        self._metrics = metrics
        self._waiting_since: float | None = None  # the producer's queue has not drained since
        self._next_probe = 0.0

    def check(self, producer: Producer, waiting: bool) -> None:
        """`waiting`: the producer holds messages the broker has not confirmed. Once that has
        lasted STUCK_S, report what the broker says of the topic, every STUCK_S."""
        if not waiting:
            self._waiting_since = None
            return
        now = time.monotonic()
        if self._waiting_since is None:
            self._waiting_since = now
            self._next_probe = now + STUCK_S
        elif now >= self._next_probe:
            self._next_probe = now + STUCK_S
            waited_s = round(now - self._waiting_since, 1)
            fault = self._why(producer, waited_s)
            self._metrics.degraded.failed(RATING_CHANGES, self._topic, fault)

    def _why(self, producer: Producer, waited_s: float) -> Fault:
        """What the broker says of the rating topic while its messages wait."""
        topic = self._topic
        try:
            md = producer.list_topics(topic, timeout=_TIMEOUT_S)
        except KafkaException as exc:
            return classify(exc)  # no broker answers: broker_unavailable, timed_out
        found = md.topics.get(topic)
        if found is None or found.error is not None:
            missing = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
            return classify(found.error if found is not None else missing)
        if not found.partitions or any(p.leader < 0 for p in found.partitions.values()):
            return classify(KafkaError(KafkaError.LEADER_NOT_AVAILABLE))
        waiting = KafkaError(KafkaError._TIMED_OUT, f"no delivery confirmed for {waited_s} s")
        return classify(waiting)
