"""ModelBook: any RatingModel over an ordered event stream, all state in memory (`adr replay
--model`, evaluation, tests); RatingBook stays ADR's fast columnar book.

The counting rules are RatingBook's own (engine/_counting.py, one implementation for both): self
kills, bad times and empty ids rejected; the watermark W (max ts accepted) and lateness (ts <
W − lateness_ms rejected as late); the a→b cooldown (§2.1, `Params.t_cooldown`, ADR's parameter,
whatever the model); snapshots before a counted event at t when none exists yet or t − last ≥
calibrate_every_ms, over the model's display rating of the active players (activity time +
T_active > t, §2.3). Seasons (`seasons`, engine/_season.py) as RatingBook applies them: before a
counted event is rated, each of its players takes the model's `season_step` (the soft reset of
every season start the event crosses, once per player and season). The book keeps the pool's S
and P as the model needs them and the model's states. With AdrModel it gives RatingBook's states
bit for bit, seasons included (tests/engine/test_engine_model_book.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from engine._counting import (
    COUNTED,
    DEFAULT_CALIBRATE_EVERY_MS,
    DEFAULT_LATENESS_MS,
    DUPLICATE,
    Counting,
    Verdict,
)
from engine._errors import EngineError
from engine._model import RatingModel
from engine._season import NO_SEASONS, SeasonSchedule, ladder_of
from engine._state import Snapshot
from engine.params import Params

S = TypeVar("S")


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
        seasons: SeasonSchedule = NO_SEASONS,
    ) -> None:
        """`params`: the pool's rules (t_cooldown, T_active, the tier shares of the snapshot);
        for ADR, the model's own Params. ParamError for pair_decay: no pair loads kept here."""
        params.refuse_pair_decay("ModelBook (adr evaluate --events, a book of --model)")
        self.model = model
        self.params = params
        self.seasons = seasons
        self.calibrate_every_ms = calibrate_every_ms
        self.lateness_ms = lateness_ms
        self._new_display = model.display(model.new_player())
        snapshot = fixed_snapshot
        if snapshot is None:
            snapshot = Snapshot(
                taken_at=None, mean_mu_active=self._new_display, boundaries=None, active_count=0
            )
        self._index: dict[str, int] = {}
        self._ids: list[str] = []
        self._states: list[S] = []
        self._counting = Counting(
            params, calibrate_every_ms, lateness_ms, snapshot, fixed_snapshot is not None,
            _States(model, self._states), self._new_display,
        )  # fmt: skip
        self._units = 0

    # -- reading --------------------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        return self._counting.snapshot

    @property
    def watermark(self) -> int | None:
        return self._counting.watermark

    @property
    def ladder(self) -> int:
        """The season the live ladder shows: that of the largest counted event time (0: the
        first; docs/api.md, "Seasons")."""
        newest = self._counting.newest_counted
        return 0 if newest is None else ladder_of(self.seasons, newest)

    def is_late(self, ts: int) -> bool:
        return self._counting.is_late(ts)

    @property
    def counted(self) -> int:
        return self._counting.counted

    @property
    def duplicates(self) -> int:
        return self._counting.duplicates

    @property
    def rejected(self) -> int:
        return self._counting.rejected

    @property
    def rejected_by_reason(self) -> dict[str, int]:
        return self._counting.rejected_by_reason

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
        for (a, b), ts in self._counting.pairs.items().items():
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
            if self.seasons.starts:  # the soft reset the event would take first
                stepped = model.season_step(state, ts, self.seasons)
                units += model.units(stepped) - model.units(state)
                state = stepped
            pair.append(state)
        return model.predict(pair[0], pair[1], ts, units, count, self._snapshot_at(ts))

    # -- writing --------------------------------------------------------------------------------

    def apply(self, event_id: str, attacker: str, victim: str, ts: int) -> Verdict:
        """Process one kill event (RatingBook.apply's steps, the model's update)."""
        counting = self._counting
        refused = counting.refusal(attacker, victim, ts)
        if refused is not None:
            return refused
        ia = self._index.get(attacker)
        ib = self._index.get(victim)
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
        states = self._states
        if self.seasons.starts:
            self._season_step(ia, ts)
            self._season_step(ib, ts)
        out = self.model.rate(
            states[ia], states[ib], ts, self._units, len(states), counting.snapshot, last
        )
        states[ia], states[ib] = out.attacker, out.victim
        self._units += out.sigma_units_delta
        self._file(ia)
        self._file(ib)
        counting.count(ia, ib, ts)
        return COUNTED

    # -- internals ------------------------------------------------------------------------------

    def _season_step(self, i: int, ts: int) -> None:
        """The model's season_step on player i; S follows the new uncertainty."""
        model = self.model
        state = self._states[i]
        stepped = model.season_step(state, ts, self.seasons)
        if stepped is not state:
            self._units += model.units(stepped) - model.units(state)
            self._states[i] = stepped

    def _track(self, player: str) -> int:
        state = self.model.new_player()
        i = len(self._states)
        self._index[player] = i
        self._ids.append(player)
        self._states.append(state)
        self._counting.track()
        self._units += self.model.units(state)
        return i

    def _file(self, i: int) -> None:
        """Give player i an entry in the active heap once it has an activity time."""
        counting = self._counting
        if not counting.filed(i):
            since = self.model.activity_time(self._states[i])
            if since is not None:
                counting.file(i, since)

    def _snapshot_at(self, now: int) -> Snapshot:
        """The snapshot an event at `now` uses: the current one, or a fresh one if due."""
        return self._counting.snapshot_at(now)


class _States(Generic[S]):
    """The counting rules' view of ModelBook's players: activity times and display ratings."""

    def __init__(self, model: RatingModel[S], states: list[S]) -> None:
        self._model = model
        self._states = states

    def activity(self, i: int) -> int | None:
        return self._model.activity_time(self._states[i])

    def rating(self, i: int) -> float:
        return self._model.display(self._states[i])

    def ratings(self) -> Iterator[float]:
        display = self._model.display
        return (display(state) for state in self._states)
