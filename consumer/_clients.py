"""What a pipeline reads from and writes to, each behind its port (consumer/_ports.py): the kill
log, the pool store, the dead-letter sink, the outbox relay and its producer.

`Pipeline` receives them, so that its batch lifecycle (consumer/_lifecycle.py) can run on
in-memory adapters in unit tests (tests/consumer/test_lifecycle.py); `Clients.connect` makes the
real ones from the configuration (Kafka, Redis: `Store`, `DeadLetters`, `Relay`), which is what
`adr consume` runs.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from typing import Any, Protocol

from consumer._dead_letters import DeadLetters
from consumer._errors import CorruptState
from consumer._kafka import KafkaErrors, new_consumer, new_producer
from consumer._metrics import Metrics
from consumer._ports import DeadLetterSink, KillLog, Outbox, PoolStore, RatingProducer
from consumer._relay import Relay
from consumer._stages import NO_STAGES, StageTimer
from consumer._store import Store
from consumer.config import Config
from engine import Params, RatingModel
from redis_layout import Keys
from runtime import connect

log = logging.getLogger("adr.consumer")


class Closable(Protocol):
    def close(self) -> None: ...


@dataclasses.dataclass(slots=True)
class Clients:
    """The clients of one pipeline. `kafka` and `producer` are replaced after a fatal Kafka
    client error (`close_kafka`, then `renew_kafka`); the others live as long as the pipeline."""

    errors: KafkaErrors
    """The Kafka clients' error callback; a fatal error makes the stages raise FatalClientError."""
    redis: Closable
    """The Redis client (redis.Redis, or a cluster client), closed on the way out."""
    store: PoolStore
    kafka: KillLog
    producer: RatingProducer
    """The idempotent producer of rating changes (the relay's)."""
    dead_letters: DeadLetterSink
    relay: Outbox
    new_kafka: Callable[[], tuple[KillLog, RatingProducer]]
    """New (kill log, producer), reporting to `errors`."""

    @classmethod
    def connect(
        cls,
        config: Config,
        params: Params,
        metrics: Metrics,
        stages: StageTimer = NO_STAGES,
        model: RatingModel[Any] | None = None,
    ) -> Clients:
        """The real clients of `config`: Redis, the group member, the producers (`stages`:
        consumer/_stages.py); the store reads and writes the hashes of `model` (None: ADR)."""
        errors = KafkaErrors(metrics)
        keys = Keys(config.namespace)
        client = connect(
            config.redis_url,
            config.namespace,
            socket_timeout=10,
            socket_connect_timeout=5,
            health_check_interval=5,
        )
        on_corrupt = functools.partial(report_corrupt, metrics)
        store = Store(
            client,
            keys,
            config.topic,
            params,
            config.lateness_ms,
            on_corrupt,
            stages,
            max_age_ms=config.max_age_ms,
            model=model,
        )
        kafka = new_consumer(config, errors)
        producer = new_producer(config, errors)
        relay = Relay(client, producer, keys, config, metrics)
        return cls(
            errors=errors,
            redis=client,
            store=store,
            kafka=kafka,
            producer=producer,
            dead_letters=DeadLetters(config, metrics, errors),
            relay=relay,
            new_kafka=lambda: (new_consumer(config, errors), new_producer(config, errors)),
        )

    def close_kafka(self) -> None:
        """Close the Kafka clients after a fatal error, best effort (they may be unusable)."""
        for close in (self.kafka.close, lambda: self.producer.flush(1)):
            try:
                close()
            except Exception as exc:
                log.warning("closing a failed client", extra={"error": str(exc)})

    def renew_kafka(self) -> None:
        """New Kafka clients; what the old producer did not confirm is claimed again later."""
        self.kafka, self.producer = self.new_kafka()
        self.dead_letters.renew()
        self.relay.use_producer(self.producer)


def report_corrupt(metrics: Metrics, exc: CorruptState) -> None:
    """A corrupt Redis value was read and quarantined (Store): count it and say which."""
    metrics.corrupt_state.labels(exc.what).inc()
    log.error(
        "corrupt state in redis, quarantined (docs/operations.md, Hostile input)",
        extra={"what": exc.what, "key": exc.key, "error": exc.detail},
    )
