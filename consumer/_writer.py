"""Rating batches against Redis and writing them: the Redis side of the batch lifecycle.

`Writer` reads what a batch needs (players in the state cache are not read), rates it, and
writes it; a write that did not apply as computed (another instance changed a player or an
offset, or Redis failed under it) is redone from a fresh read. It also sends one write behind
the next batch's read (`send_behind`) and waits for it (`wait`); when that happens, and what is
done meanwhile, is the write-ahead of consumer/_lifecycle.py.

Every read also checks that Redis still holds, for each partition this instance applies, at
least the next offset it last wrote there: a lower one means Redis lost acknowledged writes, and
`RedisBehind` tells the pipeline to go back to the stored offsets (consumer/README.md).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Final, NamedTuple

import redis

from consumer._batch import Accepted, Plan, View, batch_reads, rate_batch
from consumer._cache import Overlay, StateCache
from consumer._dead_letters import Stop
from consumer._epoch import PoolEpoch
from consumer._errors import RedisBehind
from consumer._metrics import Metrics
from consumer._ports import PendingWrite, PoolStore
from consumer._retry import RedisRetry, refusal, retriable
from consumer._stages import NO_STAGES, StageTimer
from engine import Params
from redis_layout import Conflict, Keys

log = logging.getLogger("adr.consumer")

POOL_FULL: Final = "pool_full"
"""Dead-letter reason of an event that would add players beyond `max_players`."""


class Batch:
    """The decoded events of one batch and what its write must record."""

    __slots__ = (
        "accepted",
        "dead_lettered",
        "ids",
        "next_offsets",
        "pairs",
        "partitions",
        "players",
        "size",
        "started",
    )

    def __init__(
        self,
        accepted: list[Accepted],
        next_offsets: dict[int, int],
        size: int,
        started: float,
        keys: Keys,
    ) -> None:
        self.accepted = accepted
        self.next_offsets = next_offsets
        self.players, self.pairs, self.ids = batch_reads(accepted, keys)
        self.partitions = list(next_offsets)
        self.size = size
        self.started = started
        self.dead_lettered: set[tuple[int, int]] = set()
        """(partition, offset) of the events rating left out and dead-lettered (Plan.rejected)."""

    def drop_rejected(self, plan: Plan) -> list[Accepted]:
        """The events of `plan.rejected` not dropped before; later ratings of the batch (a
        redo) no longer see them, so an event is never both dead-lettered and applied."""
        new = [
            a for a, _reason in plan.rejected if (a.partition, a.offset) not in self.dead_lettered
        ]
        if new:
            self.dead_lettered.update((a.partition, a.offset) for a in new)
            gone = self.dead_lettered
            self.accepted = [a for a in self.accepted if (a.partition, a.offset) not in gone]
        return new

    def cut(self, stops: Mapping[int, Stop]) -> None:
        """Leave out everything at or after each partition's stop (a dead letter the broker did
        not take); the partition's next offset becomes the stop."""
        at = {p: stop.offset for p, stop in stops.items()}
        for partition, offset in at.items():
            if partition in self.next_offsets:
                self.next_offsets[partition] = min(self.next_offsets[partition], offset)
        self.accepted = [
            a for a in self.accepted if a.partition not in at or a.offset < at[a.partition]
        ]


class Ready(NamedTuple):
    """A rated batch whose write is not sent yet."""

    batch: Batch
    plan: Plan


class Writer:
    """The Redis side of the pipeline for one rating pool and source topic."""

    def __init__(
        self,
        store: PoolStore,
        cache: StateCache,
        keys: Keys,
        params: Params,
        lateness_ms: int,
        metrics: Metrics,
        retry: RedisRetry,
        on_rejected: Callable[[Batch, Plan], bool] = lambda _batch, _plan: False,
        max_players: int | None = None,
        confirmed: dict[int, int] | None = None,
        stages: StageTimer = NO_STAGES,
        epoch: PoolEpoch | None = None,
    ) -> None:
        """`on_rejected(batch, plan)` dead-letters the plan's rejected events (`id_reused`,
        `corrupt_state`, `pool_full` beyond `max_players`) before any write of a plan that
        leaves them out. `stages` times the rating (consumer/_stages.py)."""
        self._store = store
        self._cache = cache
        self._keys = keys
        self._params = params
        self._lateness_ms = lateness_ms
        self._metrics = metrics
        self._retry = retry
        self._on_rejected = on_rejected
        """Called with every plan that rejects events, before that plan's write is sent; True:
        the batch was cut (a dead letter not delivered) and is rated again."""
        self.confirmed: dict[int, int] = {} if confirmed is None else confirmed
        """partition -> the next offset Redis acknowledged for it, as this instance last read or
        wrote it (set on assignment, advanced by each write). Redis holding less: RedisBehind."""
        self._max_players = max_players
        self._unsure: Plan | None = None
        """A plan whose write failed with its outcome unknown: the next `write` redoes its batch."""
        self._stages = stages
        self.epoch = PoolEpoch(metrics) if epoch is None else epoch
        """The highest pool epoch seen: a read showing a lower one is RedisBehind too."""

    def rate(self, batch: Batch) -> Plan:
        """Dedup and rate `batch` on a fresh read (players in the cache are not read)."""
        view = self._store.read_view(
            batch.players, batch.pairs, self._watched(batch), self._cache.entries, batch.ids
        )
        self.check(view.offsets, view.epoch)
        return self.rate_on(batch, view)

    def rate_on(self, batch: Batch, view: View) -> Plan:
        """Dedup and rate `batch` on `view`; rejected events are dead-lettered first (a batch
        cut at an undelivered one is rated again)."""
        plan = self._rate_once(batch, view)
        while plan.rejected and self._on_rejected(batch, plan):
            plan = self._rate_once(batch, view)  # the batch was cut at an undelivered one
        return plan

    def _rate_once(self, batch: Batch, view: View) -> Plan:
        plan = rate_batch(
            batch.accepted,
            batch.next_offsets,
            view,
            self._keys,
            self._params,
            self._lateness_ms,
            self._max_players,
            batch.dead_lettered,
            self._stages,
        )
        # A refusal (`pool_full`) is a rejection like the others: dead-lettered, with delivery
        # confirmed, before any write that leaves it out, and left out of every later rating.
        plan.rejected.extend((a, POOL_FULL) for a in plan.pool_full)
        return plan

    def check(self, stored: dict[int, int | None], epoch: int | None = None) -> None:
        """RedisBehind if Redis holds a lower next offset than confirmed for a partition, or a
        lower pool epoch than seen (`epoch` None: not read)."""
        if epoch is not None:
            self.epoch.observe(epoch)
        confirmed = self.confirmed
        for partition, offset in stored.items():
            floor = confirmed.get(partition)
            if floor is not None and (offset is None or offset < floor):
                raise RedisBehind(partition, offset, floor)

    def _watched(self, batch: Batch) -> list[int]:
        """The batch's partitions and every other one this instance applies: one read checks
        them all, so a loss shows at the next read whichever partitions the batch holds."""
        if len(self.confirmed) <= len(batch.partitions):
            return batch.partitions
        return list(dict.fromkeys([*batch.partitions, *self.confirmed]))

    def send_behind(self, batch: Batch, plan: Plan) -> tuple[View, PendingWrite]:
        """`batch`'s read, then `plan`'s write, on one connection in that order: the view is what
        Redis held before the write (players `plan` changes are taken from it, not read); the
        write runs while the caller computes (`wait` waits for it)."""
        return self._store.read_view_then_write(
            batch.players,
            batch.pairs,
            self._watched(batch),
            Overlay(plan.states, self._cache),
            plan,
            batch.ids,
        )

    def write(self, batch: Batch, plan: Plan | None) -> Plan:
        """Write `plan` (None: rate `batch` first) and wait; on a concurrent change re-read,
        re-rate and write again until it holds. Returns the plan whose effect the batch had
        (see `_ran`)."""
        unsure, self._unsure = self._unsure, None

        def attempt() -> Plan:
            nonlocal plan, unsure
            while True:
                if plan is None:
                    plan = self.rate(batch)
                started = time.perf_counter()
                try:
                    self._store.write(plan)
                except Conflict as exc:
                    self._conflict(batch, exc)
                    plan = None
                    continue
                except redis.ResponseError as exc:  # refused: the script did not run
                    if refusal(exc) == "WRONGTYPE":  # e.g. a cached player's key replaced:
                        self._cache.forget(batch.players)  # the retry reads it, and quarantines
                        plan = None
                    raise
                except redis.RedisError:
                    unsure = plan  # the reply was lost: whether the script ran is unknown
                    raise
                self._applied(plan, started)
                return _ran(plan, unsure, batch)

        return self._retry(attempt, "write")

    def wait(self, ahead: Ready, write: PendingWrite) -> bool:
        """True when the write sent behind the read applied as computed (False: it is to be
        redone with `write(ahead.batch, None)`)."""
        started = time.perf_counter()
        try:
            write.result()
        except Conflict as exc:
            self._conflict(ahead.batch, exc)
            return False
        except redis.RedisError as exc:
            if not retriable(exc):
                raise
            self.redis_failed(exc, ahead.plan)
            self._cache.forget(ahead.batch.players)
            return False
        self._applied(ahead.plan, started)
        return True

    def settle(self, write: PendingWrite) -> None:
        """Wait for a write whose outcome no longer matters (the caller re-reads everything),
        so that its reply does not stay on the connection."""
        with contextlib.suppress(Conflict, redis.RedisError):
            write.result()

    def _applied(self, plan: Plan, started: float) -> None:
        self._metrics.redis_write.observe(time.perf_counter() - started)
        self._metrics.ready_flags["redis"] = True
        self._cache.store(plan.states)
        self.confirmed.update(plan.offsets)

    def _conflict(self, batch: Batch, exc: Conflict) -> None:
        self._cache.forget(batch.players)
        self._metrics.conflicts.inc()
        log.info("concurrent change, recomputing batch", extra={"what": exc.what})

    def redis_failed(self, exc: Exception, sent: Plan | None = None) -> None:
        """Redis failed under the write of `sent` (whether it ran is unknown): counted; the
        caller redoes it with `write`, which finds out."""
        if sent is not None and not isinstance(exc, redis.ResponseError):
            self._unsure = sent
        self._metrics.ready_flags["redis"] = False
        self._metrics.swallowed.labels("redis_write").inc()
        code = refusal(exc)
        if code is not None:
            self._metrics.redis_refused.labels(code).inc()
        log.warning(
            "redis failed under a write, redoing its batch",
            extra={"error": str(exc), "code": code or "unavailable"},
        )


def _ran(written: Plan, unsure: Plan | None, batch: Batch) -> Plan:
    """The plan whose effect `batch` had. A write whose reply was lost (`unsure`) may have run:
    then the redo's fresh read shows every event of the batch applied, and the redo's plan
    counts none of them (`already_applied`); the lost plan's counts (counted, duplicates, late,
    event times) are the batch's, and the metrics take them from it."""
    if unsure is not None and batch.accepted and written.already_applied == len(batch.accepted):
        return unsure
    return written
