"""RatingBook: the in-memory, deterministic driver of the engine (replay, evaluation, tests)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Final, Literal

import msgspec

from engine._cooldown import is_duplicate, repeat_weight
from engine._errors import EngineError
from engine._kill import NextScalars, Scalars, kill_update, predict
from engine._pair_load import PairLoads, load_weight
from engine._pairs import PairTable
from engine._season import NO_SEASONS, SeasonSchedule, ladder_of, reset_scalars
from engine._sigma import sigma_mean, sigma_units
from engine._snapshot import take_snapshot
from engine._state import PlayerState, Snapshot, initial_snapshot, new_player
from engine._store import PlayerRecord, PlayerStore
from engine.params import MS_PER_SECOND, Params

DEFAULT_CALIBRATE_EVERY_MS: Final = 300 * MS_PER_SECOND
DEFAULT_LATENESS_MS: Final = 3600 * MS_PER_SECOND
MAX_TS_MS: Final = 2**53 - 1  # event times are ints in [0, 2**53): exact in JSON and as float

_HEAP_SHIFT: Final = 32  # active heap entry = expiry << 32 | player number
_HEAP_MASK: Final = (1 << _HEAP_SHIFT) - 1


class Verdict(msgspec.Struct, frozen=True, gc=False):
    """What `RatingBook.apply` did with an event."""

    kind: Literal["counted", "duplicate", "rejected"]
    reason: str | None = None  # why it was rejected: self_kill, late, bad_ts, bad_player


COUNTED: Final = Verdict("counted")
DUPLICATE: Final = Verdict("duplicate")
_REJECTED = {r: Verdict("rejected", r) for r in ("self_kill", "late", "bad_ts", "bad_player")}


class RatingBook:
    """ADR over an ordered event stream, all state in memory; same input ⇒ bit-identical state.

    Snapshots are taken offline (docs/algorithm.md#snapshot): before a counted event at t when none
    exists yet or t − last ≥ calibrate_every_ms (event time). With `fixed_snapshot`, never.

    Late events (not in the paper): the book keeps a watermark W = max ts accepted; an event with
    ts < W − lateness_ms is rejected ("late"). That lets a→b cooldown entries with
    t' + cooldown ≤ W − lateness be dropped while dedup stays exact for every accepted event.

    Seasons (`seasons`, engine/_season.py): a player's first counted event at or after a season's
    start takes that season's soft reset before it is rated (`season_step`'s rule, on the
    records).
    """

    def __init__(
        self,
        params: Params,
        *,
        calibrate_every_ms: int = DEFAULT_CALIBRATE_EVERY_MS,
        fixed_snapshot: Snapshot | None = None,
        lateness_ms: int = DEFAULT_LATENESS_MS,
        seasons: SeasonSchedule = NO_SEASONS,
    ) -> None:
        if calibrate_every_ms < 0 or lateness_ms < 0:
            raise EngineError("calibrate_every_ms and lateness_ms must be >= 0")
        self.params = params
        self.seasons = seasons
        self._newest_counted: int | None = None  # the largest counted ts (the ladder's season)
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
        self._pairs = PairTable(params.pair_memory_ms, lateness_ms)
        # The opt-in pair_decay's loads (None when off: the paper keeps no such state).
        self._loads = PairLoads(params, lateness_ms) if params.pair_decay_ms else None
        # Active set (§2.3): each player with n ≥ n_active has at most one heap entry
        # `expiry << 32 | number`, expiry = activity time + T_active when it was filed. The
        # activity time only grows, so an entry may lag; it is re-filed when it comes due.
        self._heap: list[int] = []

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
    def ladder(self) -> int:
        """The season the live ladder shows: that of the largest counted event time (0: the
        first; docs/api.md, "Seasons")."""
        newest = self._newest_counted
        return 0 if newest is None else ladder_of(self.seasons, newest)

    def is_late(self, ts: int) -> bool:
        """Whether an event at `ts` is late: older than the watermark less `lateness_ms`."""
        watermark = self._watermark
        return watermark is not None and ts < watermark - self.lateness_ms

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

    def cooldowns(self) -> Iterator[tuple[str, str, int]]:
        """(attacker, victim, last counted ts) of every a→b pair the cooldown table still holds
        (`adr rebuild` writes the consumer's cooldown records from them)."""
        ids = self._store.ids
        for (a, b), ts in self._pairs.items().items():
            yield ids[a], ids[b], ts

    # -- writing ------------------------------------------------------------------------------

    def apply(self, event_id: str, attacker: str, victim: str, ts: int) -> Verdict:
        """Process one kill event (docs/algorithm.md#steps, 1–13); event_id: logs only."""
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
        index = self._store.index
        ia = index.get(attacker)
        ib = index.get(victim)
        last: int | None = None
        if ia is not None and ib is not None:
            last = self._pairs.last(ia, ib, ts, watermark)
            if is_duplicate(last, ts, params):
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
        if self.seasons.starts:
            self._season_step(ia, ts)
            self._season_step(ib, ts)
        newest = self._newest_counted
        if newest is None or ts > newest:
            self._newest_counted = ts
        loads = self._loads
        if loads is None:
            self._rate(ia, ib, ts, last)
        else:
            load = loads.load(ia, ib, ts)
            self._rate(ia, ib, ts, last, load_weight(load, params))
            loads.put(ia, ib, ts, load, watermark)
        self._pairs.put(ia, ib, ts, watermark, watermark - self.lateness_ms - params.pair_memory_ms)
        self.counted += 1
        return COUNTED

    def _rate(self, ia: int, ib: int, ts: int, last: int | None, load_w: float = 1.0) -> None:
        """Steps 5–13 on the stored records: the same `kill_update` as rate_kill (`last`: the
        pair's last counted time, for the opt-in repeat_window; `load_w`: the opt-in
        pair_decay's weight, as rate_kill multiplies it)."""
        store = self._store
        records = store.records
        ra = records[ia]
        rb = records[ib]
        units_a = ra.sigma_u
        units_b = rb.sigma_u
        w_a, w_b = store.window_mean(ia, ra), store.window_mean(ib, rb)
        weight = repeat_weight(last, ts, self.params)
        if load_w != 1.0:
            weight *= load_w
        _p, next_a, next_b, delta = kill_update(
            _scalars(ra), w_a, units_a, _scalars(rb), w_b, units_b,
            ts, self._units, len(records), self._snapshot, self.params, weight,
        )  # fmt: skip
        self._update_player(ia, ra, next_a, ts)
        self._update_player(ib, rb, next_b, ts)
        self._units += delta

    def _update_player(self, i: int, r: PlayerRecord, s: NextScalars, ts: int) -> None:
        """Player i after the event at ts, from its next scalars (steps 9–13)."""
        (r.mu, r.sigma, r.sigma_u, r.pool, r.n, r.tier, r.h_up, r.h_down, r.streak, r.phi,
         delta_mu) = s  # fmt: skip
        r.last_ts = ts
        self._store.push_window(i, r, delta_mu)
        self._store.push_recent(i, r, ts)
        if not r.in_heap:
            activity = self._store.activity_time(i, r)
            if activity is not None:
                heapq.heappush(self._heap, ((activity + self.params.active_ms) << _HEAP_SHIFT) | i)
                r.in_heap = True

    # -- internals ----------------------------------------------------------------------------

    def _season_step(self, i: int, ts: int) -> None:
        """engine.season_step on player i's record: the soft reset of every season start its
        event at `ts` crosses (its newest counted time < start <= ts); none for a player with no
        counted event. S follows the new σ."""
        r = self._store.records[i]
        if r.rec_len == 0:
            return
        newest = r.rec_newest
        params = self.params
        for start in self.seasons.starts:
            if start.start_ms > ts:
                break
            if newest < start.start_ms:
                r.mu, r.sigma = reset_scalars(r.mu, r.sigma, start.pool_mean, start.reset, params)
                r.streak = 0
                r.phi = r.h_up = r.h_down = 0.0
                units = sigma_units(r.sigma, params)
                self._units += units - r.sigma_u
                r.sigma_u = units

    def _reject(self, reason: str) -> Verdict:
        self.rejected += 1
        self.rejected_by_reason[reason] = self.rejected_by_reason.get(reason, 0) + 1
        return _REJECTED[reason]

    def _track(self, player: str) -> int:
        """Step 4: a new player joins P with the initial state; its σ0 enters S (§2.2)."""
        params = self.params
        i = self._store.add(player, new_player(params))
        self._units += sigma_units(params.sigma0, params)
        return i

    def _expire(self, now: int) -> None:
        """Leave in the heap exactly the players active at now, each once (§2.3)."""
        heap, store = self._heap, self._store
        records, active_ms = store.records, self.params.active_ms
        while heap and heap[0] >> _HEAP_SHIFT <= now:
            i = heapq.heappop(heap) & _HEAP_MASK
            r = records[i]
            activity = store.activity_time(i, r)
            if activity is not None and activity + active_ms > now:
                heapq.heappush(heap, ((activity + active_ms) << _HEAP_SHIFT) | i)
            else:
                r.in_heap = False

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
        store = self._store
        records, active_ms = store.records, self.params.active_ms
        active: list[float] = []
        if 4 * len(self._heap) < len(records):  # few active: visit them through the heap
            for entry in self._heap:
                i = entry & _HEAP_MASK
                r = records[i]
                activity = store.activity_time(i, r)
                if activity is not None and activity + active_ms > now:
                    active.append(r.mu)
        else:  # many: one sequential pass is cheaper than hopping through the heap
            for i, r in enumerate(records):
                if r.in_heap:
                    activity = store.activity_time(i, r)
                    if activity is not None and activity + active_ms > now:
                        active.append(r.mu)
        fallback = (r.mu for r in records)
        snapshot = take_snapshot(now, active, fallback, self._snapshot, self.params)
        self._pending = (now, self.counted, snapshot)
        return snapshot


def _scalars(r: PlayerRecord) -> Scalars:
    """The scalars `kill_update` reads from a record (last_ts NO_TS while n == 0)."""
    return (r.mu, r.sigma, r.n, r.last_ts, r.streak, r.phi, r.pool, r.tier, r.h_up, r.h_down)
