"""`adr rebuild`'s count-and-rate step, on either core: what it hands the write (`Rated`).

The pure core (`rate_pure`, the reference): adr_cli/_rebuild_log.read_log's events, each through
the consumer's per-partition lateness, then redis_layout.event_ids.CountingRules on the book
(engine.RatingBook for ADR). The native core (adr_cli/_rebuild_native.py) computes the same
`Rated` for ADR in C, a consume() batch at a time (docs/native.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import Consumer

from adr_cli import _rebuild_log
from engine import Snapshot
from redis_layout.event_ids import COOLDOWN_DUPLICATE, COUNTED_EVENT, RESENT, CountingRules
from schemas import Limits

MOVES_WATERMARK: Final = frozenset({COUNTED_EVENT, COOLDOWN_DUPLICATE, RESENT})
"""What the consumer does with an event that moves its partition's watermark (consumer/_batch)."""


@dataclass(slots=True)
class Rated:
    """The end state of counting and rating the log, as the write needs it."""

    events: int
    """Decoded events handed to the rules (rejected messages are the read's)."""
    verdicts: dict[str, int]
    """What became of them: counted, duplicate, resend, id_reused, late, or the book's reason."""
    across: int
    """Events late by the book's one watermark but not by their partition's."""
    watermarks: dict[int, int]
    """partition -> the consumer's watermark: the largest ts of a counted, duplicate or resent
    event."""
    counted: int
    resends: int
    reused: int
    snapshot: Snapshot
    players: Iterable[tuple[str, Any]]
    """(id, state) by id: the book's states."""
    cooldowns: Iterable[tuple[str, str, int]]
    """(attacker, victim, last counted ts) the pair table still holds, in its order."""
    event_ids: Iterable[tuple[str, tuple[str, str, str, int]]]
    """(event id, (arena, attacker, victim, ts)) the rules still remember, in their order."""
    packed_records: Callable[[str, int, int], tuple[list[bytes], int, int]] | None = None
    """The native core's writer of the records (key prefix, horizon, members per command) ->
    (the packed commands of _rebuild_pool._write_records, cooldown records, event-id records);
    None: the write builds them from `cooldowns` and `event_ids`."""


def rate_pure(
    consumer: Consumer,
    topic: str,
    limits: Limits,
    read: _rebuild_log.LogRead,
    tick: Callable[[int], None],
    rules: CountingRules,
    lateness: int,
    pause_at: int = _rebuild_log.PAUSE_AT,
) -> Rated:
    """Every event of the log through the rules, in the read's order (the reference)."""
    book: Any = rules.book
    apply = rules.apply
    watermarks: dict[int, int] = {}
    verdicts: dict[str, int] = {}
    across = 0
    events = 0
    for partition, _offset, e in _rebuild_log.read_log(
        consumer, topic, limits, read, tick, pause_at=pause_at
    ):
        ts = e.ts
        wm = watermarks.get(partition)
        if wm is not None and ts < wm - lateness:  # the consumer's rule, per partition
            verdict = "late"
        else:
            verdict = apply(e.id, e.arena, e.attacker, e.victim, ts)
            if verdict in MOVES_WATERMARK:
                if wm is None or ts > wm:
                    watermarks[partition] = ts
            elif verdict == "late":
                across += 1
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        events += 1
    return Rated(
        events=events, verdicts=verdicts, across=across, watermarks=watermarks,
        counted=book.counted, resends=rules.resends, reused=rules.reused,
        snapshot=book.snapshot, players=book.iter_players(), cooldowns=book.cooldowns(),
        event_ids=rules.ids.items(),
    )  # fmt: skip
