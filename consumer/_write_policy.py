"""What a batch write that did not apply as computed means, and what follows: the consumer's
retry, conflict and unsure-outcome rules in one place (consumer/_lifecycle.py applies them).

- **Conflict** (the script found a checked value moved: another instance wrote a player, an
  offset, an event id, or raised the epoch): nothing was written. The batch's players leave the
  state cache (one of them is stale) and the batch is read, rated and written again.
- **Redis failed under the write** (the connection dropped, a timeout): whether the script ran
  is unknown. The plan is remembered as *unsure* and the batch is redone from a fresh read: if
  the script ran, that read shows the batch applied and the redo counts none of its events
  (`already_applied`), so the counts are the unsure plan's (`ran`).
- **Redis refused the write** (OOM, READONLY, BUSY, WRONGTYPE, ...: consumer/_retry.py): the
  script did not run. It is retried as written, except WRONGTYPE: a key of a cached player may
  have been replaced, so the batch's players leave the cache and the retry reads them (and
  quarantines one that is corrupt).
- Any other error is a bug and stops the process.
"""

from __future__ import annotations

import logging

import redis

from consumer._batch import Plan
from consumer._intake import Batch
from consumer._metrics import Metrics
from consumer._retry import refusal, retriable
from consumer._view import StateCache
from redis_layout import Conflict

log = logging.getLogger("adr.consumer")


class WritePolicy:
    """The rules above, for one pipeline: they forget cache entries, count and log; the
    lifecycle decides the order of what is read, rated and written again."""

    def __init__(self, cache: StateCache, metrics: Metrics) -> None:
        self._cache = cache
        self._metrics = metrics
        self._unsure: Plan | None = None
        """A plan whose write failed with its outcome unknown: the next redo finds out."""

    def conflict(self, batch: Batch, exc: Conflict) -> None:
        """A concurrent change: the batch is redone from a fresh read."""
        self._cache.forget(batch.players)
        self._metrics.conflicts.inc()
        log.info("concurrent change, recomputing batch", extra={"what": exc.what})

    def failed(self, exc: Exception, batch: Batch, sent: Plan | None) -> None:
        """Redis failed under the write of `sent` (None: before anything was sent), or a read
        sent with it showed corrupt state. Retriable: counted, remembered as unsure (unless
        Redis refused it: then it did not run), and the batch's players leave the cache; the
        caller redoes the batch. Anything else is raised."""
        if isinstance(exc, redis.RedisError) and not retriable(exc):
            raise exc
        if sent is not None and not isinstance(exc, redis.ResponseError):
            self._unsure = sent
        self._cache.forget(batch.players)
        metrics = self._metrics
        metrics.swallowed.labels("redis_write").inc()
        code = refusal(exc)
        if code is not None:
            metrics.redis_refused.labels(code).inc()
        log.warning(
            "redis failed under a write, redoing its batch",
            extra={"error": str(exc), "code": code or "unavailable"},
        )

    def refused(self, batch: Batch, exc: redis.ResponseError) -> bool:
        """The write was refused (the script did not run); True: rate the batch again before
        the retry (WRONGTYPE: a cached player's key may have been replaced)."""
        if refusal(exc) == "WRONGTYPE":
            self._cache.forget(batch.players)
            return True
        return False

    def lost_reply(self, plan: Plan) -> None:
        """The write's reply was lost (the connection dropped after it was sent)."""
        self._unsure = plan

    def take_unsure(self) -> Plan | None:
        """The unsure plan, if any, handed to the redo that finds out (and forgotten here)."""
        unsure, self._unsure = self._unsure, None
        return unsure

    @staticmethod
    def ran(written: Plan, unsure: Plan | None, batch: Batch) -> Plan:
        """The plan whose effect `batch` had. A write whose reply was lost (`unsure`) may have
        run: then the redo's fresh read shows every event of the batch applied, and the redo's
        plan counts none of them (`already_applied`); the lost plan's counts (counted,
        duplicates, late, event times) are the batch's, and the metrics take them from it."""
        applied_all = batch.accepted and written.already_applied == len(batch.accepted)
        if unsure is not None and applied_all:
            return unsure
        return written
