"""An engine `RatingModel` (engine/_model.py) behind the evaluation's `RatingSystem`.

The caller's side of the seam, as the consumer and RatingBook keep it: each player's state, the
pool's aggregates the model reads (S = Σ units over tracked players, P = their count), the
population snapshot (taken on event time before a counted event when none exists or the last is
`calibrate_every_ms` old, over the players active by the model's own activity time, as
RatingBook does) and each ordered pair's last counted time (`pair_last`, for ADR's opt-in
repeat_window). The cooldown, lateness and event-id rules are not here: `adr evaluate --events`
applies them once, with the consumer's rules (redis_layout/event_ids.py), and feeds only counted
events.
"""

from __future__ import annotations

import heapq
from typing import Any

from engine import Params, RatingModel, Snapshot, initial_snapshot, take_snapshot


class ModelSystem:
    """One engine model, its players and its pool aggregates, in memory."""

    def __init__(
        self, model: RatingModel[Any], params: Params, calibrate_every_ms: int, name: str = ""
    ) -> None:
        self.model = model
        self.name = name or model.name
        self.params = params  # the snapshot's (quantiles, T_active); ADR's are the model's own
        self.calibrate_every_ms = calibrate_every_ms
        self.states: dict[str, Any] = {}
        self.total_units = 0
        self.snapshot: Snapshot = initial_snapshot(params)
        self.pair_last: dict[tuple[str, str], int] = {}
        self._new = model.new_player()
        self._new_units = model.units(self._new)
        # The active set (§2.3) without visiting every player: each player whose activity time
        # is set has its expiry (activity + T_active) here and an entry in the heap; entries
        # made stale by a later update are skipped when they come up.
        self._expiry: dict[str, int] = {}
        self._heap: list[tuple[int, str]] = []
        self._updates = 0
        self._pending: tuple[int, int, Snapshot] | None = None  # (ts, updates, due snapshot)

    def _snapshot_at(self, ts: int) -> Snapshot:
        """The snapshot in force for an event at ts: a fresh one when it is due."""
        taken = self.snapshot.taken_at
        if taken is not None and ts - taken < self.calibrate_every_ms:
            return self.snapshot
        pending = self._pending
        if pending is not None and pending[0] == ts and pending[1] == self._updates:
            return pending[2]  # predict computed it for this event; update takes it
        heap, expiry = self._heap, self._expiry
        while heap and heap[0][0] <= ts:
            at, player = heapq.heappop(heap)
            if expiry.get(player) == at:
                del expiry[player]
        display, states = self.model.display, self.states
        active = [display(states[p]) for p in expiry]
        fallback = (display(s) for s in states.values())
        snapshot = take_snapshot(ts, active, fallback, self.snapshot, self.params)
        self._pending = (ts, self._updates, snapshot)
        return snapshot

    def _track_activity(self, player: str, state: Any) -> None:
        at = self.model.activity_time(state)
        if at is None:
            self._expiry.pop(player, None)
            return
        until = at + self.params.active_ms
        if self._expiry.get(player) != until:
            self._expiry[player] = until
            heapq.heappush(self._heap, (until, player))

    def _pool(self, a: str, b: str) -> tuple[Any, Any, int, int]:
        """Both states and S, P counting a and b (a new player at its initial state)."""
        units, count = self.total_units, len(self.states)
        sa, sb = self.states.get(a), self.states.get(b)
        if sa is None:
            sa, units, count = self._new, units + self._new_units, count + 1
        if sb is None:
            sb, units, count = self._new, units + self._new_units, count + 1
        return sa, sb, units, count

    def predict(self, a: str, b: str, ts: int) -> float:
        sa, sb, units, count = self._pool(a, b)
        return self.model.predict(sa, sb, ts, units, count, self._snapshot_at(ts))

    def update(self, a: str, b: str, ts: int) -> None:
        self.snapshot = self._snapshot_at(ts)
        sa, sb, units, count = self._pool(a, b)
        self.total_units = units
        out = self.model.rate(sa, sb, ts, units, count, self.snapshot, self.pair_last.get((a, b)))
        self.states[a], self.states[b] = out.attacker, out.victim
        self.total_units += out.sigma_units_delta
        self.pair_last[(a, b)] = ts
        self._updates += 1
        self._track_activity(a, out.attacker)
        self._track_activity(b, out.victim)

    def rating(self, player: str) -> float:
        state = self.states.get(player)
        return self.model.display(self._new if state is None else state)

    def tier(self, player: str) -> int | None:
        state = self.states.get(player)
        return 0 if state is None else self.model.tier(state)
