"""One batch's life, the one place where its stages are ordered, read top to bottom:

    1. read         up to `batch_size` messages from the kill log (`read`)
    2. decode       transport errors dropped, kill events decoded and checked; the rejected
                    ones dead-lettered, and a partition whose copy the broker did not take cut
                    at that message (`decode`, the work in consumer/_intake.py)
    3. rate         dedup and rate on what the pool holds (the pure rating step, the pool's
                    loop: consumer/_batch.py or consumer/_model_batch.py); the events it leaves
                    out come back as a value and are dead-lettered before any write leaves them
                    out (`rate`)
    4. write ahead  the rated batch is held; its atomic write goes out right behind the next
                    batch's read, on one connection, and the next batch is rated on top of what
                    that write will leave while the pool runs it (`write_ahead`)
    5. confirm      the held write is waited for; one that did not apply as computed is redone
                    from a fresh read (`redo`) and the batch behind it rated again afresh
    6. commit       Kafka's group offsets follow the pool's (lag dashboards only) (`commit`)
    7. emit         the relay sends the confirmed rating changes to Kafka (`emit`)

and the two ways back: the **redo** of a write that conflicted or whose outcome is unknown (the
rules: consumer/_write_policy.py), and the **rewind** when the pool holds less than it
acknowledged (`rewind`). A batch with no successor within one poll is written at once (`flush`),
so a quiet topic never holds its commit back.

The lifecycle talks to its ports (consumer/_ports.py): the kill log, the pool store, the
dead-letter sink and the outbox. Partition state (positions, acknowledged offsets, the epoch,
held and stopped partitions) has one owner, consumer/_partitions.py.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import NamedTuple, cast

import redis
from confluent_kafka import KafkaException, Message

from consumer._batch import Plan, View
from consumer._clients import Clients
from consumer._collector import Collector
from consumer._errors import CorruptState, RedisBehind
from consumer._intake import Accepted, Batch, Intake
from consumer._metrics import Metrics, observe_ages
from consumer._partitions import Partitions, commit_at
from consumer._ports import PendingWrite, RateStep
from consumer._retry import RedisRetry, retriable
from consumer._stages import NO_STAGES, RELAY, StageTimer
from consumer._view import Overlay, StateCache
from consumer._write_policy import WritePolicy
from consumer.config import Config
from redis_layout import Conflict

log = logging.getLogger("adr.consumer")


class Ready(NamedTuple):
    """A rated batch whose write is not sent yet (the batch held)."""

    batch: Batch
    plan: Plan


class Lifecycle:
    """The stages of one pipeline's batches, and the one batch held (rated, write not sent)."""

    def __init__(
        self,
        config: Config,
        clients: Clients,
        metrics: Metrics,
        partitions: Partitions,
        retry: RedisRetry,
        rate_step: RateStep,
        collector: Collector,
        stages: StageTimer = NO_STAGES,
    ) -> None:
        self._config = config
        self._clients = clients
        self._metrics = metrics
        self._partitions = partitions
        self._retry = retry
        self.rate_step = rate_step
        """The pure rating step: the pool's loop with its settings (consumer/_ports.py)."""
        self._collector = collector
        self._stages = stages
        self._intake = Intake(config, clients, metrics, partitions, stages)
        self.cache = StateCache(config.state_cache_players)
        self.policy = WritePolicy(self.cache, metrics)
        self.held: Ready | None = None

    # -- a batch, step by step ----------------------------------------------------------------

    def step(self) -> None:
        """One turn of the pipeline's loop: step 1, then steps 2–7 for what it read (the loop
        never holds the batch)."""
        messages = self.read()
        if messages:
            self.process(messages)

    def read(self) -> list[Message]:
        """Step 1. The next batch. While a batch is held, take only what is already here, so
        that a quiet topic never holds its commit back: with nothing here, write it first."""
        kafka, config = self._clients.kafka, self._config
        try:
            messages = kafka.consume(config.batch_size, 0) if self.held is not None else []
            if not messages:
                self.flush()
                messages = kafka.consume(config.batch_size, config.batch_wait_ms / 1000)
        except KafkaException as exc:
            self._clients.errors.raise_if_fatal(exc)
            raise
        self._clients.errors.raise_if_fatal()  # a batch read with a fatal error is not applied
        return messages

    def process(self, messages: list[Message]) -> None:
        """Steps 2–7 for one batch: decode it; rate it behind the held batch's write, which is
        confirmed, committed and emitted meanwhile; then hold it."""
        # Step 2. Decode (a batch with nothing to apply changes nothing).
        batch = self.decode(messages)
        if batch is None:
            return
        ahead, self.held = self.held, None
        try:
            # Step 3 on a fresh read (nothing held), or steps 3–7 of the batch held with this
            # one rated behind its write.
            plan = self.rate_fresh(batch) if ahead is None else self.write_ahead(batch, ahead)
        except RedisBehind as exc:
            self.rewind(exc)  # this batch (and the one ahead) come again from the log
            return
        # Step 4. Hold it: its write goes out behind the next batch's read.
        self.held = Ready(batch, plan)

    def decode(self, messages: list[Message]) -> Batch | None:
        """Step 2. The batch's kill events and next offsets (None: nothing to apply): transport
        errors dropped, the rejected messages dead-lettered first, a partition whose copy the
        broker did not take stopped there (consumer/_intake.py)."""
        return self._intake.take(messages)

    def rate(self, batch: Batch, view: View) -> Plan:
        """Step 3. Dedup and rate `batch` on `view`. The events rating leaves out (`id_reused`,
        `corrupt_state`, `pool_full`) are dead-lettered before any write that leaves them out;
        a copy the broker did not take cuts the batch there, and the rest is rated again."""
        while True:
            plan = self.rate_step(
                batch.accepted,
                batch.next_offsets,
                view,
                refused=batch.dead_lettered,
                stages=self._stages,
            )
            rejected = batch.drop_rejected(plan)
            self._report_rejected(plan, rejected)
            if not rejected:
                return plan
            stops = self._intake.dead_letter(
                [(cast(Message, a.message), why) for a, why in rejected],
                {(a.partition, a.offset): a.event.id for a, _why in rejected},
            )
            if not stops:
                return plan
            batch.cut({p: stop.offset for p, stop in stops.items()})

    def rate_fresh(self, batch: Batch) -> Plan:
        """Step 3 on a fresh read (retried while Redis fails)."""
        return self._retry(lambda: self._read_and_rate(batch), "read")

    def write_ahead(self, batch: Batch, ahead: Ready) -> Plan:
        """Steps 3–7 behind a held batch: `ahead`'s write goes out right behind `batch`'s read;
        `batch` is rated on top of what that write will leave while Redis runs it; the write is
        confirmed (or redone), committed and emitted. Returns `batch`'s plan."""
        # Step 4. Write ahead: the next batch's read, then the held batch's write.
        try:
            view, write = self._send_behind(batch, ahead.plan)
        except (redis.RedisError, CorruptState) as exc:
            self.policy.failed(exc, ahead.batch, ahead.plan)  # did it run? the redo finds out
            self.confirmed(ahead.batch, self.redo(ahead.batch))
            return self.rate_fresh(batch)
        try:
            self._partitions.check(view.offsets, view.epoch)  # read before the write: still due
        except RedisBehind:
            _settle(write)
            raise
        # Step 3. Rate on what the pool holds once the write ahead has run.
        _lay_over(view, ahead.plan)
        plan = self.rate(batch, view)
        # Step 5. Confirm: wait for the write ahead; redo it if it did not apply as computed.
        if self._confirm(ahead, write):
            self.confirmed(ahead.batch, ahead.plan)
            return plan
        self.confirmed(ahead.batch, self.redo(ahead.batch))
        return self.rate_fresh(batch)  # rated on a state the write ahead did not leave

    def confirmed(self, batch: Batch, plan: Plan) -> None:
        """Steps 6–7. The batch is in Redis: move on, commit, count it, and emit what is
        confirmed (Redis is idle until the next write is sent)."""
        # Step 6. Commit.
        self._partitions.committed(batch.next_offsets)
        self.commit(batch.next_offsets, plan.epoch)
        self.observe(batch.size, plan, batch.started)
        # Step 7. Emit.
        self.emit()
        self._collector.after_batch()

    def commit(self, next_offsets: dict[int, int], epoch: int = 0) -> None:
        """Step 6. Kafka's group offsets follow Redis (for lag dashboards, and to notice a Redis
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
        """Step 7. Relay the outbox to Kafka (also between batches while nothing is held)."""
        self._stages.start()
        try:
            self._retry(self._clients.relay.pump, "relay")
        except KafkaException as exc:
            self._clients.errors.raise_if_fatal(exc)
            raise
        finally:
            self._stages.stop(RELAY)

    # -- the way back -------------------------------------------------------------------------

    def redo(self, batch: Batch) -> Plan:
        """Step 5, again: read, rate and write `batch` until a write applies as computed."""
        return self.write(batch, None)

    def write(self, batch: Batch, plan: Plan | None) -> Plan:
        """Write `plan` (None: rate `batch` on a fresh read first) and wait; a conflict re-reads,
        re-rates and writes again (consumer/_write_policy.py). Returns the plan whose effect the
        batch had (`WritePolicy.ran`)."""
        unsure = self.policy.take_unsure()

        def attempt() -> Plan:
            nonlocal plan, unsure
            while True:
                if plan is None:
                    plan = self._read_and_rate(batch)
                started = time.perf_counter()
                try:
                    self._clients.store.write(plan)
                except Conflict as exc:
                    self.policy.conflict(batch, exc)
                    plan = None
                    continue
                except redis.ResponseError as exc:  # refused: the script did not run
                    if self.policy.refused(batch, exc):
                        plan = None
                    raise
                except redis.RedisError:
                    unsure = plan  # the reply was lost: whether the script ran is unknown
                    raise
                self._applied(plan, started)
                return self.policy.ran(plan, unsure, batch)

        return self._retry(attempt, "write")

    def flush(self) -> None:
        """Write, confirm, commit and emit the batch held, if any."""
        ahead, self.held = self.held, None
        if ahead is not None:
            try:
                self.confirmed(ahead.batch, self.write(ahead.batch, ahead.plan))
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
        confirmed = self._partitions.confirmed
        if self.held is not None or not confirmed:
            return
        try:
            self._partitions.check(self._clients.store.read_offsets(list(confirmed)))
        except RedisBehind as exc:
            self.rewind(exc)
        except redis.RedisError as exc:
            if not retriable(exc):
                raise
            self._metrics.swallowed.labels("redis_offset_check").inc()

    # -- inside the steps ---------------------------------------------------------------------

    def _report_rejected(self, plan: Plan, rejected: list[tuple[Accepted, str]]) -> None:
        if plan.unratable:
            self._metrics.corrupt_state.labels("rating").inc(plan.unratable)
            log.error("the engine could not rate stored states", extra={"events": plan.unratable})
        if rejected and plan.pool_full:
            log.warning(
                "rating pool full, events dead-lettered",
                extra={"events": len(plan.pool_full), "max_players": self._config.max_players},
            )

    def _read_and_rate(self, batch: Batch) -> Plan:
        """Read what `batch` needs (players in the state cache are not read), check the read
        against what this instance saw acknowledged, and rate."""
        view = self._clients.store.read_view(
            batch.players,
            batch.pairs,
            self._partitions.watched(batch.partitions),
            self.cache.entries,
            batch.ids,
        )
        self._partitions.check(view.offsets, view.epoch)
        return self.rate(batch, view)

    def _send_behind(self, batch: Batch, plan: Plan) -> tuple[View, PendingWrite]:
        """`batch`'s read, then `plan`'s write, on one connection in that order: the view is what
        Redis held before the write (players `plan` changes are taken from it, not read)."""
        return self._clients.store.read_view_then_write(
            batch.players,
            batch.pairs,
            self._partitions.watched(batch.partitions),
            Overlay(plan.states, self.cache),
            plan,
            batch.ids,
        )

    def _confirm(self, ahead: Ready, write: PendingWrite) -> bool:
        """Step 5. True when the write sent behind the read applied as computed (False: it is to
        be redone)."""
        started = time.perf_counter()
        try:
            write.result()
        except Conflict as exc:
            self.policy.conflict(ahead.batch, exc)
            return False
        except redis.RedisError as exc:
            self.policy.failed(exc, ahead.batch, ahead.plan)
            return False
        self._applied(ahead.plan, started)
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
        observe_ages(m.event_to_commit, time.time_ns() // 1_000_000, plan.counted_ts)

    def _applied(self, plan: Plan, started: float) -> None:
        """A write applied as computed: Redis acknowledged its offsets and states."""
        self._metrics.redis_write.observe(time.perf_counter() - started)
        self.cache.store(plan.states)
        self._partitions.acknowledged(plan.offsets)


def _lay_over(view: View, plan: Plan) -> None:
    """Make `view` (read before `plan`'s write ran) what Redis holds once it has run: its pairs,
    event ids, offsets, watermarks, S and P, the season the board shows (its players come from
    the overlay the read used)."""
    view.cooldowns.update(plan.cooldowns)
    event_ids = view.event_ids
    for key, digest, _ts in plan.event_ids:  # a loop: several times faster than update(generator)
        event_ids[key] = digest
    view.offsets.update(plan.offsets)
    view.watermarks.update(plan.watermarks)
    view.player_count += plan.count_delta
    view.sigma_units_total += (plan.sigma_hi_delta << 32) + plan.sigma_lo_delta
    view.ladder = max(view.ladder, plan.season[2])  # a new season's board it started


def _settle(write: PendingWrite) -> None:
    """Wait for a write whose outcome no longer matters (the caller re-reads everything), so that
    its reply does not stay on the connection."""
    with contextlib.suppress(Conflict, redis.RedisError):
        write.result()
