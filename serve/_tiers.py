"""`/v1/tiers` from one state: the players per tier, the tracked count and the published
boundaries in one read-only script, so that the counts and the boundaries of an answer belong
to one moment (two reads could pair the counts of one calibration with the boundaries of the
next). The script reads the keys `adr leaderboard tiers` and `Board.boundaries` read; the table
is computed as `Board.tiers` computes it (leaderboard/_board.py)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

import redis

from engine import TIER_LABELS
from redis_layout import CorruptValue, Keys

_SCRIPT: Final = """
-- KEYS: tier_counts, pop, snapshot.  Read-only (EVAL_RO): {{label, n, ...}, P or false,
-- {version, computed_at, boundaries} (each false where absent)}, from one state.
return {redis.call('HGETALL', KEYS[1]), redis.call('HGET', KEYS[2], 'count'),
        redis.call('HMGET', KEYS[3], 'version', 'computed_at', 'boundaries')}
"""
_SHA: Final = hashlib.sha1(_SCRIPT.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class TierState:
    counts: list[tuple[str, int, float, float, float | None]]
    """Per tier, best first: label, players, share of the placed, target share, lowest μ."""
    placed: int
    tracked: int
    version: int
    computed_at: int


def read_tiers(client: redis.Redis, keys: Keys, tier_shares: tuple[Fraction, ...]) -> TierState:
    args: list[Any] = [3, keys.tier_counts, keys.pop, keys.snapshot]
    try:
        flat, tracked, snapshot = client.evalsha_ro(_SHA, *args)
    except redis.exceptions.NoScriptError:
        flat, tracked, snapshot = client.eval_ro(_SCRIPT, *args)
    counts = {_text(flat[i]): int(flat[i + 1]) for i in range(0, len(flat), 2)}
    placed = sum(counts.get(label, 0) for label in TIER_LABELS)
    version, computed_at, raw = snapshot
    bounds = _boundaries(raw, keys.snapshot) or []
    rows = [
        (
            label,
            counts.get(label, 0),
            counts.get(label, 0) / placed if placed else 0.0,
            float(share),
            bounds[i] if i < len(bounds) else None,
        )
        for i, (label, share) in enumerate(zip(TIER_LABELS, tier_shares, strict=True))
    ]
    return TierState(rows, placed, int(tracked or 0), int(version or 0), int(computed_at or 0))


def _boundaries(raw: bytes | None, key: str) -> list[float] | None:
    """The snapshot's boundaries (None before the first calibration), as Board.boundaries
    reads them: a JSON list of numbers, else CorruptValue."""
    if not raw:
        return None
    try:
        values = json.loads(raw)
    except ValueError:
        values = "not JSON"
    if not isinstance(values, list) or not all(type(v) in (float, int) for v in values):
        raise CorruptValue("snapshot", key, "boundaries: not a list of numbers")
    return [float(v) for v in values]


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
