"""RatingBook's private player table: one mutable record per interned player number.

Records hold plain numbers (unboxed when compiled with mypyc); windows and recent times sit in
two flat arrays, so a tracked player costs a few hundred bytes. `PlayerState` (the public,
frozen form) is built only on request.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from typing import Any, Final

from engine._sigma import sigma_units
from engine._state import PlayerState
from engine._update import recent_next
from engine.params import Params

NO_TS: Final = -(2**62)  # last_ts of a record with no counted event (PlayerState.last_ts None)


class PlayerRecord:
    """One tracked player's state inside RatingBook (§2.2 plus tier and activity)."""

    __slots__ = (
        "h_down",
        "h_up",
        "last_ts",
        "mu",
        "n",
        "phi",
        "pool",
        "rec_head",
        "rec_len",
        "rec_newest",
        "sigma",
        "sigma_u",
        "streak",
        "tier",
        "win_head",
        "win_len",
    )

    def __init__(self, state: PlayerState, params: Params) -> None:
        self.mu: float = state.mu
        self.sigma: float = state.sigma
        self.sigma_u: int = sigma_units(state.sigma, params)  # its share of S
        self.streak: int = state.streak
        self.phi: float = state.phi
        self.pool: float = state.pool
        self.n: int = state.n
        self.last_ts: int = NO_TS if state.last_ts is None else state.last_ts
        self.tier: int = state.tier
        self.h_up: float = state.h_up
        self.h_down: float = state.h_down
        # The window and the recent times are rings in PlayerStore.win / .rec: `*_len` entries
        # from the oldest at `*_head` (head stays 0 until the ring is full).
        self.win_len: int = len(state.window)
        self.win_head: int = 0
        self.rec_len: int = len(state.recent)
        self.rec_head: int = 0
        self.rec_newest: int = state.recent[-1] if state.recent else NO_TS


class PlayerStore:
    """Player id → number → record; every window and recent-times list in two flat arrays."""

    def __init__(self, params: Params) -> None:
        self._params = params
        self._L = params.window
        self._R = params.n_active
        self.index: dict[str, int] = {}
        self.ids: list[str] = []
        self.records: list[PlayerRecord] = []
        self.win = array("d")  # player i's |Δμ| window at [i·L, i·L + win_len), oldest first
        self.rec = array("q")  # player i's latest counted times at [i·R, i·R + rec_len), ascending
        self._win_pad = array("d", bytes(8 * self._L))
        self._rec_pad = array("q", bytes(8 * self._R))

    def __len__(self) -> int:
        return len(self.records)

    def add(self, player: str, state: PlayerState) -> int:
        """Intern a new player with `state`; returns its number."""
        i = len(self.records)
        self.index[player] = i
        self.ids.append(player)
        self.records.append(PlayerRecord(state, self._params))
        w0, r0 = i * self._L, i * self._R
        self.win.extend(self._win_pad)
        self.win[w0 : w0 + len(state.window)] = array("d", state.window)
        self.rec.extend(self._rec_pad)
        self.rec[r0 : r0 + len(state.recent)] = array("q", state.recent)
        return i

    def get(self, i: int) -> PlayerState:
        """The public, frozen state of player number i."""
        r = self.records[i]
        w0, r0 = i * self._L, i * self._R
        return PlayerState(
            mu=r.mu,
            sigma=r.sigma,
            streak=r.streak,
            phi=r.phi,
            pool=r.pool,
            n=r.n,
            last_ts=None if r.last_ts == NO_TS else r.last_ts,
            tier=r.tier,
            h_up=r.h_up,
            h_down=r.h_down,
            window=self._ring(self.win, w0, self._L, r.win_head, r.win_len),
            recent=self._ring(self.rec, r0, self._R, r.rec_head, r.rec_len),
        )

    @staticmethod
    def _ring(values: array[Any], start: int, size: int, head: int, length: int) -> tuple[Any, ...]:
        """A ring's entries oldest first."""
        return tuple(values[start + (head + j) % size] for j in range(length))

    def window_mean(self, i: int, r: PlayerRecord) -> float:
        """w̄ = fsum(window)/len(window), 0 when empty (§2.2; fsum does not depend on order)."""
        length = r.win_len
        if length == 0:
            return 0.0
        w0 = i * self._L
        return math.fsum(self.win[w0 : w0 + length]) / length

    def push_window(self, i: int, r: PlayerRecord, delta_mu: float) -> None:
        """Append |Δμ|, dropping the oldest past L (§4.5, as window_next)."""
        size = self._L
        length = r.win_len
        if length < size:
            self.win[i * size + length] = abs(delta_mu)
            r.win_len = length + 1
        else:
            head = r.win_head
            self.win[i * size + head] = abs(delta_mu)
            r.win_head = head + 1 if head + 1 < size else 0

    def push_recent(self, i: int, r: PlayerRecord, ts: int) -> None:
        """Count an event at ts among the latest n_active counted times (as recent_next)."""
        size = self._R
        r0 = i * size
        length = r.rec_len
        rec = self.rec
        if ts >= r.rec_newest:
            r.rec_newest = ts
            if length < size:
                rec[r0 + length] = ts
                r.rec_len = length + 1
            else:
                head = r.rec_head
                rec[r0 + head] = ts
                r.rec_head = head + 1 if head + 1 < size else 0
        else:
            ordered = self._ring(rec, r0, size, r.rec_head, length)
            recent = recent_next(ordered, ts, self._params)
            rec[r0 : r0 + len(recent)] = array("q", recent)
            r.rec_len = len(recent)
            r.rec_head = 0

    def activity_time(self, i: int, r: PlayerRecord) -> int | None:
        """The n_active-th latest counted time (the oldest kept), None while fewer (§2.3)."""
        size = self._R
        return self.rec[i * size + r.rec_head] if r.rec_len == size else None

    def sorted_items(self) -> Iterator[tuple[str, PlayerState]]:
        """(id, state) for every player, by id."""
        for player in sorted(self.index):
            yield player, self.get(self.index[player])
