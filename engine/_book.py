"""RatingBook: the in-memory, deterministic driver of the engine (replay, evaluation, tests)."""

from __future__ import annotations

from collections.abc import Iterator

from engine._cooldown import repeat_weight
from engine._counting import (
    COUNTED,
    DEFAULT_CALIBRATE_EVERY_MS,
    DEFAULT_LATENESS_MS,
    DUPLICATE,
    MAX_TS_MS,
    Counting,
    Verdict,
)
from engine._errors import EngineError
from engine._kill import NextScalars, Scalars, kill_update, predict
from engine._pair_load import PairLoads, load_weight
from engine._season import NO_SEASONS, SeasonSchedule, ladder_of, reset_scalars, season_step
from engine._sigma import sigma_mean, sigma_units
from engine._state import PlayerState, Snapshot, initial_snapshot, new_player
from engine._store import PlayerRecord, PlayerStore
from engine.params import Params

__all__ = [
    "COUNTED",
    "DEFAULT_CALIBRATE_EVERY_MS",
    "DEFAULT_LATENESS_MS",
    "DUPLICATE",
    "MAX_TS_MS",
    "RatingBook",
    "Verdict",
]


class RatingBook:
    """ADR over an ordered event stream, all state in memory; same input ⇒ bit-identical state.

    Which events count, the active set and when snapshots are taken are the counting rules of
    engine/_counting.py (shared with ModelBook): self kills, bad times and empty ids rejected;
    late events (ts < W − lateness_ms, W the largest time accepted) rejected; the a→b cooldown;
    a snapshot (docs/algorithm.md#snapshot) before a counted event at t when none exists yet or
    t − last ≥ calibrate_every_ms (event time), never with `fixed_snapshot`. The players live in
    a columnar PlayerStore and are rated by `kill_update`, the same steps as rate_kill.

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
        fixed = fixed_snapshot is not None
        snapshot = fixed_snapshot if fixed_snapshot is not None else initial_snapshot(params)
        self._store = PlayerStore(params)
        self._counting = Counting(
            params, calibrate_every_ms, lateness_ms, snapshot, fixed, _Records(self._store),
            params.mu0,
        )  # fmt: skip
        self.params = params
        self.seasons = seasons
        self.calibrate_every_ms = calibrate_every_ms
        self.lateness_ms = lateness_ms
        self._units = 0  # S = Σ σ_i·2**k over tracked players, exact
        # The opt-in pair_decay's loads (None when off: the paper keeps no such state).
        self._loads = PairLoads(params, lateness_ms) if params.pair_decay_ms else None

    # -- reading ------------------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        """The population snapshot in force."""
        return self._counting.snapshot

    @property
    def watermark(self) -> int | None:
        """The largest event time accepted so far (ms)."""
        return self._counting.watermark

    @property
    def ladder(self) -> int:
        """The season the live ladder shows: that of the largest counted event time (0: the
        first; docs/api.md, "Seasons")."""
        newest = self._counting.newest_counted
        return 0 if newest is None else ladder_of(self.seasons, newest)

    def is_late(self, ts: int) -> bool:
        """Whether an event at `ts` is late: older than the watermark less `lateness_ms`."""
        return self._counting.is_late(ts)

    @property
    def counted(self) -> int:
        """Events counted (rated)."""
        return self._counting.counted

    @property
    def duplicates(self) -> int:
        """Events dropped by the a→b cooldown (§2.1)."""
        return self._counting.duplicates

    @property
    def rejected(self) -> int:
        """Events rejected (self kill, bad time, empty id, late)."""
        return self._counting.rejected

    @property
    def rejected_by_reason(self) -> dict[str, int]:
        """Rejected events by reason."""
        return self._counting.rejected_by_reason

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
                state = store.get(i)
                if self.seasons.starts:  # the soft reset the event would take first
                    reset = season_step(state, ts, self.seasons, params)
                    units += sigma_units(reset.sigma, params) - sigma_units(state.sigma, params)
                    state = reset
                states.append(state)
        return predict(states[0], states[1], ts, units, count, self._snapshot_at(ts), params)

    def cooldowns(self) -> Iterator[tuple[str, str, int]]:
        """(attacker, victim, last counted ts) of every a→b pair the cooldown table still holds
        (`adr rebuild` writes the consumer's cooldown records from them)."""
        ids = self._store.ids
        for (a, b), ts in self._counting.pairs.items().items():
            yield ids[a], ids[b], ts

    # -- writing ------------------------------------------------------------------------------

    def apply(self, event_id: str, attacker: str, victim: str, ts: int) -> Verdict:
        """Process one kill event (docs/algorithm.md#steps, 1–13); event_id: logs only."""
        counting = self._counting
        refused = counting.refusal(attacker, victim, ts)
        if refused is not None:
            return refused
        params = self.params
        index = self._store.index
        ia = index.get(attacker)
        ib = index.get(victim)
        last: int | None = None
        if ia is not None and ib is not None:
            last = counting.pair_last(ia, ib, ts)
            if counting.is_repeat(last, ts):
                return DUPLICATE
        if counting.due(ts):
            counting.take(ts)
        if ia is None:
            ia = self._track(attacker)
        if ib is None:
            ib = self._track(victim)
        if self.seasons.starts:
            self._season_step(ia, ts)
            self._season_step(ib, ts)
        loads = self._loads
        if loads is None:
            self._rate(ia, ib, ts, last)
        else:
            load = loads.load(ia, ib, ts)
            self._rate(ia, ib, ts, last, load_weight(load, params))
            watermark = counting.watermark
            assert watermark is not None
            loads.put(ia, ib, ts, load, watermark)
        counting.count(ia, ib, ts)
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
            ts, self._units, len(records), self._counting.snapshot, self.params, weight,
        )  # fmt: skip
        self._update_player(ia, ra, next_a, ts)
        self._update_player(ib, rb, next_b, ts)
        self._units += delta

    def _update_player(self, i: int, r: PlayerRecord, s: NextScalars, ts: int) -> None:
        """Player i after the event at ts, from its next scalars (steps 9–13)."""
        (r.mu, r.sigma, r.sigma_u, r.pool, r.n, r.tier, r.h_up, r.h_down, r.streak, r.phi,
         delta_mu) = s  # fmt: skip
        r.last_ts = ts
        store = self._store
        store.push_window(i, r, delta_mu)
        store.push_recent(i, r, ts)
        counting = self._counting
        if not counting.filed(i):
            activity = store.activity_time(i, r)
            if activity is not None:
                counting.file(i, activity)

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

    def _track(self, player: str) -> int:
        """Step 4: a new player joins P with the initial state; its σ0 enters S (§2.2)."""
        params = self.params
        i = self._store.add(player, new_player(params))
        self._counting.track()
        self._units += sigma_units(params.sigma0, params)
        return i

    def _snapshot_at(self, now: int) -> Snapshot:
        """The snapshot an event at `now` uses: the current one or a fresh one if due (§2.3)."""
        return self._counting.snapshot_at(now)


class _Records:
    """The counting rules' view of RatingBook's players: activity times and μ by number."""

    def __init__(self, store: PlayerStore) -> None:
        self._store = store

    def activity(self, i: int) -> int | None:
        store = self._store
        return store.activity_time(i, store.records[i])

    def rating(self, i: int) -> float:
        return self._store.records[i].mu

    def ratings(self) -> Iterator[float]:
        return (r.mu for r in self._store.records)


def _scalars(r: PlayerRecord) -> Scalars:
    """The scalars `kill_update` reads from a record (last_ts NO_TS while n == 0)."""
    return (r.mu, r.sigma, r.n, r.last_ts, r.streak, r.phi, r.pool, r.tier, r.h_up, r.h_down)
