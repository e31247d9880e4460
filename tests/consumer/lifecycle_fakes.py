"""In-memory stand-ins for what a Pipeline talks to (consumer/_clients.py), for unit tests of the
batch lifecycle that need no server (tests/consumer/test_lifecycle.py).

The Redis side is faked at the Store boundary: `FakeStore` keeps what the atomic write script
keeps (player states and vers, S and P, cooldowns, event ids, offsets, watermarks, the outbox)
and applies a Plan with the script's checks (every changed player's ver, every batch
partition's offset, no event id recorded meanwhile), so the Writer and the rating core run as
they do against Redis. Every fake appends what happened to one shared `trace`.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import redis
from confluent_kafka import OFFSET_BEGINNING, Message, TopicPartition

from consumer._batch import Plan, View
from consumer._clients import Clients
from consumer._dead_letters import Stop
from consumer._kafka import KafkaErrors
from consumer._metrics import Metrics
from engine import DEFAULT_LATENESS_MS, PlayerState, Snapshot
from redis_layout import Conflict
from redis_layout.apply_contract import PLAYER_ITEMS

Trace = list[tuple[Any, ...]]


@dataclasses.dataclass
class Held:
    """What FakeStore holds (what Redis holds for one pool and topic)."""

    players: dict[str, tuple[PlayerState, int]] = dataclasses.field(default_factory=dict)
    cooldowns: dict[str, int] = dataclasses.field(default_factory=dict)
    event_ids: dict[str, bytes] = dataclasses.field(default_factory=dict)
    player_count: int = 0
    sigma_units_total: int = 0
    offsets: dict[int, int] = dataclasses.field(default_factory=dict)
    watermarks: dict[int, int] = dataclasses.field(default_factory=dict)
    outbox: list[list[tuple[str, bytes]]] = dataclasses.field(default_factory=list)
    epoch: int = 0


class FakeStore:
    """consumer._store.Store's interface over a `Held` in memory."""

    def __init__(self, snapshot: Snapshot, trace: Trace) -> None:
        self.held = Held()
        self.snapshot = snapshot
        self.trace = trace
        self.lateness_ms = DEFAULT_LATENESS_MS
        self.lose_replies = 0
        """How many of the next writes run but lose their reply (a connection cut after the
        script ran)."""

    def lose_to(self, earlier: Held) -> None:
        """Redis restarted from an older, consistent state (it lost acknowledged writes)."""
        self.held = copy.deepcopy(earlier)

    def saved(self) -> Held:
        return copy.deepcopy(self.held)

    def read_offsets(self, partitions: list[int]) -> dict[int, int | None]:
        return {p: self.held.offsets.get(p) for p in partitions}

    def raise_epoch(self, least: int) -> int:
        self.held.epoch = max(self.held.epoch + 1, least)
        self.trace.append(("raise epoch",))
        return self.held.epoch

    def read_view(self, *args: Any) -> View:
        """As Store's, called as the Writer does: (players, pairs, partitions, cached, ids)."""
        players, pairs, partitions, cached, ids = args
        self.trace.append(("read",))
        h = self.held
        stored: dict[str, tuple[PlayerState | None, int]] = {}
        for p in players:
            hit = cached.get(p) if cached else None
            stored[p] = hit if hit is not None else h.players.get(p, (None, 0))
        return View(
            players=stored,
            cooldowns={k: h.cooldowns.get(k) for k in pairs},
            sigma_units_total=h.sigma_units_total,
            player_count=h.player_count,
            offsets={p: h.offsets.get(p) for p in partitions},
            snapshot=self.snapshot,
            watermarks={p: h.watermarks.get(p) for p in partitions},
            event_ids={k: h.event_ids.get(k) for k in ids},
            epoch=h.epoch,
        )

    def read_view_then_write(self, *args: Any) -> tuple[View, FakePendingWrite]:
        """As Store's: the read of (players, pairs, partitions, cached), then plan's write."""
        players, pairs, partitions, cached, plan, ids = args
        view = self.read_view(players, pairs, partitions, cached, ids)
        return view, self._send(plan)

    def write(self, plan: Plan) -> None:
        self._send(plan).result()

    def _send(self, plan: Plan) -> FakePendingWrite:
        self.trace.append(("write", dict(plan.offsets)))
        return FakePendingWrite(self, plan)

    def apply(self, plan: Plan) -> None:
        """What redis_layout/scripts/apply.lua does: check, then write everything or nothing."""
        h = self.held
        if plan.epoch != h.epoch:
            raise Conflict("epoch", "epoch")
        for partition, stored in plan.offset_checks:
            if h.offsets.get(partition) != stored:
                raise Conflict("offset", str(partition))
        stride, at = len(PLAYER_ITEMS), PLAYER_ITEMS.index("checked_ver")
        for i, player in enumerate(plan.states):
            checked = int(plan.players[i * stride + at])  # type: ignore[arg-type]
            if h.players.get(player, (None, 0))[1] != checked:
                raise Conflict("player", player)
        for key, _digest, _ts in plan.event_ids:
            if key in h.event_ids:
                raise Conflict("event_id", key)
        h.players.update(plan.states)
        h.player_count += plan.count_delta
        h.sigma_units_total += (plan.sigma_hi_delta << 32) + plan.sigma_lo_delta
        h.cooldowns.update(plan.cooldowns)
        h.event_ids.update((key, digest) for key, digest, _ts in plan.event_ids)
        for partition, offset in plan.offsets:
            h.offsets[partition] = max(offset, h.offsets.get(partition, 0))
        h.watermarks.update(plan.watermarks)
        if plan.outbox:
            h.outbox.append(plan.outbox)


class FakePendingWrite:
    """A write on the wire: Redis runs it when its reply is read (`result`)."""

    def __init__(self, store: FakeStore, plan: Plan) -> None:
        self._store = store
        self.plan = plan

    def result(self) -> None:
        self._store.apply(self.plan)
        if self._store.lose_replies:
            self._store.lose_replies -= 1
            raise redis.ConnectionError("connection reset after the script ran")
        self._store.trace.append(("confirmed", dict(self.plan.offsets)))


class FakeKafka:
    """confluent_kafka.Consumer's interface over one topic's log in memory."""

    def __init__(self, topic: str, trace: Trace) -> None:
        self.topic = topic
        self.trace = trace
        self.log: dict[int, list[Message]] = {}
        self.position: dict[int, int] = {}
        self.paused: set[int] = set()
        self.commits: list[dict[int, int]] = []
        self.on_assign: Callable[..., None] | None = None
        self.on_revoke: Callable[..., None] | None = None

    def append(self, partition: int, key: bytes | None, value: bytes | None) -> Message:
        messages = self.log.setdefault(partition, [])
        m = Message(
            topic=self.topic, partition=partition, offset=len(messages), key=key, value=value
        )
        messages.append(m)
        return m

    # the group coordinator's side
    def assign_group(self, partitions: list[int]) -> None:
        assert self.on_assign is not None
        self.on_assign(self, [TopicPartition(self.topic, p) for p in partitions])

    def revoke_group(self, partitions: list[int]) -> None:
        assert self.on_revoke is not None
        self.on_revoke(self, [TopicPartition(self.topic, p) for p in partitions])

    # confluent_kafka.Consumer
    def subscribe(self, topics: list[str], on_assign: Any = None, on_revoke: Any = None) -> None:
        self.on_assign, self.on_revoke = on_assign, on_revoke

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        out: list[Message] = []
        for partition in sorted(self.position):
            if partition in self.paused:
                continue
            at = self.position[partition]
            taken = self.log.get(partition, [])[at : at + num_messages - len(out)]
            self.position[partition] = at + len(taken)
            out += taken
        return out

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.trace.append(("assign", {tp.partition: tp.offset for tp in partitions}))
        self.position = {
            tp.partition: 0 if tp.offset == OFFSET_BEGINNING else tp.offset for tp in partitions
        }

    def unassign(self) -> None:
        self.trace.append(("unassign",))
        self.position = {}

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused.update(tp.partition for tp in partitions)

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.paused.difference_update(tp.partition for tp in partitions)

    def seek(self, partition: TopicPartition) -> None:
        self.position[partition.partition] = partition.offset

    def commit(self, offsets: list[TopicPartition], asynchronous: bool = True) -> None:
        committed = {tp.partition: tp.offset for tp in offsets}
        self.commits.append(committed)
        self.trace.append(("commit", committed))

    def committed(self, partitions: list[TopicPartition], timeout: float = -1) -> list[Any]:
        return [TopicPartition(self.topic, tp.partition, -1001) for tp in partitions]

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        return 0, len(self.log.get(partition.partition, []))

    def close(self) -> None:
        pass


class FakeDeadLetters:
    """consumer._dead_letters.DeadLetters: the broker takes every copy but those of
    `undeliverable` ((partition, offset)), whose partitions stop there."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.undeliverable: set[tuple[int, int]] = set()
        self.delivered: list[tuple[int, int, str]] = []

    def send(
        self, rejected: list[tuple[Message, str]], tick: Callable[[], None]
    ) -> dict[int, Stop]:
        stops: dict[int, Stop] = {}
        for m, reason in rejected:
            partition, offset = m.partition(), m.offset()
            assert partition is not None and offset is not None
            if (partition, offset) in self.undeliverable:
                stop = stops.get(partition)
                if stop is None or offset < stop.offset:
                    stops[partition] = Stop(offset, "topic_missing", "no such topic")
            else:
                self.delivered.append((partition, offset, reason))
                self.trace.append(("dead letter", partition, offset, reason))
        return stops

    def renew(self) -> None:
        pass

    def close(self, timeout_s: float) -> None:
        pass


class FakeRelay:
    """consumer._relay.Relay: each pump is an emit in the trace."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    def pump(self) -> int:
        self.trace.append(("emit",))
        return 0

    def drain(self, timeout_s: float) -> None:
        pass

    def backlog(self) -> int:
        return 0

    def use_producer(self, producer: Any) -> None:
        pass


class FakeProducer:
    def flush(self, timeout: float = -1) -> int:
        return 0

    def poll(self, timeout: float = -1) -> int:
        return 0


class FakeRedis:
    def close(self) -> None:
        pass


@dataclasses.dataclass
class Fakes:
    trace: Trace
    store: FakeStore
    kafka: FakeKafka
    dead_letters: FakeDeadLetters
    clients: Clients


def fakes(topic: str, snapshot: Snapshot, metrics: Metrics) -> Fakes:
    trace: Trace = []
    store = FakeStore(snapshot, trace)
    kafka = FakeKafka(topic, trace)
    dead_letters = FakeDeadLetters(trace)
    producer = FakeProducer()
    clients = Clients(
        errors=KafkaErrors(metrics),
        redis=FakeRedis(),
        store=store,  # type: ignore[arg-type]
        kafka=kafka,  # type: ignore[arg-type]
        producer=producer,  # type: ignore[arg-type]
        dead_letters=dead_letters,  # type: ignore[arg-type]
        relay=FakeRelay(trace),  # type: ignore[arg-type]
        new_kafka=lambda: (kafka, producer),  # type: ignore[return-value]
    )
    return Fakes(trace, store, kafka, dead_letters, clients)
