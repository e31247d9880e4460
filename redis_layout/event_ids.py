"""The consumer's event-id rule offline (schemas/kill_event.md, "Meaning checks"): an id counted
once is a resend (a duplicate) when it comes again with the same arena, players and ts, and is
rejected as `id_reused` with another kill, for as long as the consumer remembers it (its record
index, keys.due_bucket_end).

`CountingRules` puts it in front of the engine's RatingBook (self-kill, bad ts, bad player,
lateness against the watermark, the a→b cooldown of §2.1): every rule by which the consumer
decides whether a kill counts, for `adr replay` and `adr evaluate --events`. A late event stays
late, as in the consumer, whose lateness check comes first."""

from __future__ import annotations

import heapq
from typing import Final, Protocol

from engine import COUNTED, Params, Verdict
from redis_layout.keys import due_bucket_end

RESEND: Final = "duplicate"
REUSED: Final = "id_reused"

Content = tuple[str, str, str, int]
"""(arena, attacker, victim, ts): what an id stands for (the consumer keeps a digest of it)."""


class EventIds:
    """The ids counted within the horizon, with what each stood for.

    The consumer remembers an id until every partition's watermark, less `keep_ms` (lateness +
    the pair memory), has passed the end of the ts's bucket of its record index
    (redis_layout.keys.due_bucket_end); a replay has one watermark, and forgets at exactly that
    horizon, the earliest the consumer may. A resend is never affected: any event that old is
    late first. Only a reuse for another kill that much later can be rated by a replay where a
    consumer that swept later rejected it."""

    __slots__ = ("_content", "_due", "_keep_ms")

    def __init__(self, keep_ms: int) -> None:
        self._keep_ms = keep_ms
        self._content: dict[str, Content] = {}
        self._due: list[tuple[int, str]] = []
        """(bucket end of its ts, id) of every id remembered, a heap: the oldest goes first."""

    def check(self, event_id: str, content: Content) -> str | None:
        """RESEND or REUSED when `event_id` was counted (None: it was not)."""
        seen = self._content.get(event_id)
        if seen is None:
            return None
        return RESEND if seen == content else REUSED

    def remember(self, event_id: str, content: Content) -> None:
        """`event_id` was counted as `content`."""
        self._content[event_id] = content
        heapq.heappush(self._due, (due_bucket_end(content[3]), event_id))

    def items(self) -> list[tuple[str, Content]]:
        """(id, what it stood for) of every id remembered (`adr rebuild` writes them)."""
        return list(self._content.items())

    def forget(self, watermark: int | None) -> None:
        """Drop the ids whose bucket ends at or before watermark - keep."""
        if watermark is None:
            return
        horizon = watermark - self._keep_ms
        due, content = self._due, self._content
        while due and due[0][0] <= horizon:
            _ts, event_id = heapq.heappop(due)
            del content[event_id]


COUNTED_EVENT: Final = "counted"
COOLDOWN_DUPLICATE: Final = "duplicate"
RESENT: Final = "resend"
ID_REUSED: Final = "id_reused"


class Book(Protocol):
    """What the rules need of a book: engine.RatingBook (ADR) or engine.ModelBook (any model)."""

    @property
    def params(self) -> Params: ...

    @property
    def lateness_ms(self) -> int: ...

    @property
    def watermark(self) -> int | None: ...

    def is_late(self, ts: int) -> bool: ...

    def apply(self, event_id: str, attacker: str, victim: str, ts: int) -> Verdict: ...


class CountingRules:
    """One book and its id memory; `apply` says what became of an event (and, when it counts,
    the book rates it with its model: the book is the rules, and its state comes with them)."""

    __slots__ = ("book", "ids", "resends", "reused")

    def __init__(self, book: Book) -> None:
        self.book = book
        self.ids = EventIds(book.lateness_ms + book.params.pair_memory_ms)
        self.resends = 0
        self.reused = 0

    def apply(self, event_id: str, arena: str, attacker: str, victim: str, ts: int) -> str:
        """ "counted", "duplicate" (cooldown), "resend", "id_reused", or the book's rejection
        reason (self_kill, late, bad_ts, bad_player)."""
        book = self.book
        content = (arena, attacker, victim, ts)
        self.ids.forget(book.watermark)  # as soon as the watermark lets the consumer sweep them
        if not book.is_late(ts) and attacker != victim:  # the decoder rejects those
            seen = self.ids.check(event_id, content)
            if seen is not None:
                if seen == RESEND:
                    self.resends += 1
                    return RESENT
                self.reused += 1
                return ID_REUSED
        verdict = book.apply(event_id, attacker, victim, ts)
        if verdict is COUNTED:
            self.ids.remember(event_id, content)
            return COUNTED_EVENT
        return verdict.reason or COOLDOWN_DUPLICATE
