"""The ports of the batch lifecycle: what consumer/_lifecycle.py talks to, as typed Protocols.

- `KillLog`: the group member's side of the kill-events topic (confluent_kafka.Consumer's part
  the consumer uses: consume, assign, pause, commit, the log's range).
- `PoolStore`: the rating pool in Redis (consumer/_store.py's `Store`, the Lua write) or in memory
  (consumer/_memory_store.py's `MemoryStore`, for tests): read a batch's view, write a plan
  atomically (or send it behind the next read: `PendingWrite`), the stored offsets, the epoch.
  tests/consumer/test_pool_store_contract.py runs one suite against both.
- `DeadLetterSink`: the dead-letter topic (consumer/_dead_letters.py), acknowledged copies only.
- `Outbox`: the relay of the outbox to rating-changes (consumer/_relay.py).
- `RatingProducer`: the rating-change producer the relay sends with (flushed on the way out,
  replaced after a fatal client error).
- `RateStep`: the pure rating step, the pool's loop with its settings bound, chosen once when the
  pipeline is built (consumer/pipeline.py's `rating_step`): ADR's `rate_batch`
  (consumer/_batch.py, compiled) or the other models' `rate_model_batch`
  (consumer/_model_batch.py).

The real adapters satisfy them structurally (mypy checks `Clients.connect`); the unit tests'
in-memory ones do too, so they need no casts (tests/consumer/lifecycle_fakes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any, Literal, Protocol, overload

from confluent_kafka import Message, TopicPartition

from consumer._batch import Plan, View
from consumer._dead_letters import Stop
from consumer._intake import Accepted
from consumer._stages import StageTimer
from engine import PlayerState


class KillLog(Protocol):
    """The kill-events topic as one group member reads it."""

    def subscribe(
        self,
        topics: list[str],
        on_assign: Callable[[Any, list[TopicPartition]], None] | None = None,
        on_revoke: Callable[[Any, list[TopicPartition]], None] | None = None,
    ) -> None: ...

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]: ...

    def assign(self, partitions: list[TopicPartition]) -> None: ...

    def unassign(self) -> None: ...

    def pause(self, partitions: list[TopicPartition]) -> None: ...

    def resume(self, partitions: list[TopicPartition]) -> None: ...

    def seek(self, partition: TopicPartition) -> None: ...

    @overload
    def commit(
        self, *, offsets: list[TopicPartition], asynchronous: Literal[True] = ...
    ) -> None: ...

    @overload
    def commit(
        self, *, offsets: list[TopicPartition], asynchronous: Literal[False]
    ) -> list[TopicPartition]: ...

    def committed(
        self, partitions: list[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]: ...

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]: ...

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """The cluster's metadata (consumer/_topic_watch.py: does the kill topic still exist?)."""
        ...

    def close(self) -> None: ...


class PendingWrite(Protocol):
    """A plan's write on the wire (sent behind a read); `result()` waits for it: returns once it
    ran, raises redis_layout.Conflict when a checked value had moved (nothing written), a Redis
    error when its outcome is unknown."""

    def result(self) -> None: ...


class PoolStore(Protocol):
    """One rating pool and source topic: everything a batch is computed from, and its write."""

    def read_view(
        self,
        players: list[str],
        pairs: list[str],
        partitions: list[int],
        cached: Mapping[str, tuple[PlayerState, int]] | None = None,
        ids: Sequence[str] = (),
    ) -> View:
        """What the batch is computed from (players in `cached` are taken from it, not read)."""
        ...

    def read_view_then_write(
        self,
        players: list[str],
        pairs: list[str],
        partitions: list[int],
        cached: Mapping[str, tuple[PlayerState, int]] | None,
        plan: Plan,
        ids: Sequence[str] = (),
    ) -> tuple[View, PendingWrite]:
        """`read_view`, then `plan`'s write behind it: the view is what the pool held before."""
        ...

    def write(self, plan: Plan) -> None:
        """`plan` atomically: every check holds and all of it is written, or Conflict."""
        ...

    def read_offsets(self, partitions: list[int]) -> dict[int, int | None]:
        """partition -> the next offset stored with the state (None: nothing applied)."""
        ...

    def raise_epoch(self, least: int) -> int:
        """Set the pool epoch to max(stored + 1, least) and return it."""
        ...


class DeadLetterSink(Protocol):
    """The dead-letter topic: a copy counts once the broker acknowledged it."""

    def send(
        self,
        rejected: list[tuple[Message, str]],
        tick: Callable[[], None],
        event_ids: dict[tuple[int, int], str] | None = None,
    ) -> dict[int, Stop]:
        """Copy each (message, reason); partition -> Stop at the first copy not acknowledged.
        `event_ids`: (partition, offset) -> id of those that decoded (the log's samples)."""
        ...

    def renew(self) -> None:
        """A new producer (after a fatal client error)."""
        ...

    def close(self, timeout_s: float) -> None: ...


class RatingProducer(Protocol):
    """The producer of rating changes, as the pipeline handles it (the relay produces)."""

    def flush(self, timeout: float = -1) -> int: ...

    def poll(self, timeout: float = -1) -> int: ...


class Outbox(Protocol):
    """The relay of the pool's outbox to the rating-changes topic."""

    def pump(self) -> int:
        """Acknowledge what Kafka confirmed, take and produce new entries (bounded)."""
        ...

    def drain(self, timeout_s: float) -> None:
        """On the way out: wait for what was sent, at most `timeout_s`."""
        ...

    def backlog(self) -> int:
        """Outbox entries not yet acknowledged."""
        ...

    def use_producer(self, producer: Any) -> None:
        """Send with a new producer from now on (after a fatal client error)."""
        ...


class RateStep(Protocol):
    """Step 3's pure work: `events` rated in order on `view` (`batch_offsets`: partition -> the
    batch's next offset), the events in `refused` (dead-lettered by an earlier attempt) left
    out; the events it leaves out come back in `Plan.rejected`."""

    def __call__(
        self,
        events: list[Accepted],
        batch_offsets: dict[int, int],
        view: View,
        *,
        refused: Container[tuple[int, int]],
        stages: StageTimer,
    ) -> Plan: ...
