"""In-memory stand-ins for what a Pipeline talks to (consumer/_clients.py), for unit tests of the
batch lifecycle that need no server (tests/consumer/test_lifecycle.py).

The pool store is the consumer's in-memory one (consumer/_memory_store.py: the write script's
checks and writes, held to the Lua store by tests/consumer/test_pool_store_contract.py), traced;
the kill log, dead-letter sink, relay and producer are minimal stand-ins for their ports
(consumer/_ports.py). Every fake appends what happened to one shared `trace`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis
from confluent_kafka import OFFSET_BEGINNING, Message, TopicPartition

from consumer._batch import Plan, View
from consumer._clients import Clients
from consumer._dead_letters import Stop
from consumer._kafka import KafkaErrors
from consumer._memory_store import MemoryStore, Pool
from consumer._metrics import Metrics
from engine import PlayerState, Snapshot

Trace = list[tuple[Any, ...]]


class TracedStore(MemoryStore):
    """The in-memory pool store (consumer/_memory_store.py) that also records its reads, writes
    and confirmations in the trace, and can lose the reply of a write that ran."""

    def __init__(self, snapshot: Snapshot, trace: Trace) -> None:
        super().__init__(snapshot)
        self.trace = trace
        self.lose_replies = 0
        """How many of the next writes run but lose their reply (a connection cut after the
        script ran)."""

    def lose_to(self, earlier: Pool) -> None:
        """Redis restarted from an older, consistent state (it lost acknowledged writes)."""
        self.restore(earlier)

    def raise_epoch(self, least: int) -> int:
        self.trace.append(("raise epoch",))
        return super().raise_epoch(least)

    def read_view(
        self,
        players: list[str],
        pairs: list[str],
        partitions: list[int],
        cached: Mapping[str, tuple[PlayerState, int]] | None = None,
        ids: Sequence[str] = (),
    ) -> View:
        self.trace.append(("read",))
        return super().read_view(players, pairs, partitions, cached, ids)

    def read_view_then_write(
        self,
        players: list[str],
        pairs: list[str],
        partitions: list[int],
        cached: Mapping[str, tuple[PlayerState, int]] | None,
        plan: Plan,
        ids: Sequence[str] = (),
    ) -> tuple[View, TracedWrite]:
        view = self.read_view(players, pairs, partitions, cached, ids)
        return view, self._send(plan)

    def write(self, plan: Plan) -> None:
        self._send(plan).result()

    def _send(self, plan: Plan) -> TracedWrite:
        self.trace.append(("write", dict(plan.offsets)))
        return TracedWrite(self, plan)


class TracedWrite:
    """A write on the wire: the pool runs it when its reply is read (`result`)."""

    def __init__(self, store: TracedStore, plan: Plan) -> None:
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

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool = True) -> Any:
        committed = {tp.partition: tp.offset for tp in offsets}
        self.commits.append(committed)
        self.trace.append(("commit", committed))
        return None if asynchronous else offsets

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
        self,
        rejected: list[tuple[Message, str]],
        tick: Callable[[], None],
        event_ids: dict[tuple[int, int], str] | None = None,
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
    """The client the pipeline itself uses: the layout stamp at assignment (SET NX, GET)."""

    def __init__(self) -> None:
        self.strings: dict[str, bytes] = {}

    def set(self, key: str, value: str, nx: bool = False) -> bool:
        if nx and key in self.strings:
            return False
        self.strings[key] = value.encode()
        return True

    def get(self, key: str) -> bytes | None:
        return self.strings.get(key)

    def close(self) -> None:
        pass


@dataclasses.dataclass
class Fakes:
    trace: Trace
    store: TracedStore
    kafka: FakeKafka
    dead_letters: FakeDeadLetters
    clients: Clients


def fakes(topic: str, snapshot: Snapshot, metrics: Metrics) -> Fakes:
    trace: Trace = []
    store = TracedStore(snapshot, trace)
    kafka = FakeKafka(topic, trace)
    dead_letters = FakeDeadLetters(trace)
    producer = FakeProducer()
    clients = Clients(
        errors=KafkaErrors(metrics),
        redis=FakeRedis(),
        store=store,
        kafka=kafka,
        producer=producer,
        dead_letters=dead_letters,
        relay=FakeRelay(trace),
        new_kafka=lambda: (kafka, producer),
    )
    return Fakes(trace, store, kafka, dead_letters, clients)
