"""A player's rating history list `{ns}:history:<id>` (docs/leaderboards.md, "Rating history").

Each element is one rating change as a JSON array `[epoch, seq, ts, mu, sigma, tier]`: the change's
(epoch, seq) order key (schemas/rating_change.md), its event time (ms), μ and σ after it, and the
tier after it (null while unplaced). The list holds a player's last changes, oldest first, at most
the history reader's bound; scripts/history_append.lua appends in (epoch, seq) order and reads the
first two items of the last element to decide (so they lead, as plain integers). Floats are
written with repr (json does), so they read back exactly.
"""

from __future__ import annotations

import dataclasses
import json

from redis_layout._errors import CorruptValue


@dataclasses.dataclass(frozen=True, slots=True)
class HistoryPoint:
    """One rating change of a player as the history keeps it."""

    epoch: int
    seq: int
    ts: int
    mu: float
    sigma: float
    tier: str | None


def encode_history_point(point: HistoryPoint) -> str:
    return json.dumps(
        [point.epoch, point.seq, point.ts, point.mu, point.sigma, point.tier],
        separators=(",", ":"),
    )


def decode_history_point(raw: bytes | str) -> HistoryPoint:
    """One element of the list; CorruptValue (`what` = "history") if it is not one."""
    try:
        epoch, seq, ts, mu, sigma, tier = json.loads(raw)
        ok = (
            all(type(v) is int and v >= 0 for v in (epoch, seq, ts))
            and all(type(v) is float or type(v) is int for v in (mu, sigma))
            and (tier is None or type(tier) is str)
        )
    except (ValueError, TypeError):
        ok = False
    if not ok:
        raise CorruptValue("history", "", f"not a history point: {raw!r:.80}")
    return HistoryPoint(epoch, seq, ts, float(mu), float(sigma), tier)
