"""The common tier rule: one procedure for every system, so tier changes compare across them.

Quantile boundaries (§6.3's `take_snapshot`, on the system's own ratings of the active players,
recalibrated on event time) and §6.4's hysteresis accumulators, with the threshold in units of the
system's own population SD instead of ADR's h_req (ProtocolOptions.hysteresis_sd). The §10
protocol (`_protocol.run_protocol`) and the event-log evaluation (`_log_harness`) both run it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from engine import Params, Snapshot, h_down_next, h_up_next, take_snapshot, tier_of


def hysteresis_step(
    tier: int, up: float, down: float, rating: float, boundaries: tuple[float, ...], need: float
) -> tuple[int, float, float]:
    """One event of a placed player under the common rule: (tier, h↑, h↓) after it.

    An unplaced player (tier 0) takes the quantile tier of its rating. A placed one accumulates
    §6.4's h↑/h↓ and moves one tier once either reaches `need` (then both restart at 0)."""
    if tier == 0:
        return tier_of(rating, boundaries), up, down
    up = h_up_next(up, rating, tier, boundaries)
    down = h_down_next(down, rating, tier, boundaries)
    if up >= need or down >= need:
        return (tier - 1 if up >= need else tier + 1), 0.0, 0.0
    return tier, up, down


class CommonTiers:
    """The common rule's state for one system over players numbered 0, 1, 2, … as they appear.

    `calibrate(ts, ratings)` before an event (a new snapshot when none exists or one is
    `every_ms` old); `observe(i, rating, ts, sd)` after each own event of player i. A player is
    placed after `n_min` own events once boundaries exist, and active (in the snapshot) with
    `n_active` own events in the last `active_ms`: ADR's Params, the same for every system."""

    def __init__(self, params: Params, every_ms: int, hysteresis_sd: float) -> None:
        self.params = params
        self.every_ms = every_ms
        self.hysteresis_sd = hysteresis_sd
        self.snapshot: Snapshot | None = None
        self.recent: list[deque[int]] = []
        self.counts: list[int] = []
        self.tiers: list[int] = []
        self._up: list[float] = []
        self._down: list[float] = []

    def add_player(self) -> None:
        self.recent.append(deque(maxlen=self.params.n_active))
        self.counts.append(0)
        self.tiers.append(0)
        self._up.append(0.0)
        self._down.append(0.0)

    def active(self, now: int) -> list[int]:
        """Players with n_active own events, the oldest of them within active_ms of now."""
        p = self.params
        return [
            i
            for i, dq in enumerate(self.recent)
            if len(dq) == p.n_active and dq[0] > now - p.active_ms
        ]

    def calibrate(self, ts: int, ratings: Sequence[float] | np.ndarray) -> None:
        """A new snapshot before an event at ts when none exists or the last is every_ms old;
        `ratings`: every player's, by number."""
        snap = self.snapshot
        if snap is None or snap.taken_at is None or ts - snap.taken_at >= self.every_ms:
            active = [ratings[i] for i in self.active(ts)]
            self.snapshot = take_snapshot(ts, active, iter(ratings), snap, self.params)

    def observe(self, i: int, rating: float, ts: int, sd: Callable[[], float]) -> bool:
        """Record an own event of player i; True when it changed a placed player's tier. `sd`
        gives the system's population SD now (asked only for a placed player)."""
        self.recent[i].append(ts)
        self.counts[i] += 1
        snap = self.snapshot
        if snap is None or snap.boundaries is None or self.counts[i] < self.params.n_min:
            return False
        old = self.tiers[i]
        need = self.hysteresis_sd * sd() if old else 0.0
        tier, self._up[i], self._down[i] = hysteresis_step(
            old, self._up[i], self._down[i], rating, snap.boundaries, need
        )
        self.tiers[i] = tier
        return old != 0 and tier != old
