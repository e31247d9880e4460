"""The consumer's Kafka clients: the group member reading kill events, and the idempotent
producer for rating changes and dead letters."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

from confluent_kafka import Consumer, KafkaError, Producer

from consumer.config import Config

KAFKA_LOG: Final = logging.getLogger("adr.consumer.kafka")
"""librdkafka's own lines and the clients' error reports, as JSON too, repeats throttled."""
REPEAT_INTERVAL_S: Final = 10.0
_MAX_FETCH_WAIT_MS: Final = 100
_MAX_POLL_INTERVAL_MS: Final = 300_000
_PRODUCER_LINGER_MS: Final = 5


def is_fatal(err: object) -> bool:
    """A client error after which the Kafka client is unusable and must be recreated."""
    return isinstance(err, KafkaError) and (err.fatal() or err.code() == KafkaError._FATAL)


def new_consumer(config: Config, on_error: Callable[[KafkaError], None]) -> Consumer:
    static = {"group.instance.id": config.group_instance_id} if config.group_instance_id else {}
    return Consumer(
        {
            **static,
            **_debug(config),
            "bootstrap.servers": config.bootstrap_servers,
            "group.id": config.group,
            "session.timeout.ms": config.session_timeout_ms,
            "enable.auto.commit": False,  # Redis holds the offsets; Kafka's follow for dashboards
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "error_cb": on_error,
            "logger": KAFKA_LOG,
            "fetch.wait.max.ms": max(1, min(config.batch_wait_ms, _MAX_FETCH_WAIT_MS)),
            "max.poll.interval.ms": _MAX_POLL_INTERVAL_MS,
        }
    )


def new_producer(config: Config, on_error: Callable[[KafkaError], None]) -> Producer:
    return Producer(
        {
            "bootstrap.servers": config.bootstrap_servers,
            **_debug(config),
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": _PRODUCER_LINGER_MS,
            "message.timeout.ms": 0,  # never give up: the outbox entry waits meanwhile
            "error_cb": on_error,
            "logger": KAFKA_LOG,
        }
    )


def _debug(config: Config) -> dict[str, str]:
    """librdkafka's debug contexts, if asked for; its debug lines need the logger at DEBUG."""
    if not config.kafka_debug:
        return {}
    KAFKA_LOG.setLevel(logging.DEBUG)
    return {"debug": config.kafka_debug}


class RepeatThrottle(logging.Filter):
    """Passes the first line of a kind, then at most one per `interval_s`, carrying how many of
    that kind it held back (`repeated`). Debug lines, asked for explicitly, always pass.

    While a broker is down librdkafka retries its connection every few tens of milliseconds and
    reports each failure twice (a log line and an error callback): unthrottled, that is about
    40 lines a second for as long as the outage lasts. A kind is the line's level and template
    with its first two arguments (librdkafka's facility and client name) and its `code`, if any.
    """

    def __init__(
        self, interval_s: float = REPEAT_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._clock = clock
        self._kinds: dict[tuple[object, ...], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno <= logging.DEBUG:
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        kind = (record.levelno, record.msg, *args[:2], getattr(record, "code", None))
        now = self._clock()
        last, held = self._kinds.get(kind, (float("-inf"), 0))
        if now - last < self._interval_s:
            self._kinds[kind] = (last, held + 1)
            return False
        self._kinds[kind] = (now, 0)
        if held:
            record.repeated = held
        return True


KAFKA_LOG.addFilter(RepeatThrottle())
