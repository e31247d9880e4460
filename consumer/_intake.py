"""Step 2 of a batch's life (consumer/_lifecycle.py): from the kill log's messages to a `Batch`.

Transport errors are dropped (counted; a position outside the log holds its partition,
consumer/_log_range.py; a fatal client error raises), the records decoded and checked
(`decode_messages`: schemas.decode_kill_event and the key check per message), and the rejected
ones copied to the dead-letter topic before anything is applied. A partition whose copy the
broker did not acknowledge stops at that message (consumer/_blocked.py): nothing at or after it
is applied, so its stored offset stays there. The rating step's rejected events (Plan.rejected)
are dead-lettered the same way (`dead_letter`).

What comes out is the `Batch` the lifecycle carries through its steps: the `Accepted` events and
what their read needs (`batch_reads`), the next offsets. The loops run once per message, so this
module is compiled with mypyc (runtime/compiled.py).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from confluent_kafka import KafkaError, Message
from msgspec.structs import astuple

from consumer._degraded import KILL_EVENTS
from consumer._kafka_faults import classify
from consumer._stages import DECODE, NO_STAGES, StageTimer
from redis_layout import Keys
from schemas import KillEvent, Limits, Reason, SchemaError, check_key, decode_kill_event

if TYPE_CHECKING:  # types only: consumer/_batch.py imports this module; _clients leads back
    from consumer._batch import Plan
    from consumer._clients import Clients
    from consumer._dead_letters import Stop
    from consumer._metrics import Metrics
    from consumer._partitions import Partitions
    from consumer.config import Config

log = logging.getLogger("adr.consumer")


class Intake:
    """Step 2 with what it needs: the clients (the kill log, the dead-letter sink), the
    partitions (stops, held ones) and the decoder's limits."""

    def __init__(
        self,
        config: Config,
        clients: Clients,
        metrics: Metrics,
        partitions: Partitions,
        stages: StageTimer = NO_STAGES,
    ) -> None:
        self._topic, self._keys = config.topic, Keys(config.namespace)
        self._clients, self._metrics, self._stages = clients, metrics, stages
        self._partitions = partitions
        self._limits = Limits(max_age_ms=config.max_age_ms, max_future_ms=config.max_future_ms)

    def take(self, messages: list[Message]) -> Batch | None:
        """The batch's kill events and next offsets (None: nothing to apply).

        Rejected messages are copied to the dead-letter topic first; a partition with a copy the
        broker did not acknowledge stops at that message (consumer/_blocked.py): nothing at or
        after it is applied, so its stored offset stays there."""
        started = time.perf_counter()
        good = self._keep_data(messages)
        if not good:
            return None
        self._stages.start()
        accepted, rejected = self._decode(good)
        self._stages.stop(DECODE)
        stops = self.dead_letter(rejected)
        if stops:  # nothing at or after a stop is applied: the partition stays there
            good = [m for m in good if not _stopped(stops, m.partition(), m.offset())]
            accepted = [a for a in accepted if not _stopped(stops, a.partition, a.offset)]
            if not good:
                return None
        return Batch(accepted, next_offsets(good), len(good), started, self._keys)

    def _keep_data(self, messages: list[Message]) -> list[Message]:
        """Drop (and count) transport errors; what remains are records of our partitions."""
        good: list[Message] = []
        log_range = self._partitions.log_range
        for m in self._partitions.blocked.admit(messages):
            err = m.error()
            if err is None:
                good.append(m)
                continue
            self._clients.errors.raise_if_fatal(err)  # the batch is not applied
            if err.code() == KafkaError._AUTO_OFFSET_RESET:
                partition = m.partition()
                if partition is not None and partition not in log_range.held:
                    # the position fell outside the log while reading (retention, truncation)
                    log_range.hold(self._clients.kafka, partition, str(err))
            else:  # one summary line per cause, the metric, /readyz (consumer/_degraded.py)
                self._metrics.degraded.failed(
                    KILL_EVENTS, self._topic, classify(err), sample=_where(m)
                )
            self._metrics.swallowed.labels("kafka_consume").inc()
        if good:
            self._clients.errors.answered()
            self._metrics.degraded.recovered(KILL_EVENTS, self._topic)
        return good

    def _decode(self, messages: list[Message]) -> tuple[list[Accepted], list[tuple[Message, str]]]:
        """Typed kill events, and the messages that are not (with their reason)."""
        decoded = decode_messages(messages, time.time_ns() // 1_000_000, self._limits)
        for m, error in decoded.failures:
            self._metrics.swallowed.labels("decode").inc()
            log.error("decoder raised", extra={"error": error, "offset": m.offset()})
        return decoded.accepted, decoded.rejected

    def dead_letter(
        self,
        rejected: list[tuple[Message, str]],
        event_ids: dict[tuple[int, int], str] | None = None,
    ) -> dict[int, Stop]:
        """Copy `rejected` to the dead-letter topic; the partitions whose copy the broker did not
        take are stopped there (consumer/_blocked.py), and their stops returned. `event_ids`:
        (partition, offset) -> id of the rejected events that decoded (the summary's sample)."""
        stops = self._clients.dead_letters.send(rejected, self._metrics.tick, event_ids)
        self._partitions.blocked.stop(self._clients.kafka, stops)
        return stops


def _where(m: Message) -> str:
    """topic/partition@offset of a consume error, "" for one of no partition (the group's)."""
    if m.topic() is None or m.partition() is None:
        return ""
    return f"{m.topic()}/{m.partition()}@{m.offset()}"


def _stopped(stops: dict[int, Stop], partition: int | None, offset: int | None) -> bool:
    """Whether a message is at or after its partition's stop."""
    stop = stops.get(cast(int, partition))
    return stop is not None and cast(int, offset) >= stop.offset


EventFields = tuple[int, str, str, str, str, int, Any]
"""A KillEvent's fields in declaration order (v, id, arena, attacker, victim, ts, extra), as
`msgspec.structs.astuple` gives them (tests/consumer/test_batch_records.py checks the order)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Accepted:
    """A decoded kill event and where it came from."""

    partition: int
    offset: int
    event: KillEvent
    message: Any = None
    """The Kafka message it came from (its bytes go to the dead-letter topic if it is rejected)."""


class Decoded:
    """A batch's messages sorted into kill events and rejections."""

    __slots__ = ("accepted", "failures", "rejected")

    def __init__(self) -> None:
        self.accepted: list[Accepted] = []
        self.rejected: list[tuple[Any, str]] = []
        """(message, dead-letter reason), in the batch's order."""
        self.failures: list[tuple[Any, str]] = []
        """(message, repr of the exception) where the decoder raised something other than
        SchemaError (a decoder bug; such a message is also rejected as undecodable): the
        caller counts and logs each."""


def decode_messages(messages: list[Any], now_ms: int, limits: Limits) -> Decoded:
    """Decode and check each message (schemas.decode_kill_event, the key check)."""
    out = Decoded()
    accepted, rejected = out.accepted, out.rejected
    for m in messages:
        try:
            event = decode_kill_event(m.value() or b"", now_ms, limits)  # None: a tombstone
            check_key(event, m.key())
        except SchemaError as exc:
            rejected.append((m, exc.reason.value))
            continue
        except Exception as exc:  # a decoder bug: the fuzz tests say this cannot happen
            out.failures.append((m, repr(exc)))
            rejected.append((m, Reason.UNDECODABLE.value))
            continue
        accepted.append(Accepted(m.partition(), m.offset(), event, m))
    return out


def next_offsets(messages: list[Any]) -> dict[int, int]:
    """partition -> the offset after the last of `messages` there (they are in log order)."""
    out: dict[int, int] = {}
    for m in messages:
        out[m.partition()] = m.offset() + 1
    return out


def batch_reads(events: list[Accepted], keys: Keys) -> tuple[list[str], list[str], list[str]]:
    """What a batch's read needs, each in first-seen order without repeats: its players
    (attacker, victim), cooldown pair keys and event id keys. One compiled pass per batch."""
    players: dict[str, None] = {}
    pairs: dict[str, None] = {}
    ids: dict[str, None] = {}
    for item in events:
        fields = cast(EventFields, astuple(item.event))
        attacker, victim = fields[3], fields[4]
        players[attacker] = None
        players[victim] = None
        pairs[keys.cooldown(attacker, victim)] = None
        ids[keys.event_id(fields[1])] = None
    return list(players), list(pairs), list(ids)


class Batch:
    """The decoded events of one batch and what its write must record, as the lifecycle carries
    it from decode to commit (consumer/_lifecycle.py)."""

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

    def drop_rejected(self, plan: Plan) -> list[tuple[Accepted, str]]:
        """The events of `plan.rejected` (with their reasons) not dropped before; later ratings
        of the batch (a redo) no longer see them, so an event is never both dead-lettered and
        applied."""
        gone = self.dead_lettered
        new = [(a, why) for a, why in plan.rejected if (a.partition, a.offset) not in gone]
        if new:
            gone.update((a.partition, a.offset) for a, _why in new)
            self.accepted = [a for a in self.accepted if (a.partition, a.offset) not in gone]
        return new

    def cut(self, stops: Mapping[int, int]) -> None:
        """Leave out everything at or after each partition's stop offset (a dead letter the
        broker did not take); the partition's next offset becomes the stop."""
        for partition, offset in stops.items():
            if partition in self.next_offsets:
                self.next_offsets[partition] = min(self.next_offsets[partition], offset)
        self.accepted = [
            a for a in self.accepted if a.partition not in stops or a.offset < stops[a.partition]
        ]
