"""`adr consume`: read → decode/validate → dedup → rate → write (atomic) → emit → commit.

The stages of one batch are the methods of `Pipeline.process`, in that order. Redis holds the
truth (state, ranks, σ-sum, cooldowns, outbox and each partition's next offset, all written by one
script); Kafka's committed offsets only feed lag dashboards. Guarantees and their limits are in
docs/consumer.md.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import signal
import time
from collections import ChainMap
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from types import FrameType
from typing import Final, NamedTuple, TypeVar, cast

import redis
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from adr_cli import compiled
from consumer._batch import Accepted, Plan, rate_batch
from consumer._cache import StateCache
from consumer._keys import Keys
from consumer._metrics import Metrics, serve
from consumer._relay import Relay
from consumer._store import Conflict, PendingWrite, Store
from consumer.config import Config
from engine import Params
from schemas import Limits, SchemaError, decode_kill_event

log = logging.getLogger("adr.consumer")
_KAFKA_LOG = logging.getLogger("adr.consumer.kafka")  # librdkafka's own lines, as JSON too
T = TypeVar("T")

_REDIS_DOWN: Final = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)
_LAG_EVERY_S: Final = 1.0
_DRAIN_TIMEOUT_S: Final = 30.0
_GC_YOUNG_THRESHOLD: Final = 50_000
"""A batch allocates some 100 short-lived objects per event; at CPython's default (700) the
collector ran every few events and took about a tenth of the rating time."""


class _Batch:
    """The decoded events of one batch and what its write must record."""

    __slots__ = ("accepted", "next_offsets", "pairs", "partitions", "players", "size", "started")

    def __init__(
        self,
        accepted: list[Accepted],
        next_offsets: dict[int, int],
        size: int,
        started: float,
        keys: Keys,
    ) -> None:
        events = [a.event for a in accepted]
        self.accepted = accepted
        self.next_offsets = next_offsets
        self.players = list(dict.fromkeys(p for e in events for p in (e.attacker, e.victim)))
        self.pairs = list(dict.fromkeys(keys.cooldown(e.attacker, e.victim) for e in events))
        self.partitions = list(next_offsets)
        self.size = size
        self.started = started


class _Ready(NamedTuple):
    """A rated batch whose write is not sent yet."""

    batch: _Batch
    plan: Plan


def _is_fatal(err: object) -> bool:
    """A client error after which the Kafka client is unusable and must be recreated."""
    return isinstance(err, KafkaError) and (err.fatal() or err.code() == KafkaError._FATAL)


class Pipeline:
    """One consumer instance: a Kafka group member that applies its partitions to Redis."""

    def __init__(self, config: Config, params: Params, metrics: Metrics | None = None) -> None:
        self.config = config
        self.params = params
        self.metrics = metrics or Metrics()
        self.keys = Keys(config.namespace)
        self.limits = Limits(max_age_ms=config.max_age_ms, max_future_ms=config.max_future_ms)
        self.redis = redis.Redis.from_url(
            config.redis_url, socket_timeout=10, socket_connect_timeout=5, health_check_interval=5
        )
        self.store = Store(self.redis, self.keys, config.topic, params)
        self.cache = StateCache(config.state_cache_players)
        self._ready: _Ready | None = None
        self._fatal = False
        self.kafka = self._new_consumer()
        self.producer = self._new_producer()
        self.relay = Relay(
            self.redis,
            self.producer,
            self.keys.outbox,
            config.rating_topic,
            config.instance_id,
            config.relay_batch,
            config.outbox_claim_idle_ms,
            self.metrics,
        )
        self.assigned: set[int] = set()
        self.positions: dict[int, int] = {}
        self._stopping = False
        self._next_lag = 0.0
        self.http: ThreadingHTTPServer | None = None

    def _new_consumer(self) -> Consumer:
        config = self.config
        static = {"group.instance.id": config.group_instance_id} if config.group_instance_id else {}
        return Consumer(
            {
                **static,
                "bootstrap.servers": config.bootstrap_servers,
                "group.id": config.group,
                "session.timeout.ms": config.session_timeout_ms,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": False,
                "error_cb": self._on_kafka_error,
                "logger": _KAFKA_LOG,
                "fetch.wait.max.ms": max(1, min(config.batch_wait_ms, 100)),
                "max.poll.interval.ms": 300_000,
            }
        )

    def _new_producer(self) -> Producer:
        return Producer(
            {
                "bootstrap.servers": self.config.bootstrap_servers,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 0,  # never give up: the outbox entry waits meanwhile
                "error_cb": self._on_kafka_error,
                "logger": _KAFKA_LOG,
            }
        )

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
        self.kafka = self._new_consumer()
        self.producer = self._new_producer()
        self.relay.use_producer(self.producer)
        self._subscribe()

    # -- the loop -----------------------------------------------------------------------------

    def run(self, serve_metrics: bool = True, signals: bool = True) -> None:
        """Consume until SIGTERM/SIGINT, then finish the batch, flush, commit, leave the group."""
        if serve_metrics:
            self.http = serve(self.metrics, self.config.metrics_host, self.config.metrics_port)
        if signals:
            self._install_signals()
        gc.collect()
        gc.freeze()  # what start-up built lives as long as the process: scan it no more
        gc.set_threshold(_GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        self._subscribe()
        log.info(
            "consumer started",
            extra={"config": self.config.__repr__(), "build": compiled.STATE},
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
                self._report_lag()
            self.flush()
        finally:
            self._shutdown()

    def _emit(self) -> None:
        try:
            self._retry(self.relay.pump, "relay")
        except KafkaException as exc:
            if not (exc.args and _is_fatal(exc.args[0])):
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
            if exc.args and _is_fatal(exc.args[0]):
                self._fatal = True
                return []
            raise

    def request_stop(self) -> None:
        """Stop after the current batch (what SIGTERM does)."""
        self._stopping = True

    def process(self, messages: list[Message]) -> None:
        """One batch through every stage. Its atomic write is held back and sent with the next
        batch's read, so that the next batch is computed while Redis runs this one's write; it
        is confirmed (commit, emit) before the next write is sent. A batch with no successor
        within one poll is written at once (see "Pipelining" in consumer/README.md)."""
        started = time.perf_counter()
        good = self._keep_data(messages)
        if not good or self._fatal:
            return
        accepted, rejected = self._decode(good)
        self._dead_letter(rejected)
        next_offsets = {cast(int, m.partition()): cast(int, m.offset()) + 1 for m in good}
        batch = _Batch(accepted, next_offsets, len(good), started, self.keys)
        ahead, self._ready = self._ready, None
        plan = None if ahead is None else self._rate_behind(batch, ahead)
        if plan is None:
            plan = self._retry(lambda: self._rate(batch), "read")
        self._ready = _Ready(batch, plan)

    def flush(self) -> None:
        """Write and confirm the batch held back, if any."""
        ahead, self._ready = self._ready, None
        if ahead is not None:
            self._confirm(ahead, None)

    def _rate(self, batch: _Batch) -> Plan:
        view = self.store.read_view(
            batch.players, batch.pairs, batch.partitions, self.cache.entries
        )
        return rate_batch(batch.accepted, batch.next_offsets, view, self.keys, self.params)

    def _rate_behind(self, batch: _Batch, ahead: _Ready) -> Plan | None:
        """Send `ahead`'s write right behind this batch's read, rate this batch on top of what
        the write will leave (its players, pairs, offsets and population deltas) while Redis runs
        it, then confirm it. None when `ahead` did not apply as computed (this batch must then be
        rated afresh)."""
        plan = ahead.plan
        try:
            view, write = self.store.read_view_then_write(
                batch.players,
                batch.pairs,
                batch.partitions,
                ChainMap(plan.states, self.cache.entries),  # type: ignore[arg-type]
                plan,
                self.params.cooldown_ms,
                self.config.max_age_ms,
            )
        except _REDIS_DOWN as exc:
            self._redis_failed(exc)
            self._confirm(ahead, None)  # whether it ran is unknown: the redo finds out
            return None
        view.cooldowns.update(plan.cooldowns)
        view.offsets.update(plan.offsets)
        view.player_count += plan.count_delta
        view.sigma_units_total += (plan.sigma_hi_delta << 32) + plan.sigma_lo_delta
        mine = rate_batch(batch.accepted, batch.next_offsets, view, self.keys, self.params)
        return mine if self._confirm(ahead, write) else None

    def _confirm(self, ready: _Ready, write: PendingWrite | None) -> bool:
        """Wait for the batch's write (send it first if `write` is None), redo it on a conflict
        or a Redis failure, then commit and emit; True when it applied as first computed."""
        batch, plan = ready.batch, ready.plan
        sent = time.perf_counter()
        applied = write is not None
        try:
            if write is None:
                self.store.write(plan, self.params.cooldown_ms, self.config.max_age_ms)
                applied = True
            else:
                write.result()
        except Conflict as exc:
            self.metrics.conflicts.inc()
            log.info("concurrent change, recomputing batch", extra={"what": exc.what})
            applied = False
        except _REDIS_DOWN as exc:
            self._redis_failed(exc)
            applied = False
        if applied:
            self.metrics.redis_write.observe(time.perf_counter() - sent)
            self.metrics.ready_flags["redis"] = True
            self.cache.store(plan.states)
        else:
            self.cache.forget(batch.players)
            plan = self._retry(lambda: self._rate_and_write(batch), "write")
        for partition, offset in batch.next_offsets.items():
            self.positions[partition] = offset
        self._commit(batch.next_offsets)
        self._observe(batch.size, plan, batch.started)
        self._emit()  # Redis is idle until the next write: relay what is confirmed
        return applied

    def _redis_failed(self, exc: Exception) -> None:
        self.metrics.ready_flags["redis"] = False
        self.metrics.swallowed.labels("redis_write").inc()
        log.warning("redis failed under a write, redoing its batch", extra={"error": str(exc)})

    # -- stages -------------------------------------------------------------------------------

    def _keep_data(self, messages: list[Message]) -> list[Message]:
        """Drop (and count) transport errors; what remains are records of our partitions."""
        good: list[Message] = []
        for m in messages:
            err = m.error()
            if err is None:
                good.append(m)
            else:
                if _is_fatal(err):
                    self._fatal = True
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
                event = decode_kill_event(m.value() or b"", now_ms, limits)
            except SchemaError as exc:
                rejected.append((m, exc.reason.value))
                continue
            accepted.append(Accepted(m.partition(), m.offset(), event))  # type: ignore[arg-type]
        return accepted, rejected

    def _dead_letter(self, rejected: list[tuple[Message, str]]) -> None:
        """Send each rejected message, bytes untouched, to the DLQ and wait until Kafka has it.

        The flush comes before the write that moves the offsets past these messages, so a crash
        in between re-sends them: the dead-letter topic may hold a duplicate, never a gap.
        """
        if not rejected:
            return
        for m, reason in rejected:
            headers: list[tuple[str, str | bytes | None]] = [
                ("reason", reason.encode()),
                ("source_topic", (m.topic() or "").encode()),
                ("source_partition", str(m.partition()).encode()),
                ("source_offset", str(m.offset()).encode()),
            ]
            while True:
                try:
                    self.producer.produce(
                        self.config.dlq_topic, value=m.value(), key=m.key(), headers=headers
                    )
                    break
                except BufferError:
                    self.producer.poll(0.1)
            self.metrics.dead_lettered.labels(reason).inc()
        while self.producer.flush(10) > 0:
            log.warning(
                "dead-letter topic not reachable, retrying", extra={"pending": len(self.producer)}
            )

    def _rate_and_write(self, batch: _Batch) -> Plan:
        """Dedup and rate on a fresh read; redo on a concurrent change, until the write holds."""
        while True:
            plan = self._rate(batch)
            write_started = time.perf_counter()
            try:
                self.store.write(plan, self.params.cooldown_ms, self.config.max_age_ms)
            except Conflict as exc:
                self.cache.forget(batch.players)
                self.metrics.conflicts.inc()
                log.info("concurrent change, recomputing batch", extra={"what": exc.what})
                continue
            self.metrics.redis_write.observe(time.perf_counter() - write_started)
            self.metrics.ready_flags["redis"] = True
            self.cache.store(plan.states)
            return plan

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
        m.batch_size.observe(size)
        m.batch_duration.observe(time.perf_counter() - started)
        now_ms = time.time_ns() // 1_000_000
        observe = m.event_to_commit.observe
        for ts in plan.counted_ts:
            observe(max(0, now_ms - ts) / 1000)

    # -- rebalance, lag, shutdown -------------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Start each partition where Redis says the state is, not where Kafka's group says."""
        self.flush()  # its offsets first, so that the read below sees them
        stored = self._retry(
            lambda: self.store.read_offsets([tp.partition for tp in partitions]), "read offsets"
        )
        for tp in partitions:
            offset = stored.get(tp.partition)
            tp.offset = OFFSET_BEGINNING if offset is None else offset
        consumer.assign(partitions)
        self.assigned = {tp.partition for tp in partitions}
        self.metrics.rebalances.inc()
        self.metrics.ready_flags["assigned"] = True
        self.metrics.ready_flags["broker"] = True
        log.info(
            "partitions assigned",
            extra={"partitions": {tp.partition: tp.offset for tp in partitions}},
        )

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        log.info("partitions revoked", extra={"partitions": [tp.partition for tp in partitions]})
        self.flush()  # finish the batch before the partitions move on
        consumer.unassign()
        for tp in partitions:
            self.assigned.discard(tp.partition)
            self.positions.pop(tp.partition, None)
            with contextlib.suppress(KeyError):  # never reported
                self.metrics.lag.remove(str(tp.partition))

    def _report_lag(self) -> None:
        now = time.monotonic()
        if now < self._next_lag:
            return
        self._next_lag = now + _LAG_EVERY_S
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
        if _is_fatal(err):
            self._fatal = True
        if err.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT):
            self.metrics.ready_flags["broker"] = False
        self.metrics.swallowed.labels("kafka").inc()
        log.warning("kafka client error (retrying)", extra={"error": str(err)})

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
        log.info("consumer stopped")

    # -- retries ------------------------------------------------------------------------------

    def _retry(self, action: Callable[[], T], what: str, give_up_s: float | None = None) -> T:
        """Run `action`, retrying with exponential backoff while Redis is unreachable."""
        delay = self.config.backoff_initial_s
        deadline = None if give_up_s is None else time.monotonic() + give_up_s
        while True:
            try:
                result = action()
                self.metrics.ready_flags["redis"] = True
                return result
            except _REDIS_DOWN as exc:
                self.metrics.ready_flags["redis"] = False
                self.metrics.swallowed.labels("redis_" + what.replace(" ", "_")).inc()
                if deadline is not None and time.monotonic() > deadline:
                    raise
                log.warning(
                    "redis unavailable, retrying",
                    extra={"during": what, "retry_in_s": delay, "error": str(exc)},
                )
                time.sleep(delay)
                self.metrics.tick()
                delay = min(delay * 2, self.config.backoff_max_s)
