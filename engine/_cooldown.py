"""Repeat-kill cooldown preprocessing (§2.1)."""

from __future__ import annotations

from engine.params import Params


def is_duplicate(t_prev: int | None, ts: int, params: Params) -> bool:
    """True iff the last counted a→b event at t_prev lies within the cooldown of ts (§2.1)."""
    return t_prev is not None and abs(ts - t_prev) < params.cooldown_ms
