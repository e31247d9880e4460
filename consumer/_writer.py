"""Rating batches against Redis and writing them, with one write held back or in flight.

A rated batch's write is sent right behind the next batch's read, on one connection, so Redis
answers the read and then runs the write while the next batch is rated on top of it (consumer/
README.md, "Pipelining and the state cache"). A write that did not apply as computed (another
instance changed a player or an offset, or Redis failed under it) is redone from a fresh read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from consumer._batch import Accepted, Plan, View, rate_batch
from consumer._cache import Overlay, StateCache
from consumer._keys import Keys
from consumer._metrics import Metrics
from consumer._retry import REDIS_DOWN, RedisRetry
from consumer._store import Conflict, PendingWrite, Store
from engine import Params

log = logging.getLogger("adr.consumer")


class Batch:
    """The decoded events of one batch and what its write must record."""

    __slots__ = (
        "accepted",
        "next_offsets",
        "pairs",
        "partitions",
        "players",
        "refused",
        "size",
        "sources",
        "started",
    )

    def __init__(
        self,
        accepted: list[Accepted],
        next_offsets: dict[int, int],
        size: int,
        started: float,
        keys: Keys,
        sources: Mapping[tuple[int, int], object] | None = None,
    ) -> None:
        events = [a.event for a in accepted]
        self.accepted = accepted
        self.next_offsets = next_offsets
        self.players = list(dict.fromkeys(p for e in events for p in (e.attacker, e.victim)))
        self.pairs = list(dict.fromkeys(keys.cooldown(e.attacker, e.victim) for e in events))
        self.partitions = list(next_offsets)
        self.size = size
        self.started = started
        self.sources = sources or {}
        """(partition, offset) -> the Kafka message, for a refusal's dead letter."""
        self.refused: set[tuple[int, int]] = set()
        """(partition, offset) of the events refused (`pool_full`) and dead-lettered so far."""


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
        max_players: int | None = None,
        on_refused: Callable[[Batch, list[Accepted]], None] = lambda _b, _r: None,
    ) -> None:
        """`on_refused(batch, events)` dead-letters events refused with `pool_full`; it runs
        before any write of a plan that leaves them out, and once per event."""
        self._store = store
        self._cache = cache
        self._keys = keys
        self._params = params
        self._max_age_ms = max_age_ms
        self._metrics = metrics
        self._retry = retry
        self._max_players = max_players
        self._on_refused = on_refused

    def rate(self, batch: Batch) -> Plan:
        """Dedup and rate `batch` on a fresh read (players in the cache are not read)."""
        view = self._store.read_view(
            batch.players, batch.pairs, batch.partitions, self._cache.entries
        )
        return self._rate(batch, view)

    def _rate(self, batch: Batch, view: View) -> Plan:
        """rate_batch, then the dead letters of what it refused (before the plan is written)."""
        plan = rate_batch(
            batch.accepted,
            batch.next_offsets,
            view,
            self._keys,
            self._params,
            self._max_players,
            batch.refused,
        )
        new = [a for a in plan.pool_full if (a.partition, a.offset) not in batch.refused]
        if new:
            self._on_refused(batch, new)
            batch.refused.update((a.partition, a.offset) for a in new)
        return plan

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
                batch.partitions,
                Overlay(plan.states, self._cache),
                plan,
                self._params.cooldown_ms,
                self._max_age_ms,
            )
        except REDIS_DOWN as exc:
            self._redis_failed(exc)  # whether the write ran is unknown: the redo finds out
            return None, self.write(ahead.batch, None)
        # What Redis holds once the write ahead has run: its players, pairs, offsets, S and P.
        view.cooldowns.update(plan.cooldowns)
        view.offsets.update(plan.offsets)
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
                    self._store.write(plan, self._params.cooldown_ms, self._max_age_ms)
                except Conflict as exc:
                    self._conflict(batch, exc)
                    plan = None
                    continue
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
        except REDIS_DOWN as exc:
            self._redis_failed(exc)
            self._cache.forget(ahead.batch.players)
            return False
        self._applied(ahead.plan, started)
        return True

    def _applied(self, plan: Plan, started: float) -> None:
        self._metrics.redis_write.observe(time.perf_counter() - started)
        self._metrics.ready_flags["redis"] = True
        self._cache.store(plan.states)

    def _conflict(self, batch: Batch, exc: Conflict) -> None:
        self._cache.forget(batch.players)
        self._metrics.conflicts.inc()
        log.info("concurrent change, recomputing batch", extra={"what": exc.what})

    def _redis_failed(self, exc: Exception) -> None:
        self._metrics.ready_flags["redis"] = False
        self._metrics.swallowed.labels("redis_write").inc()
        log.warning("redis failed under a write, redoing its batch", extra={"error": str(exc)})
