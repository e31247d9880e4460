"""The one owner of this instance's partition state: which partitions it applies, where each
stands (the position committed, the next offset Redis acknowledged, the pool epoch seen), the
partitions held because their stored offset lies outside the log (consumer/_log_range.py) or
stopped at an undelivered dead letter (consumer/_blocked.py), and their lag.

Each partition is assigned at the next offset Redis holds for it, never where Kafka's group
offset says. Every read is checked against what this instance saw acknowledged (`check`): Redis
holding less is RedisBehind, and the lifecycle rewinds (consumer/_lifecycle.py).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Final

import redis
from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from consumer._blocked import Blocked
from consumer._clients import Clients
from consumer._epoch import PoolEpoch
from consumer._errors import RedisBehind
from consumer._health import Status
from consumer._log_range import LogRange
from consumer._metrics import Metrics
from consumer._ports import KillLog
from consumer._retry import RedisRetry, retriable
from consumer.config import Config

log = logging.getLogger("adr.consumer")

_COMMITTED_TIMEOUT_S: Final = 5.0
_ASSIGNED: Final = Status(True)
"""How long an assignment waits for the group's committed offsets (compared with Redis's)."""


def commit_at(topic: str, partition: int, offset: int, epoch: int) -> TopicPartition:
    """A group commit of `offset` that records the pool epoch its batch was written in (as its
    metadata, where a Redis restore cannot roll it back; epoch 0: no metadata, as before)."""
    if epoch:
        return TopicPartition(topic, partition, offset, metadata=str(epoch))
    return TopicPartition(topic, partition, offset)


def _recorded_epoch(metadata: str | None) -> int:
    """The epoch a commit recorded in its metadata (0: none, or not ours)."""
    return int(metadata) if metadata and metadata.isdecimal() else 0


class Partitions:
    """The partitions this instance applies and what it knows of each."""

    def __init__(
        self, config: Config, clients: Clients, metrics: Metrics, retry: RedisRetry
    ) -> None:
        self._topic = config.topic
        self._clients = clients
        self._metrics = metrics
        self._retry = retry
        backoff = (config.backoff_initial_s, config.backoff_max_s)
        self.blocked = Blocked(metrics, config.topic, *backoff)
        """Partitions stopped at a dead letter the broker did not take."""
        self.log_range = LogRange(config.topic, metrics, config.held_recheck_ms / 1000)
        """Partitions held because their stored offset lies outside the log."""
        self.assigned: set[int] = set()
        self.positions: dict[int, int] = {}
        """partition -> the next offset of the last batch confirmed and committed (lag, and
        the final commit on the way out)."""
        self.confirmed: dict[int, int] = {}
        """partition -> the next offset Redis acknowledged, as this instance last read or wrote
        it (Redis holding less is RedisBehind: `check`)."""
        self.epoch = PoolEpoch(metrics)
        """The pool epoch (consumer/_epoch.py), raised when Redis holds less than was written."""
        self.status = Status(False)
        """Readiness part `assigned` (consumer/_health.py): up once an assignment was taken
        (also an empty one: an instance with no partitions is ready to get some)."""

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

    def watched(self, partitions: list[int]) -> list[int]:
        """A batch's partitions and every other one this instance applies: one read checks them
        all, so a loss shows at the next read whichever partitions the batch holds."""
        if len(self.confirmed) <= len(partitions):
            return partitions
        return list(dict.fromkeys([*partitions, *self.confirmed]))

    def acknowledged(self, offsets: list[tuple[int, int]]) -> None:
        """Redis acknowledged a write of these (partition, next offset)."""
        self.confirmed.update(offsets)

    def committed(self, next_offsets: dict[int, int]) -> None:
        """A batch is confirmed and its commit sent: the partitions' positions move on."""
        self.positions.update(next_offsets)

    def raise_epoch(self, why: str) -> None:
        """Raise the pool epoch before anything is applied again (retried while Redis fails)."""
        self._raise(why, "", 0)

    def assign_stored(self, consumer: KillLog, partitions: list[int], new: bool = False) -> None:
        """Assign `partitions` at the next offsets Redis holds for them, and hold (pause) each
        whose stored offset lies outside its log (consumer/_log_range.py). Assigning anew, not
        seeking: a seek fails on a partition that is paused before its first fetch.

        `new` (a rebalance handed them over, or the process starts): first compare with the
        group's committed offsets, which follow Redis's; Redis holding less means it lost writes
        while no instance was there to notice, and the pool epoch is raised before anything is
        applied again (`_behind_committed`)."""
        store = self._clients.store
        stored = self._retry(lambda: store.read_offsets(partitions), "read offsets")
        if new:
            self._behind_committed(consumer, partitions, stored)
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
            assignment.append(TopicPartition(self._topic, partition, start))
        self.blocked.forget(partitions)  # a stopped message is met again from the stored offset
        consumer.assign(assignment)
        self.assigned = set(partitions)
        for partition, why in held.items():
            self.log_range.hold(consumer, partition, why)  # before anything is fetched
        # a partition assigned again stays paused (librdkafka keeps the flag): resume the others
        reading = [tp for tp in assignment if tp.partition not in held]
        if reading:
            consumer.resume(reading)
        self.status = _ASSIGNED
        log.info(
            "partitions assigned",
            extra={"partitions": {tp.partition: tp.offset for tp in assignment}},
        )

    def _behind_committed(
        self, consumer: KillLog, partitions: list[int], stored: dict[int, int | None]
    ) -> None:
        """Raise the pool epoch if Redis holds, for one of `partitions`, less than the group
        committed (commits follow Redis: it lost writes, e.g. restored from an older RDB while
        no consumer ran) or if the committed offsets cannot be read (unknown: raising is always
        safe for readers). The committed metadata records the epoch of each commit
        (`commit_at`): the new epoch goes above the highest recorded there too."""
        tps = [TopicPartition(self._topic, p) for p in partitions]
        try:
            committed = consumer.committed(tps, timeout=_COMMITTED_TIMEOUT_S)
        except KafkaException as exc:
            self._metrics.swallowed.labels("kafka_committed").inc()
            log.warning("committed offsets unknown", extra={"error": str(exc)})
            self._raise("committed_unknown", "the group's committed offsets are unknown", 0)
            return
        held = {p: -1 if o is None else o for p, o in stored.items()}  # -1: nothing stored
        behind = {
            tp.partition: tp.offset for tp in committed if tp.offset > held.get(tp.partition, -1)
        }
        if behind:
            recorded = max((_recorded_epoch(tp.metadata) for tp in committed), default=0)
            self._metrics.redis_rewinds.inc()  # lost writes, as in flight (AdrRedisLostWrites)
            log.error(
                "redis holds less than the group committed: it lost writes while no consumer ran",
                extra={"committed": behind, "stored": stored},
            )
            self._raise("assignment", f"Redis behind the committed offsets {behind}", recorded + 1)

    def _raise(self, why: str, detail: str, least: int) -> None:
        clients, epoch = self._clients, self.epoch
        self._retry(lambda: epoch.raise_(clients.store, why, detail, least), "raise epoch")

    def _start_at(self, partition: int, offset: int | None) -> None:
        """Redis holds `offset` (None: nothing) as the partition's next: apply from there."""
        self.positions.pop(partition, None)
        self.confirmed.pop(partition, None)
        if offset is not None:
            self.positions[partition] = offset
            self.confirmed[partition] = offset

    def revoke(self, consumer: KillLog, partitions: list[int]) -> None:
        """The partitions leave this instance (their batch was flushed first)."""
        consumer.unassign()
        self.blocked.forget(partitions)
        for partition in partitions:
            self.assigned.discard(partition)
            self.positions.pop(partition, None)
            self.confirmed.pop(partition, None)
            self.log_range.forget(partition)
            with contextlib.suppress(KeyError):  # never reported
                self._metrics.lag.remove(str(partition))

    def forget_all(self) -> None:
        """After a fatal Kafka client error: the new clients start with no partition."""
        self.assigned.clear()
        self.positions.clear()
        self.confirmed.clear()
        for partition in list(self.log_range.held):
            self.log_range.forget(partition)
        self.blocked.forget()

    def held_readable(self) -> bool:
        """Whether a held partition can be read again: its stored offset lies inside the log
        (an operator set it there, or the log grew back past it): docs/operations.md,
        "AdrPartitionHeld". Checked every `held_recheck_ms`."""
        if not self.log_range.due():
            return False
        held = sorted(self.log_range.held)
        try:
            stored = self._clients.store.read_offsets(held)
        except redis.RedisError as exc:
            if not retriable(exc):
                raise
            self._metrics.swallowed.labels("redis_offset_check").inc()
            return False
        kafka = self._clients.kafka
        return any(self.log_range.outside(kafka, p, stored.get(p)) is None for p in held)

    def report_lag(self) -> None:
        """adr_consumer_lag per partition: the log end minus the position (cached watermarks)."""
        for partition in self.assigned:
            position = self.positions.get(partition)
            if position is None:
                continue
            try:
                _low, high = self._clients.kafka.get_watermark_offsets(
                    TopicPartition(self._topic, partition), cached=True
                )
            except Exception:
                continue
            if high >= 0:
                self._metrics.lag.labels(str(partition)).set(max(0, high - position))

    def commit_positions(self) -> None:
        """On the way out: commit every position synchronously (best effort)."""
        if not self.positions:
            return
        epoch = self.epoch.seen
        tps = [commit_at(self._topic, p, o, epoch) for p, o in self.positions.items()]
        try:
            self._clients.kafka.commit(offsets=tps, asynchronous=False)
        except Exception as exc:
            self._metrics.swallowed.labels("kafka_commit").inc()
            log.warning("final kafka commit failed", extra={"error": str(exc)})
