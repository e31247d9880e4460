"""`adr consume`: one consumer instance, a Kafka group member that applies its partitions to
Redis.

`Pipeline` runs the loop; each batch goes through the stages of consumer/_lifecycle.py, top to
bottom (read → decode → rate → write ahead → confirm → commit → emit). Redis holds the truth
(state, ranks, σ-sum, cooldowns, outbox and each partition's next offset, all written by one
script); Kafka's committed offsets only feed lag dashboards. The pipeline receives its clients
(consumer/_clients.py), made from the configuration unless given. Guarantees and their limits
are in consumer/README.md.
"""

from __future__ import annotations

import functools
import logging
import signal
import time
from http.server import ThreadingHTTPServer
from types import FrameType
from typing import Any, Final

import redis
from confluent_kafka import TopicPartition

from consumer._batch import rate_batch
from consumer._clients import Clients
from consumer._collector import Collector
from consumer._degraded import KILL_EVENTS
from consumer._errors import FatalClientError, StopRequested
from consumer._lifecycle import Lifecycle
from consumer._metrics import Metrics, serve
from consumer._model_batch import rate_model_batch
from consumer._partitions import Partitions
from consumer._ports import KillLog, RateStep, RatingProducer
from consumer._retry import RedisRetry
from consumer._stages import NO_STAGES, StageTimer
from consumer._topic_watch import TopicWatch
from consumer.config import Config
from engine import AdrModel, Params, RatingModel, model_parameters
from redis_layout import Keys, ModelMismatch, model_stamp, stamp_layout, stamp_model
from runtime import compiled
from runtime.settings import settings_fields

log = logging.getLogger("adr.consumer")

_LAG_EVERY_S: Final = 1.0
_DRAIN_TIMEOUT_S: Final = 30.0


class Pipeline:
    """One consumer instance: a Kafka group member that applies its partitions to Redis."""

    def __init__(
        self,
        config: Config,
        params: Params,
        metrics: Metrics | None = None,
        clients: Clients | None = None,
        stage_timer: StageTimer = NO_STAGES,
        model: RatingModel[Any] | None = None,
    ) -> None:
        """`clients`: what the pipeline reads from and writes to, reporting to `metrics`
        (None: `Clients.connect(config, params, metrics)`, the real servers). `stage_timer` is
        told where each batch's CPU time goes (the benchmark's profiling phase,
        consumer/_stages.py); the default does nothing. `model`: the pool's rating model
        (consumer.config.pool_model; None: ADR with `params`)."""
        self.config = config
        self.params = params
        self.model: RatingModel[Any] = AdrModel(params) if model is None else model
        self.metrics = metrics or Metrics()
        self.keys = Keys(config.namespace)
        self.clients = clients or Clients.connect(
            config, params, self.metrics, stage_timer, self.model
        )
        self.metrics.pool_max_players.set(config.max_players)
        self._stopping = False
        retry = RedisRetry(
            self.metrics,
            config.backoff_initial_s,
            config.backoff_max_s,
            stopping=lambda: self._stopping,
        )
        self._retry = retry
        self.partitions = Partitions(config, self.clients, self.metrics, retry)
        self.blocked = self.partitions.blocked
        self.log_range = self.partitions.log_range
        self._collector = Collector()
        # Rated with the pool's model's loop (engine.RatingModel, recorded in {ns}:model at `run`).
        self.lifecycle = Lifecycle(
            config,
            self.clients,
            self.metrics,
            self.partitions,
            retry,
            rating_step(self.model, self.keys, config, params),
            self._collector,
            stage_timer,
        )
        self._next_lag = 0.0
        self._topic_watch = TopicWatch(config.topic, self.metrics)
        # Readiness, read from the parts that know it (consumer/_health.py); `consume` is wired
        # by Metrics itself (its Degraded paths).
        self.metrics.health.watch(
            assigned=self.partitions,
            redis=retry,
            broker=self.clients.errors,
            dead_letters=self.blocked,
            offsets=self.log_range,
        )
        self.http: ThreadingHTTPServer | None = None

    @property
    def kafka(self) -> KillLog:
        return self.clients.kafka

    @property
    def producer(self) -> RatingProducer:
        return self.clients.producer

    @property
    def redis(self) -> Any:
        return self.clients.redis

    @property
    def assigned(self) -> set[int]:
        return self.partitions.assigned

    # -- the loop -----------------------------------------------------------------------------

    def run(self, serve_metrics: bool = True, signals: bool = True) -> None:
        """Consume until SIGTERM/SIGINT, then finish the batch, flush, commit, leave the group.
        First the pool's model is checked (`stamp_model`, waiting for Redis while serving the
        probes): ModelMismatch if the pool records another model or other parameters, or
        PoolRebuilding (one) while `adr rebuild` writes it, before the group is joined or
        anything is read."""
        if serve_metrics:
            self.http = serve(self.metrics, self.config.metrics_host, self.config.metrics_port)
        if signals:
            self._install_signals()
        model = self.model
        stamp = model_stamp(model.name, model_parameters(model))
        try:
            self._retry(lambda: stamp_model(self.redis, self.keys, stamp), "check the pool model")
        except (StopRequested, ModelMismatch) as exc:
            if self.http is not None:
                self.http.shutdown()
            if isinstance(exc, ModelMismatch):
                raise
            _stopped_waiting(exc)
            return
        self._collector.start()
        self._subscribe()
        log.info(
            "consumer started",
            extra={"config": settings_fields(self.config), "build": compiled.state()},
        )
        stages = self.lifecycle
        try:
            while not self._stopping:
                self.metrics.tick()
                try:
                    stages.step()  # read, then the batch's steps (consumer/_lifecycle.py)
                    self.clients.errors.raise_if_fatal()
                    if stages.held is None:
                        stages.emit()
                except FatalClientError as exc:  # the batch in hand is not applied
                    self._recreate_clients(exc)  # Redis offsets unchanged: it comes again
                    continue
                self.blocked.retry_due(self.kafka)
                self._between_batches()
            self.flush()
        except StopRequested as exc:
            _stopped_waiting(exc)
        finally:
            self._shutdown()

    def flush(self) -> None:
        """Write, confirm, commit and emit the batch held, if any (given up, not retried, when a
        stop is asked for while Redis does not answer: Redis's offsets bring it back)."""
        try:
            self.lifecycle.flush()
        except StopRequested as exc:
            _stopped_waiting(exc)

    def request_stop(self) -> None:
        """Stop after the current batch (what SIGTERM does)."""
        self._stopping = True

    def _between_batches(self) -> None:
        """Once a second: Redis still holds what was written, held partitions readable again,
        lag and the outbox backlog."""
        now = time.monotonic()
        if now < self._next_lag:
            return
        self._next_lag = now + _LAG_EVERY_S
        self.lifecycle.check_stored()
        if self.partitions.held_readable():
            self.flush()
            self.partitions.assign_stored(self.kafka, sorted(self.assigned))
        self.partitions.report_lag()
        self.metrics.logs.flush()  # the summary lines due (consumer/_log_summary.py)
        self._topic_watch.check(self.kafka, now)  # a deleted kill-event topic is silent
        try:
            self.metrics.outbox_backlog.set(self.clients.relay.backlog())
        except redis.RedisError:
            self.metrics.swallowed.labels("outbox_backlog").inc()

    # -- rebalance, client errors, shutdown ---------------------------------------------------

    def _subscribe(self) -> None:
        self.kafka.subscribe(
            [self.config.topic], on_assign=self._on_assign, on_revoke=self._on_revoke
        )

    def _on_assign(self, consumer: KillLog, partitions: list[TopicPartition]) -> None:
        """Start each partition where Redis says the state is, not where Kafka's group says (an
        assignment met while stopping with Redis not answering is left: the process leaves)."""
        self.flush()  # its offsets first, so that the read below sees them
        try:
            # the pool's layout version for readers (SET NX); UnknownLayout stops the process
            self._retry(lambda: stamp_layout(self.redis, self.keys), "stamp the layout version")
            self.partitions.assign_stored(consumer, [tp.partition for tp in partitions], new=True)
        except StopRequested as exc:
            _stopped_waiting(exc)
            return
        self.metrics.rebalances.inc()
        self.metrics.degraded.recovered(KILL_EVENTS, self.config.topic)  # the group admits it
        self.clients.errors.answered()

    def _on_revoke(self, consumer: KillLog, partitions: list[TopicPartition]) -> None:
        log.info("partitions revoked", extra={"partitions": [tp.partition for tp in partitions]})
        self.flush()  # finish the batch before the partitions move on
        self.partitions.revoke(consumer, [tp.partition for tp in partitions])

    def _recreate_clients(self, exc: FatalClientError) -> None:
        """The one handler of a fatal client error (e.g. a static member fenced across a broker
        restart): the clients cannot go on. Write the batch held, then make new clients. Nothing
        is lost: Redis holds the offsets, and the outbox entries the old producer did not
        confirm are claimed again."""
        self.flush()
        log.error("fatal kafka client error, recreating the clients", extra={"error": str(exc)})
        self.metrics.swallowed.labels("kafka_fatal").inc()
        self.clients.errors.fatal = None
        self.clients.close_kafka()
        self.partitions.forget_all()
        self.clients.renew_kafka()
        self._subscribe()

    def _install_signals(self) -> None:
        def stop(signum: int, _frame: FrameType | None) -> None:
            if self._stopping:
                raise KeyboardInterrupt  # a second signal: give up the graceful path
            log.info("stopping after this batch", extra={"signal": signum})
            self._stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

    def _shutdown(self) -> None:
        """Flush the relay, commit, leave the group (each step best effort on the way out)."""
        relay = self.clients.relay
        try:
            self._retry(relay.pump, "relay", give_up_s=_DRAIN_TIMEOUT_S)
            self._retry(lambda: relay.drain(_DRAIN_TIMEOUT_S), "relay", give_up_s=_DRAIN_TIMEOUT_S)
        except Exception as exc:
            log.warning("outbox not fully relayed at exit", extra={"error": str(exc)})
        self.producer.flush(5)
        self.clients.dead_letters.close(5)
        self.partitions.commit_positions()
        self.kafka.close()  # leaves the group
        self.redis.close()
        if self.http is not None:
            self.http.shutdown()
        self._collector.stop()
        self.metrics.logs.flush(final=True)  # the counts not yet written
        log.info("consumer stopped")


def rating_step(model: RatingModel[Any], keys: Keys, config: Config, params: Params) -> RateStep:
    """The pool's loop with its settings bound, chosen once (consumer/_ports.py's `RateStep`):
    ADR by `rate_batch` (consumer/_batch.py), compiled and typed with ADR's classes, so its calls
    into the engine are native; any other model by `rate_model_batch` (consumer/_model_batch.py),
    the same rules in the same order (why two loops: that module says). `params` gives the
    pool's rules a model does not own (the cooldown of §2.1): ADR's own for ADR."""
    lateness_ms, max_players = config.lateness_ms, config.max_players
    if isinstance(model, AdrModel):
        return functools.partial(
            rate_batch,
            keys=keys,
            params=model.params,
            lateness_ms=lateness_ms,
            max_players=max_players,
            model=model,
        )
    return functools.partial(
        rate_model_batch,
        keys=keys,
        params=params,
        model=model,
        lateness_ms=lateness_ms,
        max_players=max_players,
    )


def _stopped_waiting(exc: StopRequested) -> None:
    log.warning(
        "stopping while redis does not answer: the batch in hand is left to the next owner",
        extra={"during": exc.what},
    )
