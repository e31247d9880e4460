"""`adr consume`: read → decode/validate → dedup → rate → write (atomic) → emit → commit.

The stages of one batch are the methods of `Pipeline.process`, in that order. Redis holds the
truth (state, ranks, σ-sum, cooldowns, outbox and each partition's next offset, all written by one
script); Kafka's committed offsets only feed lag dashboards. Guarantees and their limits are in
consumer/README.md.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from http.server import ThreadingHTTPServer
from types import FrameType
from typing import Final, cast

import redis
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from consumer._batch import Accepted, Plan
from consumer._blocked import Blocked
from consumer._cache import StateCache
from consumer._collector import Collector
from consumer._dead_letters import DeadLetters, Stop
from consumer._errors import CorruptState, RedisBehind
from consumer._kafka import KAFKA_LOG, is_fatal, new_consumer, new_producer
from consumer._log_range import LogRange
from consumer._metrics import Metrics, serve
from consumer._relay import Relay
from consumer._retry import RedisRetry, retriable
from consumer._store import Store
from consumer._writer import Batch, Ready, Writer
from consumer.config import Config
from engine import Params
from redis_layout import Keys
from runtime import compiled, connect
from schemas import Limits, Reason, SchemaError, check_key, decode_kill_event

log = logging.getLogger("adr.consumer")

_LAG_EVERY_S: Final = 1.0
_DRAIN_TIMEOUT_S: Final = 30.0


class Pipeline:
    """One consumer instance: a Kafka group member that applies its partitions to Redis."""

    def __init__(self, config: Config, params: Params, metrics: Metrics | None = None) -> None:
        self.config = config
        self.params = params
        self.metrics = metrics or Metrics()
        self.keys = Keys(config.namespace)
        self.limits = Limits(max_age_ms=config.max_age_ms, max_future_ms=config.max_future_ms)
        self.redis = connect(
            config.redis_url,
            config.namespace,
            socket_timeout=10,
            socket_connect_timeout=5,
            health_check_interval=5,
        )
        self._retry = RedisRetry(self.metrics, config.backoff_initial_s, config.backoff_max_s)
        self.store = Store(
            self.redis, self.keys, config.topic, params, config.lateness_ms, self._corrupt
        )
        self.cache = StateCache(config.state_cache_players)
        self.writer = Writer(
            self.store,
            self.cache,
            self.keys,
            params,
            config.max_age_ms,
            self.metrics,
            self._retry,
            self._dead_letter_rated,
            config.max_players,
        )
        self.metrics.pool_max_players.set(config.max_players)
        self._ready: Ready | None = None
        self._fatal = False
        self.kafka = new_consumer(config, self._on_kafka_error)
        self.producer = new_producer(config, self._on_kafka_error)
        self.dead_letters = DeadLetters(config, self.metrics, self._on_kafka_error)
        self.blocked = Blocked(
            self.metrics, config.topic, config.backoff_initial_s, config.backoff_max_s
        )
        self.relay = Relay(
            self.redis,
            self.producer,
            self.keys.outbox,
            config.rating_topic,
            config.instance_id,
            config.relay_batch,
            config.outbox_claim_idle_ms,
            self.metrics,
            config.relay_max_in_flight,
            config.relay_pump_ms / 1000,
        )
        self.log_range = LogRange(config.topic, self.metrics, config.held_recheck_ms / 1000)
        self.assigned: set[int] = set()
        self.positions: dict[int, int] = {}
        self._stopping = False
        self._next_lag = 0.0
        self._collector = Collector()
        self.http: ThreadingHTTPServer | None = None

    def _subscribe(self) -> None:
        self.kafka.subscribe(
            [self.config.topic], on_assign=self._on_assign, on_revoke=self._on_revoke
        )

    def _recreate_clients(self) -> None:
        """After a fatal client error (e.g. a static member fenced across a broker restart) the
        clients cannot go on: make new ones. Nothing is lost: Redis holds the offsets, and the
        outbox entries the old producer did not confirm are claimed again."""
        log.error("fatal kafka client error, recreating the clients")
        self.metrics.swallowed.labels("kafka_fatal").inc()
        self._fatal = False
        for close in (self.kafka.close, lambda: self.producer.flush(1)):
            try:
                close()
            except Exception as exc:
                log.warning("closing a failed client", extra={"error": str(exc)})
        self.assigned.clear()
        self.positions.clear()
        self.writer.confirmed.clear()
        for partition in list(self.log_range.held):
            self.log_range.forget(partition)
        self.blocked.forget()
        self.kafka = new_consumer(self.config, self._on_kafka_error)
        self.producer = new_producer(self.config, self._on_kafka_error)
        self.dead_letters.renew()
        self.relay.use_producer(self.producer)
        self._subscribe()

    # -- the loop -----------------------------------------------------------------------------

    def run(self, serve_metrics: bool = True, signals: bool = True) -> None:
        """Consume until SIGTERM/SIGINT, then finish the batch, flush, commit, leave the group."""
        if serve_metrics:
            self.http = serve(self.metrics, self.config.metrics_host, self.config.metrics_port)
        if signals:
            self._install_signals()
        self._collector.start()
        self._subscribe()
        log.info(
            "consumer started",
            extra={"config": self.config.__repr__(), "build": compiled.state()},
        )
        try:
            while not self._stopping:
                self.metrics.tick()
                messages = self._read()
                if messages:
                    self.process(messages)  # a batch with a fatal error is not applied
                if self._fatal:
                    self.flush()
                    self._recreate_clients()  # Redis offsets unchanged: the batch comes again
                    continue
                if self._ready is None:
                    self._emit()
                self.blocked.retry_due(self.kafka)
                self._report_lag()
            self.flush()
        finally:
            self._shutdown()

    def _emit(self) -> None:
        try:
            self._retry(self.relay.pump, "relay")
        except KafkaException as exc:
            if not (exc.args and is_fatal(exc.args[0])):
                raise
            self._fatal = True

    def _read(self) -> list[Message]:
        """The next batch. While a batch is held back, take only what is already here, so that a
        quiet topic never holds its commit back: with nothing here, write it first."""
        try:
            if self._ready is not None:
                more = self.kafka.consume(self.config.batch_size, 0)
                if more:
                    return more
                self.flush()
            return self.kafka.consume(self.config.batch_size, self.config.batch_wait_ms / 1000)
        except KafkaException as exc:
            if exc.args and is_fatal(exc.args[0]):
                self._fatal = True
                return []
            raise

    def request_stop(self) -> None:
        """Stop after the current batch (what SIGTERM does)."""
        self._stopping = True

    def process(self, messages: list[Message]) -> None:
        """One batch through every stage. Its atomic write is held back and sent with the next
        batch's read, so that the next batch is rated while Redis runs this one's write; it is
        confirmed (commit, emit) before the next write is sent. A batch with no successor
        within one poll is written at once (see "Pipelining" in consumer/README.md).

        Rejected messages are copied to the dead-letter topic first; a partition with a copy the
        broker did not acknowledge stops at that message (consumer/_blocked.py): nothing at or
        after it is applied, so its stored offset stays there."""
        started = time.perf_counter()
        good = self._keep_data(messages)
        if not good or self._fatal:
            return
        accepted, rejected = self._decode(good)
        stops = self.dead_letters.send(rejected, self.metrics.tick)
        self.blocked.stop(self.kafka, stops)
        if stops:  # nothing at or after a stop is applied: the partition stays there
            good = [m for m in good if not _stopped(stops, m.partition(), m.offset())]
            accepted = [a for a in accepted if not _stopped(stops, a.partition, a.offset)]
            if not good:
                return
        next_offsets = {cast(int, m.partition()): cast(int, m.offset()) + 1 for m in good}
        batch = Batch(accepted, next_offsets, len(good), started, self.keys)
        ahead, self._ready = self._ready, None
        plan = None
        try:
            if ahead is not None:
                plan, written = self.writer.rate_behind(batch, ahead)
                self._confirmed(ahead.batch, written)
            if plan is None:
                plan = self._retry(lambda: self.writer.rate(batch), "read")
        except RedisBehind as exc:
            self._rewind(exc)  # this batch (and the one ahead) come again from the log
            return
        self._ready = Ready(batch, plan)

    def flush(self) -> None:
        """Write and confirm the batch held back, if any."""
        ahead, self._ready = self._ready, None
        if ahead is not None:
            try:
                self._confirmed(ahead.batch, self.writer.write(ahead.batch, ahead.plan))
            except RedisBehind as exc:
                self._rewind(exc)

    def _rewind(self, exc: RedisBehind) -> None:
        """Redis lost writes it had acknowledged and holds an earlier, consistent state (the
        script writes the state and the offsets together): drop what was computed on the lost
        state and read every partition again from the offsets Redis holds now."""
        log.error(
            "redis holds less than it acknowledged, rewinding to its stored offsets",
            extra={"partition": exc.partition, "stored": exc.stored, "confirmed": exc.confirmed},
        )
        self.metrics.redis_rewinds.inc()
        self._ready = None
        self.cache.clear()
        self._assign_stored(self.kafka, sorted(self.assigned))

    def _assign_stored(self, consumer: Consumer, partitions: list[int]) -> None:
        """Assign `partitions` at the next offsets Redis holds for them, and hold (pause) each
        whose stored offset lies outside its log (consumer/_log_range.py). Assigning anew, not
        seeking: a seek fails on a partition that is paused before its first fetch."""
        stored = self._retry(lambda: self.store.read_offsets(partitions), "read offsets")
        assignment: list[TopicPartition] = []
        held: dict[int, str] = {}
        for partition in partitions:
            offset = stored.get(partition)
            self._start_at(partition, offset)
            why = self.log_range.outside(consumer, partition, offset)
            if why is None:
                self.log_range.forget(partition)
            else:
                held[partition] = why
            start = OFFSET_BEGINNING if offset is None else offset
            assignment.append(TopicPartition(self.config.topic, partition, start))
        self.blocked.forget(partitions)  # a stopped message is met again from the stored offset
        consumer.assign(assignment)
        self.assigned = set(partitions)
        for partition, why in held.items():
            self.log_range.hold(consumer, partition, why)  # before anything is fetched
        # a partition assigned again stays paused (librdkafka keeps the flag): resume the others
        reading = [tp for tp in assignment if tp.partition not in held]
        if reading:
            consumer.resume(reading)
        log.info(
            "partitions assigned",
            extra={"partitions": {tp.partition: tp.offset for tp in assignment}},
        )

    def _start_at(self, partition: int, offset: int | None) -> None:
        """Redis holds `offset` (None: nothing) as the partition's next: apply from there."""
        self.positions.pop(partition, None)
        self.writer.confirmed.pop(partition, None)
        if offset is not None:
            self.positions[partition] = offset
            self.writer.confirmed[partition] = offset

    def _recheck_held(self) -> None:
        """Read a held partition again once its stored offset lies inside the log (an operator
        set it there, or the log grew back past it): docs/operations.md, "AdrPartitionHeld"."""
        if not self.log_range.due():
            return
        held = sorted(self.log_range.held)
        try:
            stored = self.store.read_offsets(held)
        except redis.RedisError as exc:
            if not retriable(exc):
                raise
            self.metrics.swallowed.labels("redis_offset_check").inc()
            return
        if any(self.log_range.outside(self.kafka, p, stored.get(p)) is None for p in held):
            self.flush()
            self._assign_stored(self.kafka, sorted(self.assigned))

    def _check_stored(self) -> None:
        """Between batches (a quiet topic): does Redis still hold what this instance wrote?"""
        if self._ready is not None or not self.writer.confirmed:
            return
        partitions = list(self.writer.confirmed)
        try:
            self.writer.check(self.store.read_offsets(partitions))
        except RedisBehind as exc:
            self._rewind(exc)
        except redis.RedisError as exc:
            if not retriable(exc):
                raise
            self.metrics.swallowed.labels("redis_offset_check").inc()

    def _confirmed(self, batch: Batch, plan: Plan) -> None:
        """The batch is in Redis: move on, commit, count it, and relay what is confirmed (Redis
        is idle until the next write is sent)."""
        for partition, offset in batch.next_offsets.items():
            self.positions[partition] = offset
        self._commit(batch.next_offsets)
        self._observe(batch.size, plan, batch.started)
        self._emit()
        self._collector.after_batch()

    # -- stages -------------------------------------------------------------------------------

    def _keep_data(self, messages: list[Message]) -> list[Message]:
        """Drop (and count) transport errors; what remains are records of our partitions."""
        good: list[Message] = []
        for m in self.blocked.admit(messages):
            err = m.error()
            if err is None:
                good.append(m)
            else:
                if is_fatal(err):
                    self._fatal = True
                elif (
                    err.code() == KafkaError._AUTO_OFFSET_RESET
                    and m.partition() is not None
                    and m.partition() not in self.log_range.held
                ):
                    # the position fell outside the log while reading (retention, truncation)
                    self.log_range.hold(self.kafka, cast(int, m.partition()), str(err))
                self.metrics.swallowed.labels("kafka_consume").inc()
                log.warning("kafka consume error", extra={"error": str(err)})
        if good:
            self.metrics.ready_flags["broker"] = True
        return good

    def _decode(self, messages: list[Message]) -> tuple[list[Accepted], list[tuple[Message, str]]]:
        """Typed kill events, and the messages that are not (with their reason)."""
        now_ms = time.time_ns() // 1_000_000
        accepted: list[Accepted] = []
        rejected: list[tuple[Message, str]] = []
        limits = self.limits
        for m in messages:
            try:
                event = decode_kill_event(m.value() or b"", now_ms, limits)  # None: a tombstone
                check_key(event, m.key())
            except SchemaError as exc:
                rejected.append((m, exc.reason.value))
                continue
            except Exception as exc:  # a decoder bug: the fuzz tests say this cannot happen
                self.metrics.swallowed.labels("decode").inc()
                log.error("decoder raised", extra={"error": repr(exc), "offset": m.offset()})
                rejected.append((m, Reason.UNDECODABLE.value))
                continue
            accepted.append(Accepted(m.partition(), m.offset(), event, m))  # type: ignore[arg-type]
        return accepted, rejected

    def _dead_letter_rated(self, batch: Batch, plan: Plan) -> bool:
        """Dead-letter the events rating left out (Plan.rejected: `id_reused`, `corrupt_state`,
        `pool_full`) before the write that moves the offsets past them is sent. A copy the
        broker did not take stops its partition there, like one of `_decode`'s: the batch is
        cut at the stop and True asks the writer to rate it again."""
        new = batch.drop_rejected(plan)
        if plan.unratable:
            self.metrics.corrupt_state.labels("rating").inc(plan.unratable)
            log.error("the engine could not rate stored states", extra={"events": plan.unratable})
        if not new:
            return False
        if plan.pool_full:
            log.warning(
                "rating pool full, events dead-lettered",
                extra={"events": len(plan.pool_full), "max_players": self.config.max_players},
            )
        reasons = {(a.partition, a.offset): r for a, r in plan.rejected}
        stops = self.dead_letters.send(
            [(cast(Message, a.message), reasons[a.partition, a.offset]) for a in new],
            self.metrics.tick,
        )
        if not stops:
            return False
        self.blocked.stop(self.kafka, stops)
        batch.cut(stops)
        return True

    def _corrupt(self, exc: CorruptState) -> None:
        """A corrupt Redis value was read and quarantined (Store): count it and say which."""
        self.metrics.corrupt_state.labels(exc.what).inc()
        log.error(
            "corrupt state in redis, quarantined (docs/operations.md, Hostile input)",
            extra={"what": exc.what, "key": exc.key, "error": exc.detail},
        )

    def _commit(self, next_offsets: dict[int, int]) -> None:
        """Kafka's group offsets follow Redis (for lag dashboards); Redis stays the truth."""
        tps = [TopicPartition(self.config.topic, p, o) for p, o in next_offsets.items()]
        try:
            self.kafka.commit(offsets=tps, asynchronous=True)
        except Exception as exc:
            self.metrics.swallowed.labels("kafka_commit").inc()
            log.warning("kafka commit failed", extra={"error": str(exc)})

    def _observe(self, size: int, plan: Plan, started: float) -> None:
        m = self.metrics
        m.consumed.inc(size)
        m.counted.inc(plan.counted)
        m.duplicate.inc(plan.duplicates)
        m.late.inc(plan.late)
        m.batch_size.observe(size)
        m.batch_duration.observe(time.perf_counter() - started)
        m.pool_players.set(plan.player_count)
        now_ms = time.time_ns() // 1_000_000
        observe = m.event_to_commit.observe
        for ts in plan.counted_ts:
            observe(max(0, now_ms - ts) / 1000)

    # -- rebalance, lag, shutdown -------------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Start each partition where Redis says the state is, not where Kafka's group says."""
        self.flush()  # its offsets first, so that the read below sees them
        self._assign_stored(consumer, [tp.partition for tp in partitions])
        self.metrics.rebalances.inc()
        self.metrics.ready_flags["assigned"] = True
        self.metrics.ready_flags["broker"] = True

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        log.info("partitions revoked", extra={"partitions": [tp.partition for tp in partitions]})
        self.flush()  # finish the batch before the partitions move on
        consumer.unassign()
        self.blocked.forget([tp.partition for tp in partitions])
        for tp in partitions:
            self.assigned.discard(tp.partition)
            self.positions.pop(tp.partition, None)
            self.writer.confirmed.pop(tp.partition, None)
            self.log_range.forget(tp.partition)
            with contextlib.suppress(KeyError):  # never reported
                self.metrics.lag.remove(str(tp.partition))

    def _report_lag(self) -> None:
        now = time.monotonic()
        if now < self._next_lag:
            return
        self._next_lag = now + _LAG_EVERY_S
        self._check_stored()
        self._recheck_held()
        for partition in self.assigned:
            position = self.positions.get(partition)
            if position is None:
                continue
            try:
                _low, high = self.kafka.get_watermark_offsets(
                    TopicPartition(self.config.topic, partition), cached=True
                )
            except Exception:
                continue
            if high >= 0:
                self.metrics.lag.labels(str(partition)).set(max(0, high - position))
        try:
            self.metrics.outbox_backlog.set(self.relay.backlog())
        except redis.RedisError:
            self.metrics.swallowed.labels("outbox_backlog").inc()

    def _on_kafka_error(self, err: KafkaError) -> None:
        if is_fatal(err):
            self._fatal = True
        if err.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT):
            self.metrics.ready_flags["broker"] = False
        self.metrics.swallowed.labels("kafka").inc()
        KAFKA_LOG.warning(
            "kafka client error (retrying)", extra={"error": str(err), "code": err.name()}
        )

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
        try:
            self._retry(self.relay.pump, "relay", give_up_s=_DRAIN_TIMEOUT_S)
            self._retry(
                lambda: self.relay.drain(_DRAIN_TIMEOUT_S), "relay", give_up_s=_DRAIN_TIMEOUT_S
            )
        except Exception as exc:
            log.warning("outbox not fully relayed at exit", extra={"error": str(exc)})
        self.producer.flush(5)
        self.dead_letters.close(5)
        if self.positions:
            tps = [TopicPartition(self.config.topic, p, o) for p, o in self.positions.items()]
            try:
                self.kafka.commit(offsets=tps, asynchronous=False)
            except Exception as exc:
                self.metrics.swallowed.labels("kafka_commit").inc()
                log.warning("final kafka commit failed", extra={"error": str(exc)})
        self.kafka.close()  # leaves the group
        self.redis.close()
        if self.http is not None:
            self.http.shutdown()
        self._collector.stop()
        log.info("consumer stopped")


def _stopped(stops: dict[int, Stop], partition: int | None, offset: int | None) -> bool:
    """Whether a message is at or after its partition's stop."""
    stop = stops.get(cast(int, partition))
    return stop is not None and cast(int, offset) >= stop.offset
