"""The consumer's rules for which kill events count, offline: `adr replay` and `adr evaluate
--events` both run them.

`CountingRules` is the engine's RatingBook (self-kill, bad ts, bad player, lateness against the
watermark, the a→b cooldown of §2.1) behind the consumer's event-id rule (adr_cli/_event_ids.py,
schemas/kill_event.md "Meaning checks"): a counted id that comes again within the horizon is a
resend (a duplicate) or `id_reused` (another kill) before the book sees it. A late event stays
late, as in the consumer, whose lateness check comes first.
"""

from __future__ import annotations

from typing import Final

from adr_cli._event_ids import RESEND, EventIds
from engine import COUNTED, RatingBook

COUNTED_EVENT: Final = "counted"
COOLDOWN_DUPLICATE: Final = "duplicate"
RESENT: Final = "resend"
ID_REUSED: Final = "id_reused"


class CountingRules:
    """One book and its id memory; `apply` says what became of an event (and rates it with ADR
    when it counts: the book is the rules, and ADR's state comes with them)."""

    __slots__ = ("book", "ids", "resends", "reused")

    def __init__(self, book: RatingBook) -> None:
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
