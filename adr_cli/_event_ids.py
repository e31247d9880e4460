"""The consumer's event-id rule for `adr replay` (schemas/kill_event.md, "Meaning checks"): an id
counted once is a resend (a duplicate) when it comes again with the same arena, players and ts,
and is rejected as `id_reused` with another kill, for as long as the consumer remembers it."""

from __future__ import annotations

import heapq
from typing import Final

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

    def forget(self, watermark: int | None) -> None:
        """Drop the ids whose bucket ends at or before watermark - keep."""
        if watermark is None:
            return
        horizon = watermark - self._keep_ms
        due, content = self._due, self._content
        while due and due[0][0] <= horizon:
            _ts, event_id = heapq.heappop(due)
            del content[event_id]
