"""One batch's life, stage by stage: read → decode → rate → write ahead → confirm → commit → emit.

1. **read** (`read`): up to `batch_size` messages from the group's partitions.
2. **decode** (`decode`): transport errors dropped, kill events decoded and checked; rejected
   messages are dead-lettered, and a partition whose dead letter the broker did not take is cut
   at that message (consumer/_blocked.py): nothing at or after it is applied.
3. **rate** (`rate`): dedup and rate on what Redis holds (consumer/_writer.py, the pure
   consumer/_batch.py).
4. **write ahead** (`write_ahead`): a rated batch is held, and its atomic write is sent right
   behind the next batch's read, on one connection: Redis answers the read, then runs the write
   while the next batch is rated on top of what the write will leave.
5. **confirm**: the held write is waited for. One that did not apply as computed (a concurrent
   change, Redis failing under it) is redone from a fresh read, and the batch behind it is rated
   again afresh.
6. **commit** (`commit`): Kafka's group offsets follow Redis's (lag dashboards only).
7. **emit** (`emit`): the relay sends the outbox (the confirmed rating changes) to Kafka.

A batch with no successor within one poll is written at once (`flush`), so a quiet topic never
holds its commit back. This module owns the write-ahead: the batch held, the order of its
steps, and the way back when Redis reports less than it acknowledged (`rewind`).
"""

from __future__ import annotations

import logging
import time
from typing import cast

import redis
from confluent_kafka import KafkaError, KafkaException, Message

from consumer._batch import Accepted, Plan, View
from consumer._blocked import Blocked
from consumer._cache import StateCache
from consumer._clients import Clients
from consumer._collector import Collector
from consumer._dead_letters import Stop
from consumer._decoding import decode_messages, next_offsets
from consumer._degraded import KILL_EVENTS
from consumer._errors import CorruptState, RedisBehind
from consumer._kafka import is_fatal
from consumer._kafka_faults import classify
from consumer._log_range import LogRange
from consumer._metrics import Metrics, observe_ages
from consumer._partitions import Partitions, commit_at
from consumer._retry import RedisRetry, retriable
from consumer._stages import DECODE, NO_STAGES, RELAY, StageTimer
from consumer._writer import Batch, Ready, Writer
from consumer.config import Config
from engine import Params
from redis_layout import Keys
from schemas import Limits

log = logging.getLogger("adr.consumer")


class Lifecycle:
    """The stages of one pipeline's batches, and the one batch held (rated, write not sent)."""

    def __init__(
        self,
        config: Config,
        params: Params,
        keys: Keys,
        clients: Clients,
        metrics: Metrics,
        retry: RedisRetry,
        partitions: Partitions,
        blocked: Blocked,
        log_range: LogRange,
        collector: Collector,
        stages: StageTimer = NO_STAGES,
    ) -> None:
        self._config = config
        self._keys = keys
        self._clients = clients
        self._metrics = metrics
        self._retry = retry
        self._partitions = partitions
        self._blocked = blocked
        self._log_range = log_range
        self._collector = collector
        self._stages = stages
        self._limits = Limits(max_age_ms=config.max_age_ms, max_future_ms=config.max_future_ms)
        self.cache = StateCache(config.state_cache_players)
        self.writer = Writer(
            clients.store,
            self.cache,
            keys,
            params,
            config.max_age_ms,
            metrics,
            retry,
            self._dead_letter_rated,
            config.max_players,
            confirmed=partitions.confirmed,
            stages=stages,
            epoch=partitions.epoch,
        )
        self.held: Ready | None = None

    # -- the stages, in order -----------------------------------------------------------------

    def read(self) -> list[Message]:
        """1. The next batch. While a batch is held, take only what is already here, so that a
        quiet topic never holds its commit back: with nothing here, write it first."""
        config = self._config
        try:
            if self.held is not None:
                more = self._clients.kafka.consume(config.batch_size, 0)
                if more:
                    return more
                self.flush()
            return self._clients.kafka.consume(config.batch_size, config.batch_wait_ms / 1000)
        except KafkaException as exc:
            if exc.args and is_fatal(exc.args[0]):
                self._clients.errors.fatal = True
                return []
            raise

    def process(self, messages: list[Message]) -> None:
        """2–7 for one batch: decode it; rate it behind the held batch's write, confirm, commit
        and emit that one; hold this one. A batch with a fatal client error is not applied."""
        batch = self.decode(messages)
        if batch is None:
            return
        ahead, self.held = self.held, None
        try:
            plan = None
            if ahead is not None:
                plan, written = self.write_ahead(batch, ahead)
                self.confirmed(ahead.batch, written)
            if plan is None:
                plan = self.rate(batch)
        except RedisBehind as exc:
            self.rewind(exc)  # this batch (and the one ahead) come again from the log
            return
        self.held = Ready(batch, plan)

    def decode(self, messages: list[Message]) -> Batch | None:
        """2. The batch's kill events and next offsets (None: nothing to apply).

        Rejected messages are copied to the dead-letter topic first; a partition with a copy the
        broker did not acknowledge stops at that message (consumer/_blocked.py): nothing at or
        after it is applied, so its stored offset stays there."""
        started = time.perf_counter()
        good = self._keep_data(messages)
        if not good or self._clients.errors.fatal:
            return None
        self._stages.start()
        accepted, rejected = self._decode(good)
        self._stages.stop(DECODE)
        stops = self._clients.dead_letters.send(rejected, self._metrics.tick)
        self._blocked.stop(self._clients.kafka, stops)
        if stops:  # nothing at or after a stop is applied: the partition stays there
            good = [m for m in good if not _stopped(stops, m.partition(), m.offset())]
            accepted = [a for a in accepted if not _stopped(stops, a.partition, a.offset)]
            if not good:
                return None
        return Batch(accepted, next_offsets(good), len(good), started, self._keys)

    def rate(self, batch: Batch) -> Plan:
        """3. Dedup and rate `batch` on a fresh read (no write ahead of it)."""
        return self._retry(lambda: self.writer.rate(batch), "read")

    def write_ahead(self, batch: Batch, ahead: Ready) -> tuple[Plan | None, Plan]:
        """3–5 behind a held batch: send `ahead`'s write right behind `batch`'s read, rate
        `batch` on top of what that write will leave while Redis runs it, then wait for the
        write (confirm).

        Returns (`batch`'s plan, or None when `ahead` did not apply as computed and `batch` must
        be rated afresh; the plan `ahead` was finally written with)."""
        writer = self.writer
        try:
            view, write = writer.send_behind(batch, ahead.plan)
        except (redis.RedisError, CorruptState) as exc:
            if isinstance(exc, redis.RedisError) and not retriable(exc):
                raise
            writer.redis_failed(exc, ahead.plan)  # whether it ran is unknown: the redo finds out
            return None, writer.write(ahead.batch, None)
        try:
            writer.check(view.offsets, view.epoch)  # read before the write ahead: still due
        except RedisBehind:
            writer.settle(write)
            raise
        _lay_over(view, ahead.plan)
        mine = writer.rate_on(batch, view)
        if writer.wait(ahead, write):
            return mine, ahead.plan
        return None, writer.write(ahead.batch, None)

    def confirmed(self, batch: Batch, plan: Plan) -> None:
        """6–7. The batch is in Redis: move on, commit, count it, and emit what is confirmed
        (Redis is idle until the next write is sent)."""
        self._partitions.positions.update(batch.next_offsets)
        self.commit(batch.next_offsets, plan.epoch)
        self.observe(batch.size, plan, batch.started)
        self.emit()
        self._collector.after_batch()

    def commit(self, next_offsets: dict[int, int], epoch: int = 0) -> None:
        """6. Kafka's group offsets follow Redis (for lag dashboards, and to notice a Redis
        behind them at assignment); Redis stays the truth. Each commit records the pool epoch
        the batch was written in, where a Redis restore cannot roll it back (consumer/_epoch.py)."""
        topic = self._config.topic
        tps = [commit_at(topic, p, o, epoch) for p, o in next_offsets.items()]
        try:
            self._clients.kafka.commit(offsets=tps, asynchronous=True)
        except Exception as exc:
            self._metrics.swallowed.labels("kafka_commit").inc()
            log.warning("kafka commit failed", extra={"error": str(exc)})

    def emit(self) -> None:
        """7. Relay the outbox to Kafka (also between batches while nothing is held)."""
        self._stages.start()
        try:
            self._retry(self._clients.relay.pump, "relay")
        except KafkaException as exc:
            if not (exc.args and is_fatal(exc.args[0])):
                raise
            self._clients.errors.fatal = True
        finally:
            self._stages.stop(RELAY)

    # -- the held batch -----------------------------------------------------------------------

    def flush(self) -> None:
        """Write, confirm, commit and emit the batch held, if any."""
        ahead, self.held = self.held, None
        if ahead is not None:
            try:
                self.confirmed(ahead.batch, self.writer.write(ahead.batch, ahead.plan))
            except RedisBehind as exc:
                self.rewind(exc)

    def rewind(self, exc: RedisBehind) -> None:
        """Redis lost writes it had acknowledged and holds an earlier, consistent state (the
        script writes the state and the offsets together): drop what was computed on the lost
        state, raise the pool epoch (the changes applied again must rank above the lost ones,
        consumer/_epoch.py), and read every partition again from the offsets Redis holds now."""
        log.error(
            "redis holds less than it acknowledged, rewinding to its stored offsets",
            extra={
                "what": exc.what,
                "partition": exc.partition,
                "stored": exc.stored,
                "confirmed": exc.confirmed,
            },
        )
        self._metrics.redis_rewinds.inc()
        self.held = None
        self.cache.clear()
        partitions = self._partitions
        partitions.raise_epoch("rewind")
        partitions.assign_stored(self._clients.kafka, sorted(partitions.assigned))

    def check_stored(self) -> None:
        """Between batches (a quiet topic): does Redis still hold what this instance wrote?"""
        confirmed = self.writer.confirmed
        if self.held is not None or not confirmed:
            return
        try:
            self.writer.check(self._clients.store.read_offsets(list(confirmed)))
        except RedisBehind as exc:
            self.rewind(exc)
        except redis.RedisError as exc:
            if not retriable(exc):
                raise
            self._metrics.swallowed.labels("redis_offset_check").inc()

    # -- inside the stages --------------------------------------------------------------------

    def _keep_data(self, messages: list[Message]) -> list[Message]:
        """Drop (and count) transport errors; what remains are records of our partitions."""
        good: list[Message] = []
        for m in self._blocked.admit(messages):
            err = m.error()
            if err is None:
                good.append(m)
            else:
                if is_fatal(err):
                    self._clients.errors.fatal = True
                elif err.code() == KafkaError._AUTO_OFFSET_RESET:
                    partition = m.partition()
                    if partition is not None and partition not in self._log_range.held:
                        # the position fell outside the log while reading (retention, truncation)
                        self._log_range.hold(self._clients.kafka, partition, str(err))
                else:  # one summary line per cause, the metric, /readyz (consumer/_degraded.py)
                    self._metrics.degraded.failed(
                        KILL_EVENTS, self._config.topic, classify(err), sample=_where(m)
                    )
                self._metrics.swallowed.labels("kafka_consume").inc()
        if good:
            self._metrics.ready_flags["broker"] = True
            self._metrics.degraded.recovered(KILL_EVENTS, self._config.topic)
        return good

    def _decode(self, messages: list[Message]) -> tuple[list[Accepted], list[tuple[Message, str]]]:
        """Typed kill events, and the messages that are not (with their reason)."""
        decoded = decode_messages(messages, time.time_ns() // 1_000_000, self._limits)
        for m, error in decoded.failures:
            self._metrics.swallowed.labels("decode").inc()
            log.error("decoder raised", extra={"error": error, "offset": m.offset()})
        return decoded.accepted, decoded.rejected

    def _dead_letter_rated(self, batch: Batch, plan: Plan) -> bool:
        """Dead-letter the events rating left out (Plan.rejected: `id_reused`, `corrupt_state`,
        `pool_full`) before the write that moves the offsets past them is sent. A copy the
        broker did not take stops its partition there, like one of `_decode`'s: the batch is
        cut at the stop and True asks the writer to rate it again."""
        new = batch.drop_rejected(plan)
        if plan.unratable:
            self._metrics.corrupt_state.labels("rating").inc(plan.unratable)
            log.error("the engine could not rate stored states", extra={"events": plan.unratable})
        if not new:
            return False
        if plan.pool_full:
            log.warning(
                "rating pool full, events dead-lettered",
                extra={"events": len(plan.pool_full), "max_players": self._config.max_players},
            )
        reasons = {(a.partition, a.offset): r for a, r in plan.rejected}
        stops = self._clients.dead_letters.send(
            [(cast(Message, a.message), reasons[a.partition, a.offset]) for a in new],
            self._metrics.tick,
            {(a.partition, a.offset): a.event.id for a in new},
        )
        if not stops:
            return False
        self._blocked.stop(self._clients.kafka, stops)
        batch.cut(stops)
        return True

    def observe(self, size: int, plan: Plan, started: float) -> None:
        """Count a confirmed batch in the metrics."""
        m = self._metrics
        m.consumed.inc(size)
        m.counted.inc(plan.counted)
        m.duplicate.inc(plan.duplicates)
        m.late.inc(plan.late)
        m.logs.late.add(plan.late, plan.late_sample)
        m.batch_size.observe(size)
        m.batch_duration.observe(time.perf_counter() - started)
        m.pool_players.set(plan.player_count)
        now_ms = time.time_ns() // 1_000_000
        observe_ages(m.event_to_commit, now_ms, plan.counted_ts)


def _lay_over(view: View, plan: Plan) -> None:
    """Make `view` (read before `plan`'s write ran) what Redis holds once it has run: its pairs,
    event ids, offsets, watermarks, S and P (its players come from the overlay the read used)."""
    view.cooldowns.update(plan.cooldowns)
    event_ids = view.event_ids
    for key, digest, _ts in plan.event_ids:  # a loop: several times faster than update(generator)
        event_ids[key] = digest
    view.offsets.update(plan.offsets)
    view.watermarks.update(plan.watermarks)
    view.player_count += plan.count_delta
    view.sigma_units_total += (plan.sigma_hi_delta << 32) + plan.sigma_lo_delta


def _where(m: Message) -> str:
    """topic/partition@offset of a consume error, "" for one of no partition (the group's)."""
    if m.topic() is None or m.partition() is None:
        return ""
    return f"{m.topic()}/{m.partition()}@{m.offset()}"


def _stopped(stops: dict[int, Stop], partition: int | None, offset: int | None) -> bool:
    """Whether a message is at or after its partition's stop."""
    stop = stops.get(cast(int, partition))
    return stop is not None and cast(int, offset) >= stop.offset
