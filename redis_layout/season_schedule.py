"""The season schedule, `{ns}:season_schedule` and `adr replay --seasons FILE` (docs/api.md,
"Seasons"): when each season after the pool's first starts (event time), and its soft reset.

The Redis record is a hash written by `adr season close` (scripts/season_close.lua) and read by
the consumer with every batch: `version` (decimal; absent = 0, no season started: the pool's
first season), `seasons` (the JSON text below) and `ladder` (decimal; the season the live board
shows, raised by the consumer's write when it counts the first event of a new season). The
consumer's write checks `version` against the one its batch was rated under, as it checks the
epoch, so a close racing a running consumer makes that batch rate again.

The text (the same in Redis and in the file `adr season schedule` prints and `adr replay
--seasons` reads): JSON `{"v": 1, "version": V, "seasons": [{"id", "start_ms", "pool_mean",
"keep", "sigma_raise"}, ...]}`, seasons by start. Floats are written as Python's repr (shortest
round-trip), so a replay reads the bits the consumer uses. Evolution: `v` is raised when a field
changes meaning; a reader refuses a `v` it does not know; fields may be added (readers ignore
unknown ones).
"""

from __future__ import annotations

import json
from typing import Any, Final

import msgspec

from engine import EngineError, SeasonReset, SeasonSchedule, SeasonStart

FORMAT: Final = 1
"""The text's `v`."""


class _Season(msgspec.Struct, frozen=True):
    id: str
    start_ms: int
    pool_mean: float
    keep: float
    sigma_raise: float


class _Text(msgspec.Struct, frozen=True):
    v: int
    version: int
    seasons: list[_Season]


_DECODE: Final = msgspec.json.Decoder(_Text)


def encode_schedule(schedule: SeasonSchedule) -> str:
    """The schedule's text (module docstring)."""
    seasons: list[dict[str, Any]] = [
        {
            "id": s.id,
            "start_ms": s.start_ms,
            "pool_mean": s.pool_mean,
            "keep": s.reset.keep,
            "sigma_raise": s.reset.sigma_raise,
        }
        for s in schedule.starts
    ]
    return json.dumps(
        {"v": FORMAT, "version": schedule.version, "seasons": seasons},
        separators=(",", ":"),
        allow_nan=False,
    )


def decode_schedule(text: str | bytes) -> SeasonSchedule:
    """A schedule's text back; ValueError (with the reason) when it is not one."""
    try:
        data = _DECODE.decode(text)
    except msgspec.DecodeError as exc:
        raise ValueError(f"not a season schedule: {exc}") from None
    if data.v != FORMAT:
        raise ValueError(f"season schedule format v={data.v}, this release reads v={FORMAT}")
    try:
        return SeasonSchedule(
            tuple(
                SeasonStart(s.id, s.start_ms, s.pool_mean, SeasonReset(s.keep, s.sigma_raise))
                for s in data.seasons
            ),
            version=data.version,
        )
    except EngineError as exc:
        raise ValueError(f"not a season schedule: {exc}") from None
