"""Repeat-kill cooldown preprocessing (§2.1)."""

from __future__ import annotations

from engine.params import Params


def is_duplicate(t_prev: int | None, ts: int, params: Params) -> bool:
    """True iff the last counted a→b event at t_prev lies within the cooldown of ts (§2.1)."""
    return t_prev is not None and abs(ts - t_prev) < params.cooldown_ms


def repeat_weight(t_prev: int | None, ts: int, params: Params) -> float:
    """Opt-in (params.repeat_window = W > 0 s; the paper: 0): the share of the paper's μ changes
    that an a→b kill at ts gets when the last counted a→b kill was at t_prev: |ts − t_prev|/W
    inside the window, 1 outside it or without one (always 1 when W = 0).

    The cooldown (§2.1) drops repeats under 60 s but counts one paced at 65 s in full; the
    weight makes the gain from one victim grow with the time since the pair's last kill, so
    pacing kills just outside the cooldown earns gap/W of a kill, whatever the pace."""
    window = params.repeat_window_ms
    if not window or t_prev is None:
        return 1.0
    gap = abs(ts - t_prev)
    return 1.0 if gap >= window else gap / window
