"""The pool's season schedule as the consumer reads it with every batch (`{ns}:season_schedule`,
redis_layout/season_schedule.py): one HMGET of its version, text and ladder in the view's round
trip, the text decoded again only when the version moved (a close is rare; a batch is not)."""

from __future__ import annotations

from typing import Any

import hiredis

from consumer._errors import CorruptState
from engine import NO_SEASONS, SeasonSchedule
from redis_layout.season_schedule import decode_schedule


class SeasonRecord:
    """The read of one pool's `{ns}:season_schedule` and the last schedule decoded from it."""

    __slots__ = ("_schedule", "command", "key")

    def __init__(self, key: str) -> None:
        self.key = key
        pack: Any = hiredis.pack_command  # its stub types a one-element tuple
        self.command: bytes = pack(("HMGET", key, "version", "seasons", "ladder"))
        self._schedule: SeasonSchedule = NO_SEASONS

    def parse(self, reply: Any) -> tuple[SeasonSchedule, int, int]:
        """(schedule, its version, the ladder) from the HMGET's reply (absent: no season started,
        version 0, ladder 0); CorruptState if the record does not decode or disagrees with itself
        (nothing can be rated until it is repaired: the write compares its version as text)."""
        try:
            if isinstance(reply, Exception):
                raise ValueError(str(reply))
            version_raw, text, ladder_raw = reply
            version = _count(version_raw)
            ladder = _count(ladder_raw)
            if version == 0 and text is None:
                if ladder:
                    raise ValueError(f"ladder {ladder} without a schedule")
                return NO_SEASONS, 0, 0
            schedule = self._schedule
            if schedule.version != version or version == 0:
                if text is None:
                    raise ValueError("version without a schedule")
                schedule = decode_schedule(text)
                if schedule.version != version:
                    raise ValueError(f"version {version} but the schedule says {schedule.version}")
                self._schedule = schedule
            if ladder > len(schedule.starts):
                raise ValueError(f"ladder {ladder} beyond the {len(schedule.starts)} starts")
        except ValueError as exc:
            raise CorruptState("season_schedule", self.key, str(exc)) from None
        return schedule, version, ladder


def _count(value: Any) -> int:
    """A decimal integer >= 0 as the write compares it (absent: 0)."""
    if value is None:
        return 0
    number = int(value)
    if number < 0 or str(number).encode() != value:
        raise ValueError(f"{value!r} is not a decimal integer >= 0")
    return number
