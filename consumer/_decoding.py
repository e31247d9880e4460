"""The decode stage: a batch's Kafka messages -> typed kill events (`Accepted`) -> the `Batch`
the lifecycle carries through its stages, with what its read needs (`batch_reads`). The loops
run once per message, so compiled with mypyc (runtime/compiled.py); the stage itself, with its
dead letters, is consumer/_lifecycle.py's."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from msgspec.structs import astuple

from redis_layout import Keys
from schemas import KillEvent, Limits, Reason, SchemaError, check_key, decode_kill_event

if TYPE_CHECKING:
    from consumer._batch import Plan

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
