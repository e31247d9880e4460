"""The consumer's Kafka clients: the group member reading kill events, and the idempotent
producer for rating changes and dead letters."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from consumer._errors import FatalClientError
from consumer._health import Status
from consumer._metrics import Metrics
from consumer.config import Config
from runtime.logs import kafka_logger

KAFKA_LOG: Final = kafka_logger("adr.consumer.kafka")
"""librdkafka's own lines and the clients' error reports, as JSON too, repeats throttled."""
_MAX_FETCH_WAIT_MS: Final = 100
_MAX_POLL_INTERVAL_MS: Final = 300_000
_PRODUCER_LINGER_MS: Final = 5
_BROKER_UP: Final = Status(True)
_BROKER_DOWN: Final = Status(False)


def is_fatal(err: object) -> bool:
    """A client error after which the Kafka client is unusable and must be recreated."""
    return isinstance(err, KafkaError) and (err.fatal() or err.code() == KafkaError._FATAL)


class KafkaErrors:
    """The error callback of one pipeline's Kafka clients: each error is counted and logged
    (librdkafka retries on its own); a fatal one is kept, and `raise_if_fatal` (called by the
    stages after each client call) raises it as FatalClientError, which the pipeline handles."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self.fatal: KafkaError | None = None
        """The fatal error reported (None: none since the clients were made)."""
        self.status = _BROKER_DOWN
        """Readiness part `broker` (consumer/_health.py): down from the first report that the
        brokers are down or unreachable until the broker answers again (`answered`)."""

    def answered(self) -> None:
        """The broker answered (kill events read, partitions assigned): `broker` is up."""
        self.status = _BROKER_UP

    def raise_if_fatal(self, err: object = None) -> None:
        """FatalClientError if `err` (a client error or exception) or a reported error is fatal."""
        if isinstance(err, KafkaException) and err.args:
            err = err.args[0]
        if is_fatal(err):
            raise FatalClientError(err)
        if self.fatal is not None:
            raise FatalClientError(self.fatal)

    def __call__(self, err: KafkaError) -> None:
        if is_fatal(err):
            self.fatal = err
        if err.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT):
            self.status = _BROKER_DOWN
        self._metrics.swallowed.labels("kafka").inc()
        KAFKA_LOG.warning(
            "kafka client error (retrying)", extra={"error": str(err), "code": err.name()}
        )


def consumer_settings(config: Config, on_error: Callable[[KafkaError], None]) -> dict[str, object]:
    """The group member's librdkafka settings: ours, the operator's, then the guarded ones."""
    static = {"group.instance.id": config.group_instance_id} if config.group_instance_id else {}
    ours: dict[str, object] = {
        **_debug(config),
        "session.timeout.ms": config.session_timeout_ms,
        "enable.partition.eof": False,
        "fetch.wait.max.ms": max(1, min(config.batch_wait_ms, _MAX_FETCH_WAIT_MS)),
        "max.poll.interval.ms": _MAX_POLL_INTERVAL_MS,
    }
    guarded: dict[str, object] = {
        **static,
        "bootstrap.servers": config.bootstrap_servers,
        "group.id": config.group,
        "enable.auto.commit": False,  # Redis holds the offsets; Kafka's follow for dashboards
        # An offset outside the log is reported (the partition is held), never reset: a
        # first read starts at OFFSET_BEGINNING explicitly (consumer/_log_range.py).
        "auto.offset.reset": "error",
        "isolation.level": "read_committed",  # a transactional publisher's aborts never rated
    }
    settings = config.kafka.apply(ours, guarded)
    return {**settings, "error_cb": on_error, "logger": KAFKA_LOG}


def new_consumer(config: Config, on_error: Callable[[KafkaError], None]) -> Consumer:
    return Consumer(consumer_settings(config, on_error))


def producer_settings(config: Config, on_error: Callable[[KafkaError], None]) -> dict[str, object]:
    """The producer's librdkafka settings: ours, the operator's, then the guarded ones."""
    ours: dict[str, object] = {
        **_debug(config),
        "linger.ms": _PRODUCER_LINGER_MS,
        # The relay learns success from the queue draining (consumer/_relay.py): a report per
        # delivered message would only cost a Python call each; failures are still reported.
        "delivery.report.only.error": True,
    }
    guarded: dict[str, object] = {
        "bootstrap.servers": config.bootstrap_servers,
        "enable.idempotence": True,
        "acks": "all",
        "message.timeout.ms": 0,  # never give up: the outbox entry waits meanwhile
    }
    settings = config.kafka.apply(ours, guarded)
    return {**settings, "error_cb": on_error, "logger": KAFKA_LOG}


def new_producer(config: Config, on_error: Callable[[KafkaError], None]) -> Producer:
    return Producer(producer_settings(config, on_error))


def _debug(config: Config) -> dict[str, str]:
    """librdkafka's debug contexts, if asked for; its debug lines need the logger at DEBUG."""
    if not config.kafka_debug:
        return {}
    KAFKA_LOG.setLevel(logging.DEBUG)
    return {"debug": config.kafka_debug}
