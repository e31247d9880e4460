"""ModelBook: any RatingModel over an ordered event stream, all state in memory (`adr replay
--model`, evaluation, tests); the same rules as RatingBook, which stays ADR's fast columnar book.

The rules are RatingBook's, to the letter: self kills, bad times and empty ids rejected; the
watermark W (max ts accepted) and lateness (ts < W − lateness_ms rejected as late); the a→b
cooldown (§2.1, `Params.t_cooldown`, ADR's parameter, whatever the model) on the same pair table;
snapshots before a counted event at t when none exists yet or t − last ≥ calibrate_every_ms, over
the model's display rating of the active players (activity time + T_active > t, §2.3); the
pool's S and P as the model needs them. With AdrModel it gives RatingBook's states bit for bit
(tests/engine/test_engine_model_book.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from engine._book import (
    COUNTED,
    DEFAULT_CALIBRATE_EVERY_MS,
    DEFAULT_LATENESS_MS,
    DUPLICATE,
    MAX_TS_MS,
    Verdict,
)
from engine._cooldown import is_duplicate
from engine._errors import EngineError
from engine._model import RatingModel
from engine._pairs import PairTable
from engine._snapshot import take_snapshot
from engine._state import Snapshot
from engine.params import Params

S = TypeVar("S")
_REJECTED = {r: Verdict("rejected", r) for r in ("self_kill", "late", "bad_ts", "bad_player")}


class ModelBook(Generic[S]):
    """One model's pool over an ordered event stream; same input ⇒ bit-identical state."""

    def __init__(
        self,
        model: RatingModel[S],
        params: Params,
        *,
        calibrate_every_ms: int = DEFAULT_CALIBRATE_EVERY_MS,
        fixed_snapshot: Snapshot | None = None,
        lateness_ms: int = DEFAULT_LATENESS_MS,
    ) -> None:
        """`params`: the pool's rules (t_cooldown, T_active, the tier shares of the snapshot);
        for ADR, the model's own Params."""
        if calibrate_every_ms < 0 or lateness_ms < 0:
            raise EngineError("calibrate_every_ms and lateness_ms must be >= 0")
        self.model = model
        self.params = params
        self.calibrate_every_ms = calibrate_every_ms
        self.lateness_ms = lateness_ms
        self._fixed = fixed_snapshot is not None
        self._snapshot = fixed_snapshot or Snapshot(
            taken_at=None,
            mean_mu_active=model.display(model.new_player()),
            boundaries=None,
            active_count=0,
        )
        self._index: dict[str, int] = {}
        self._ids: list[str] = []
        self._states: list[S] = []
        self._in_heap: list[bool] = []
        self._heap: list[tuple[int, int]] = []  # (activity time + T_active when filed, number)
        self._pending: tuple[int, int, Snapshot] | None = None
        """(now, counted, snapshot): the due snapshot `predict` took for an event at now, which
        that event's `apply` then uses instead of taking it again (as RatingBook does)."""
        self._units = 0
        self.counted = 0
        self.duplicates = 0
        self.rejected = 0
        self.rejected_by_reason: dict[str, int] = {}
        self._watermark: int | None = None
        self._pairs = PairTable(params.pair_memory_ms, lateness_ms)

    # -- reading --------------------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def watermark(self) -> int | None:
        return self._watermark

    def is_late(self, ts: int) -> bool:
        watermark = self._watermark
        return watermark is not None and ts < watermark - self.lateness_ms

    @property
    def total_sigma_units(self) -> int:
        """S, the sum of the model's units over tracked players (0 for all but ADR)."""
        return self._units

    def __len__(self) -> int:
        return len(self._states)

    def player(self, player: str) -> S | None:
        i = self._index.get(player)
        return None if i is None else self._states[i]

    def iter_players(self) -> Iterator[tuple[str, S]]:
        """(id, state) in id order."""
        for player in sorted(self._index):
            yield player, self._states[self._index[player]]

    def players(self) -> dict[str, S]:
        return dict(self.iter_players())

    def cooldowns(self) -> Iterator[tuple[str, str, int]]:
        """(attacker, victim, last counted ts) of every a→b pair the cooldown table still holds
        (`adr rebuild` writes the consumer's cooldown records from them)."""
        ids = self._ids
        for (a, b), ts in self._pairs.items().items():
            yield ids[a], ids[b], ts

    def predict(self, attacker: str, victim: str, ts: int) -> float:
        """P(attacker kills victim) exactly as a counted event at ts would use it next."""
        if attacker == victim:
            raise EngineError("predict needs two different players")
        model = self.model
        units, count = self._units, len(self._states)
        pair: list[S] = []
        for player in (attacker, victim):
            state = self.player(player)
            if state is None:
                state = model.new_player()
                units += model.units(state)
                count += 1
            pair.append(state)
        return model.predict(pair[0], pair[1], ts, units, count, self._snapshot_at(ts))

    # -- writing --------------------------------------------------------------------------------

    def apply(self, event_id: str, attacker: str, victim: str, ts: int) -> Verdict:
        """Process one kill event (RatingBook.apply's steps, the model's update)."""
        if attacker == victim:
            return self._reject("self_kill")
        if type(ts) is not int or not 0 <= ts <= MAX_TS_MS:
            return self._reject("bad_ts")
        if not attacker or not victim:
            return self._reject("bad_player")
        if self.is_late(ts):
            return self._reject("late")
        watermark = self._watermark
        if watermark is None or ts > watermark:
            self._watermark = watermark = ts
        params = self.params
        ia = self._index.get(attacker)
        ib = self._index.get(victim)
        last: int | None = None
        if ia is not None and ib is not None:
            last = self._pairs.last(ia, ib, ts, watermark)
            if is_duplicate(last, ts, params):
                self.duplicates += 1
                return DUPLICATE
        if not self._fixed:
            taken = self._snapshot.taken_at
            if taken is None or ts - taken >= self.calibrate_every_ms:
                self._snapshot = self._snapshot_at(ts)
                self._pending = None
        if ia is None:
            ia = self._track(attacker)
        if ib is None:
            ib = self._track(victim)
        states = self._states
        out = self.model.rate(
            states[ia], states[ib], ts, self._units, len(states), self._snapshot, last
        )
        states[ia], states[ib] = out.attacker, out.victim
        self._units += out.sigma_units_delta
        self._file(ia)
        self._file(ib)
        self._pairs.put(ia, ib, ts, watermark, watermark - self.lateness_ms - params.pair_memory_ms)
        self.counted += 1
        return COUNTED

    # -- internals ------------------------------------------------------------------------------

    def _reject(self, reason: str) -> Verdict:
        self.rejected += 1
        self.rejected_by_reason[reason] = self.rejected_by_reason.get(reason, 0) + 1
        return _REJECTED[reason]

    def _track(self, player: str) -> int:
        state = self.model.new_player()
        i = len(self._states)
        self._index[player] = i
        self._ids.append(player)
        self._states.append(state)
        self._in_heap.append(False)
        self._units += self.model.units(state)
        return i

    def _file(self, i: int) -> None:
        """Give player i an entry in the active heap once it has an activity time."""
        if not self._in_heap[i]:
            since = self.model.activity_time(self._states[i])
            if since is not None:
                heapq.heappush(self._heap, (since + self.params.active_ms, i))
                self._in_heap[i] = True

    def _active_since(self, i: int, now: int) -> bool:
        since = self.model.activity_time(self._states[i])
        return since is not None and since + self.params.active_ms > now

    def _snapshot_at(self, now: int) -> Snapshot:
        """The snapshot an event at `now` uses: the current one, or a fresh one if due."""
        snapshot = self._snapshot
        if self._fixed:
            return snapshot
        taken = snapshot.taken_at
        if taken is not None and now - taken < self.calibrate_every_ms:
            return snapshot
        pending = self._pending
        if pending is not None and pending[0] == now and pending[1] == self.counted:
            return pending[2]
        heap, active_ms = self._heap, self.params.active_ms
        while heap and heap[0][0] <= now:  # expired entries: re-file if activity moved on
            _expiry, i = heapq.heappop(heap)
            since = self.model.activity_time(self._states[i])
            if since is not None and since + active_ms > now:
                heapq.heappush(heap, (since + active_ms, i))
            else:
                self._in_heap[i] = False
        display = self.model.display
        states = self._states
        if not states:
            return Snapshot(
                taken_at=now,
                mean_mu_active=snapshot.mean_mu_active,
                boundaries=snapshot.boundaries,
                active_count=0,
            )
        active = [display(states[i]) for _expiry, i in heap if self._active_since(i, now)]
        every: Any = (display(state) for state in states)
        taken_now = take_snapshot(now, active, every, snapshot, self.params)
        self._pending = (now, self.counted, taken_now)
        return taken_now
