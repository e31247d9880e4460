"""RatingBook: the in-memory, deterministic driver of the engine (replay, evaluation, tests)."""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterator
from typing import Final, Literal

import msgspec

from engine._cooldown import is_duplicate
from engine._errors import EngineError
from engine._kill import predict, rate_kill
from engine._sigma import sigma_mean, sigma_units
from engine._snapshot import activity_time, take_snapshot
from engine._state import PlayerState, Snapshot, initial_snapshot, new_player
from engine._store import PlayerStore
from engine.params import MS_PER_SECOND, Params

DEFAULT_CALIBRATE_EVERY_MS: Final = 300 * MS_PER_SECOND
DEFAULT_LATENESS_MS: Final = 3600 * MS_PER_SECOND

_PAIR_SHIFT: Final = 32  # cooldown key = attacker number << 32 | victim number
_PAIR_MASK: Final = (1 << _PAIR_SHIFT) - 1


class Verdict(msgspec.Struct, frozen=True, gc=False):
    """What `RatingBook.apply` did with an event."""

    kind: Literal["counted", "duplicate", "rejected"]
    reason: str | None = None  # why it was rejected: self_kill, late, bad_ts, bad_player


COUNTED: Final = Verdict("counted")
DUPLICATE: Final = Verdict("duplicate")
_REJECTED = {r: Verdict("rejected", r) for r in ("self_kill", "late", "bad_ts", "bad_player")}


class RatingBook:
    """ADR over an ordered event stream, all state in memory; same input ⇒ bit-identical state.

    Snapshots are taken offline as adr-reading.md says: before a counted event at t when none exists
    yet or t − last ≥ calibrate_every_ms (event time). With `fixed_snapshot` it never calibrates.

    Late events (not in the paper): the book keeps a watermark W = max ts accepted; an event with
    ts < W − lateness_ms is rejected ("late"). That lets a→b cooldown entries with
    t' + cooldown ≤ W − lateness be dropped while dedup stays exact for every accepted event.
    """

    def __init__(
        self,
        params: Params,
        *,
        calibrate_every_ms: int = DEFAULT_CALIBRATE_EVERY_MS,
        fixed_snapshot: Snapshot | None = None,
        lateness_ms: int = DEFAULT_LATENESS_MS,
    ) -> None:
        if calibrate_every_ms < 0 or lateness_ms < 0:
            raise EngineError("calibrate_every_ms and lateness_ms must be >= 0")
        self.params = params
        self.calibrate_every_ms = calibrate_every_ms
        self.lateness_ms = lateness_ms
        self._fixed = fixed_snapshot is not None
        self._snapshot = fixed_snapshot if fixed_snapshot is not None else initial_snapshot(params)
        # (now, counted, snapshot): a due snapshot computed by predict, reused by apply
        self._pending: tuple[int, int, Snapshot] | None = None
        self._store = PlayerStore(params)
        self._units = 0  # S = Σ σ_i·2**k over tracked players, exact
        self.counted = 0
        self.duplicates = 0
        self.rejected = 0
        self.rejected_by_reason: dict[str, int] = {}
        self._watermark: int | None = None
        self._cooldown: dict[int, int] = {}
        self._prune_every = max(1, (lateness_ms + params.cooldown_ms) // 4)
        self._pruned_at: int | None = None
        # Active set: expiry = activity time + T_active per player (0 = none); heap of
        # expiry << 32 | number with lazy deletion; `_live` players have an expiry set.
        self._expiry = array("q")
        self._heap: list[int] = []
        self._live = 0

    # -- reading ------------------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        """The population snapshot in force."""
        return self._snapshot

    @property
    def watermark(self) -> int | None:
        """The largest event time accepted so far (ms)."""
        return self._watermark

    @property
    def total_sigma_units(self) -> int:
        """S, the exact σ-sum in units of 2**-k."""
        return self._units

    def __len__(self) -> int:
        return len(self._store)

    def sigma_mean(self) -> float:
        """σ̄ over all tracked players (σ0 when none)."""
        count = len(self._store)
        return sigma_mean(self._units, count, self.params) if count else self.params.sigma0

    def player(self, player: str) -> PlayerState | None:
        """The stored state of `player`, None if untracked."""
        i = self._store.index.get(player)
        return None if i is None else self._store.get(i)

    def players(self) -> dict[str, PlayerState]:
        """Every tracked player's state, in id order."""
        return dict(self._store.sorted_items())

    def iter_players(self) -> Iterator[tuple[str, PlayerState]]:
        """(id, state) in id order, one state at a time."""
        return self._store.sorted_items()

    def predict(self, attacker: str, victim: str, ts: int) -> float:
        """P_ab exactly as a counted event "attacker kills victim at ts" would use it next (§3)."""
        if attacker == victim:
            raise EngineError("predict needs two different players")
        params = self.params
        store = self._store
        units, count = self._units, len(store)
        states: list[PlayerState] = []
        for player in (attacker, victim):
            i = store.index.get(player)
            if i is None:
                states.append(new_player(params))
                units += sigma_units(params.sigma0, params)
                count += 1
            else:
                states.append(store.get(i))
        return predict(states[0], states[1], ts, units, count, self._snapshot_at(ts), params)

    # -- writing ------------------------------------------------------------------------------

    def apply(self, event_id: str, attacker: str, victim: str, ts: int) -> Verdict:
        """Process one kill event (steps 1–13 of adr-reading.md); event_id is only for logs."""
        if attacker == victim:
            return self._reject("self_kill")
        if type(ts) is not int or ts < 0:
            return self._reject("bad_ts")
        if not attacker or not victim:
            return self._reject("bad_player")
        watermark = self._watermark
        if watermark is not None and ts < watermark - self.lateness_ms:
            return self._reject("late")
        if watermark is None or ts > watermark:
            self._watermark = watermark = ts
        params = self.params
        store = self._store
        ia = store.index.get(attacker)
        ib = store.index.get(victim)
        key = -1
        if ia is not None and ib is not None:
            key = (ia << _PAIR_SHIFT) | ib
            if is_duplicate(self._cooldown.get(key), ts, params):
                self.duplicates += 1
                return DUPLICATE
        if not self._fixed:
            taken = self._snapshot.taken_at
            if taken is None or ts - taken >= self.calibrate_every_ms:
                self._expire(ts)
                self._snapshot = self._snapshot_at(ts)
                self._pending = None
        if ia is None:
            ia = self._track(attacker)
        if ib is None:
            ib = self._track(victim)
        if key < 0:
            key = (ia << _PAIR_SHIFT) | ib
        out = rate_kill(
            store.get(ia), store.get(ib), ts, self._units, len(store), self._snapshot, params
        )
        store.put(ia, out.attacker)
        store.put(ib, out.victim)
        self._units += out.sigma_units_delta
        self._cooldown[key] = ts
        self._touch(ia, out.attacker)
        self._touch(ib, out.victim)
        self.counted += 1
        if self._pruned_at is None:
            self._pruned_at = watermark
        elif watermark - self._pruned_at >= self._prune_every:
            self._prune_cooldown(watermark)
        return COUNTED

    # -- internals ----------------------------------------------------------------------------

    def _reject(self, reason: str) -> Verdict:
        self.rejected += 1
        self.rejected_by_reason[reason] = self.rejected_by_reason.get(reason, 0) + 1
        return _REJECTED[reason]

    def _track(self, player: str) -> int:
        """Step 4: a new player joins P with the initial state; its σ0 enters S (§2.2)."""
        params = self.params
        i = self._store.add(player, new_player(params))
        self._expiry.append(0)
        self._units += sigma_units(params.sigma0, params)
        return i

    def _touch(self, i: int, state: PlayerState) -> None:
        """Keep player i's activity expiry (activity time + T_active) in the heap (§2.3)."""
        t = activity_time(state, self.params)
        if t is None:
            return
        expiry = t + self.params.active_ms
        old = self._expiry[i]
        if expiry == old:
            return
        if old == 0:
            self._live += 1
        self._expiry[i] = expiry
        heapq.heappush(self._heap, (expiry << _PAIR_SHIFT) | i)
        if len(self._heap) > 2 * self._live + 64:
            self._compact_heap()

    def _compact_heap(self) -> None:
        expiry = self._expiry
        self._heap = [e for e in self._heap if expiry[e & _PAIR_MASK] == e >> _PAIR_SHIFT]
        heapq.heapify(self._heap)

    def _expire(self, now: int) -> None:
        """Drop players whose activity expired at or before now from the active heap (§2.3)."""
        heap, expiry = self._heap, self._expiry
        while heap and heap[0] >> _PAIR_SHIFT <= now:
            entry = heapq.heappop(heap)
            i = entry & _PAIR_MASK
            if expiry[i] == entry >> _PAIR_SHIFT:
                expiry[i] = 0
                self._live -= 1

    def _snapshot_at(self, now: int) -> Snapshot:
        """The snapshot an event at `now` uses: the current one or a fresh one if due (§2.3)."""
        if self._fixed:
            return self._snapshot
        taken = self._snapshot.taken_at
        if taken is not None and now - taken < self.calibrate_every_ms:
            return self._snapshot
        pending = self._pending
        if pending is not None and pending[0] == now and pending[1] == self.counted:
            return pending[2]
        expiry, mu = self._expiry, self._store.mu
        active = [
            mu[e & _PAIR_MASK]
            for e in self._heap
            if expiry[e & _PAIR_MASK] == e >> _PAIR_SHIFT and e >> _PAIR_SHIFT > now
        ]
        snapshot = take_snapshot(now, active, iter(mu), self._snapshot, self.params)
        self._pending = (now, self.counted, snapshot)
        return snapshot

    def _prune_cooldown(self, watermark: int) -> None:
        """Forget a→b entries no accepted event can hit: t' + cooldown ≤ W − lateness (§2.1)."""
        horizon = watermark - self.lateness_ms - self.params.cooldown_ms
        self._cooldown = {k: t for k, t in self._cooldown.items() if t > horizon}
        self._pruned_at = watermark
