"""`adr history`: the rating-history reader. It consumes the rating-changes topic (its own
consumer group) and keeps each player's last `--points` changes in a Redis list
`{ns}:history:<id>` (redis_layout/history_codec.py), which `adr serve`'s profiles read.

Why a list per player in the pool's Redis: the profile reads it in the same read-only script as
the player's hash (one round trip, one state), a list append and trim are O(new points), and a
bounded list costs about 60 B a point (50 points: about 3 KB a player). The consumer's write is
untouched: the history is a view derived from the topic, written by a process of its own.

Order and redelivery: the topic is keyed by player, so one player's changes arrive in order on
one partition; the append script (history_append.lua) keeps only changes above the list's last
(epoch, seq), so a change delivered again (a restart before the commit, a rebalance, the
consumer's at-least-once relay) changes nothing, and a newer epoch's change replaces the
changes the pool lost. Each list written also gets its time to live again (`--ttl`, 30 days by
default): a player who has no rating change for that long loses the list, so the lists of players
who stopped playing do not stay in Redis for ever (their profile then shows no history; the next
change starts a new list). Offsets are committed after the batch is in Redis: at least once into an
idempotent write. A change without a seq (a producer before seq) has no order and is skipped,
as is a message that does not decode (counted and logged, rate-limited; this view has no
dead-letter topic: the consumer's own DLQ holds bad kill events, and the topic's messages are the
consumer's own).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any, Final

import redis
from prometheus_client import CollectorRegistry, Counter

from redis_layout import Keys, scripts
from redis_layout.history_codec import HistoryPoint, encode_history_point
from runtime.logs import RepeatThrottle
from schemas import RatingChange, SchemaError, decode_rating_change

_log = logging.getLogger("adr.history")
_log.addFilter(RepeatThrottle())
RETRY_S: Final = 1.0


def history_point(change: RatingChange) -> HistoryPoint:
    return HistoryPoint(
        change.epoch, change.seq, change.ts, change.mu_after, change.sigma_after, change.tier_after
    )


class HistoryStore:
    """Appends rating changes to the players' history lists of one pool."""

    def __init__(self, client: redis.Redis, namespace: str, points: int, ttl_s: float = 0) -> None:
        """`ttl_s`: each list written lives this long after its last write (0: for ever)."""
        if points < 1:
            raise ValueError("a history keeps at least 1 point")
        if ttl_s < 0:
            raise ValueError("a history's time to live is >= 0 s")
        self._r = client
        self._keys = Keys.of(namespace)
        self._points = points
        self._ttl_ms = round(ttl_s * 1000)
        self._append = client.register_script(scripts.HISTORY_APPEND)

    def append(self, changes: Iterable[RatingChange]) -> int:
        """Append the changes (in their order per player), one script call per player, pipelined
        (not a transaction: each player's call is atomic, and a batch written twice changes
        nothing), each followed by the list's PEXPIRE when there is a time to live. Returns how
        many points were new."""
        by_player: dict[str, list[str]] = {}
        for change in changes:
            by_player.setdefault(change.player, []).append(
                encode_history_point(history_point(change))
            )
        if not by_player:
            return 0
        pipe = self._r.pipeline(transaction=False)
        for player, points in by_player.items():
            key = self._keys.history(player)
            self._append(keys=[key], args=[self._points, *points], client=pipe)
            if self._ttl_ms:
                pipe.pexpire(key, self._ttl_ms)
        answers = pipe.execute()
        step = 2 if self._ttl_ms else 1
        return sum(int(n) for n in answers[::step])


class HistoryMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.changes = Counter(
            "adr_history_changes",
            "Rating changes read, by outcome (appended; already_kept: at or below the player's "
            "last (epoch, seq), a redelivery; unordered: seq 0; malformed: did not decode)",
            ["outcome"],
            registry=registry,
        )
        self.write_failures = Counter(
            "adr_history_write_failures",
            "Batches whose write to Redis failed and was retried",
            registry=registry,
        )
        for outcome in ("appended", "already_kept", "unordered", "malformed"):
            self.changes.labels(outcome)


class HistoryReader:
    """The loop: consume a batch, decode, append to Redis (retrying until it succeeds or the
    reader stops), commit the batch's offsets."""

    def __init__(
        self,
        consumer: Any,
        store: HistoryStore,
        metrics: HistoryMetrics,
        *,
        batch: int = 500,
        poll_s: float = 0.5,
    ) -> None:
        self._consumer = consumer
        self._store = store
        self._metrics = metrics
        self._batch = batch
        self._poll_s = poll_s
        self.stopping = threading.Event()
        self.last_batch_at = time.monotonic()

    def run(self) -> None:
        while not self.stopping.is_set():
            self.step()

    def step(self) -> int:
        """One batch; returns how many messages it read."""
        messages = self._consumer.consume(self._batch, timeout=self._poll_s)
        self.last_batch_at = time.monotonic()
        if not messages:
            return 0
        changes = self._decode(messages)
        while not self.stopping.is_set():
            try:
                added = self._store.append(changes)
                break
            except redis.RedisError as exc:
                self._metrics.write_failures.inc()
                _log.warning("history write failed; retrying", extra={"detail": str(exc)})
                self.stopping.wait(RETRY_S)
        else:
            return len(messages)  # stopping: not committed, read again by the next reader
        self._metrics.changes.labels("appended").inc(added)
        self._metrics.changes.labels("already_kept").inc(len(changes) - added)
        self._consumer.commit(asynchronous=False)
        return len(messages)

    def _decode(self, messages: Sequence[Any]) -> list[RatingChange]:
        changes = []
        for message in messages:
            if message.error() is not None:
                _log.warning("consume error", extra={"detail": str(message.error())})
                continue
            try:
                change = decode_rating_change(message.value())
            except SchemaError as exc:
                self._metrics.changes.labels("malformed").inc()
                _log.warning(
                    "rating change does not decode; skipped",
                    extra={"topic": message.topic(), "partition": message.partition(),
                           "offset": message.offset(), "reason": str(exc)},
                )  # fmt: skip
                continue
            if change.seq == 0:
                self._metrics.changes.labels("unordered").inc()
                continue
            changes.append(change)
        return changes
