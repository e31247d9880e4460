"""Rating batches against Redis and writing them, with one write held back or in flight.

A rated batch's write is sent right behind the next batch's read, on one connection, so Redis
answers the read and then runs the write while the next batch is rated on top of it (consumer/
README.md, "Pipelining and the state cache"). A write that did not apply as computed (another
instance changed a player or an offset, or Redis failed under it) is redone from a fresh read.

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

from consumer._batch import Accepted, Plan, View, rate_batch
from consumer._cache import Overlay, StateCache
from consumer._dead_letters import Stop
from consumer._errors import CorruptState, RedisBehind
from consumer._metrics import Metrics
from consumer._retry import RedisRetry, refusal, retriable
from consumer._store import Conflict, PendingWrite, Store
from engine import Params
from redis_layout import Keys

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
        events = [a.event for a in accepted]
        self.accepted = accepted
        self.next_offsets = next_offsets
        self.players = list(dict.fromkeys(p for e in events for p in (e.attacker, e.victim)))
        self.pairs = list(dict.fromkeys(keys.cooldown(e.attacker, e.victim) for e in events))
        self.ids = list(dict.fromkeys(keys.event_id(e.id) for e in events))
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
        store: Store,
        cache: StateCache,
        keys: Keys,
        params: Params,
        max_age_ms: int,
        metrics: Metrics,
        retry: RedisRetry,
        on_rejected: Callable[[Batch, Plan], bool] = lambda _batch, _plan: False,
        max_players: int | None = None,
    ) -> None:
        """`on_rejected(batch, plan)` dead-letters the plan's rejected events (`id_reused`,
        `corrupt_state`, `pool_full` beyond `max_players`) before any write of a plan that
        leaves them out."""
        self._store = store
        self._cache = cache
        self._keys = keys
        self._params = params
        self._max_age_ms = max_age_ms
        self._metrics = metrics
        self._retry = retry
        self._on_rejected = on_rejected
        """Called with every plan that rejects events, before that plan's write is sent; True:
        the batch was cut (a dead letter not delivered) and is rated again."""
        self.confirmed: dict[int, int] = {}
        """partition -> the next offset Redis acknowledged for it, as this instance last read or
        wrote it (set on assignment, advanced by each write). Redis holding less: RedisBehind."""
        self._max_players = max_players

    def rate(self, batch: Batch) -> Plan:
        """Dedup and rate `batch` on a fresh read (players in the cache are not read)."""
        view = self._store.read_view(
            batch.players, batch.pairs, self._watched(batch), self._cache.entries, batch.ids
        )
        self.check(view.offsets)
        return self._rate(batch, view)

    def _rate(self, batch: Batch, view: View) -> Plan:
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
            self._store.lateness_ms,
            self._max_players,
            batch.dead_lettered,
        )
        # A refusal (`pool_full`) is a rejection like the others: dead-lettered, with delivery
        # confirmed, before any write that leaves it out, and left out of every later rating.
        plan.rejected.extend((a, POOL_FULL) for a in plan.pool_full)
        return plan

    def check(self, stored: dict[int, int | None]) -> None:
        """RedisBehind if Redis holds a lower next offset than confirmed for a partition."""
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

    def rate_behind(self, batch: Batch, ahead: Ready) -> tuple[Plan | None, Plan]:
        """Send `ahead`'s write right behind `batch`'s read, rate `batch` on top of what the
        write will leave while Redis runs it, then wait for the write.

        Returns (`batch`'s plan, or None when `ahead` did not apply as computed and `batch` must
        be rated afresh; the plan `ahead` was finally written with).
        """
        plan = ahead.plan
        try:
            view, write = self._store.read_view_then_write(
                batch.players,
                batch.pairs,
                self._watched(batch),
                Overlay(plan.states, self._cache),
                plan,
                self._params.pair_memory_ms,
                self._max_age_ms,
                batch.ids,
            )
        except (redis.RedisError, CorruptState) as exc:
            if isinstance(exc, redis.RedisError) and not retriable(exc):
                raise
            self._redis_failed(exc)  # whether the write ran is unknown: the redo finds out
            return None, self.write(ahead.batch, None)
        try:
            self.check(view.offsets)  # read before the write ahead: confirmed is still due
        except RedisBehind:
            self._settle(write)
            raise
        # What Redis holds once the write ahead has run: its players, pairs, offsets, S and P.
        view.cooldowns.update(plan.cooldowns)
        view.event_ids.update((key, digest) for key, digest, _ts in plan.event_ids)
        view.offsets.update(plan.offsets)
        view.watermarks.update(plan.watermarks)
        view.player_count += plan.count_delta
        view.sigma_units_total += (plan.sigma_hi_delta << 32) + plan.sigma_lo_delta
        mine = self._rate(batch, view)
        if self._wait(ahead, write):
            return mine, plan
        return None, self.write(ahead.batch, None)

    def write(self, batch: Batch, plan: Plan | None) -> Plan:
        """Write `plan` (None: rate `batch` first) and wait; on a concurrent change re-read,
        re-rate and write again until it holds. Returns the plan that was written."""

        def attempt() -> Plan:
            nonlocal plan
            while True:
                if plan is None:
                    plan = self.rate(batch)
                started = time.perf_counter()
                try:
                    self._store.write(plan, self._params.pair_memory_ms, self._max_age_ms)
                except Conflict as exc:
                    self._conflict(batch, exc)
                    plan = None
                    continue
                except redis.ResponseError as exc:
                    if refusal(exc) == "WRONGTYPE":  # e.g. a cached player's key replaced:
                        self._cache.forget(batch.players)  # the retry reads it, and quarantines
                        plan = None
                    raise
                self._applied(plan, started)
                return plan

        return self._retry(attempt, "write")

    def _wait(self, ahead: Ready, write: PendingWrite) -> bool:
        """True when the write sent behind the read applied as computed."""
        started = time.perf_counter()
        try:
            write.result()
        except Conflict as exc:
            self._conflict(ahead.batch, exc)
            return False
        except redis.RedisError as exc:
            if not retriable(exc):
                raise
            self._redis_failed(exc)
            self._cache.forget(ahead.batch.players)
            return False
        self._applied(ahead.plan, started)
        return True

    def _settle(self, write: PendingWrite) -> None:
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

    def _redis_failed(self, exc: Exception) -> None:
        self._metrics.ready_flags["redis"] = False
        self._metrics.swallowed.labels("redis_write").inc()
        code = refusal(exc)
        if code is not None:
            self._metrics.redis_refused.labels(code).inc()
        log.warning(
            "redis failed under a write, redoing its batch",
            extra={"error": str(exc), "code": code or "unavailable"},
        )
