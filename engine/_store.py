"""Compact in-memory player table: parallel arrays indexed by an interned player number."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator

from engine._state import PlayerState
from engine._update import recent_next
from engine.params import Params

_NO_TS = -(2**63)  # last_ts of a player with no counted event (PlayerState.last_ts is None)


class PlayerStore:
    """Player id → number, and each PlayerState field in its own array (≈ 8 bytes a value)."""

    def __init__(self, params: Params) -> None:
        self._L = params.window
        self._R = params.n_active
        self.index: dict[str, int] = {}
        self.ids: list[str] = []
        self.mu = array("d")
        self.sigma = array("d")
        self.phi = array("d")
        self.pool = array("d")
        self.h_up = array("d")
        self.h_down = array("d")
        self.streak = array("q")
        self.n = array("q")
        self.last_ts = array("q")
        self.tier = array("q")
        self.win = array("d")
        self.win_len = array("q")
        self.rec = array("q")
        self.rec_len = array("q")
        self._win_pad = array("d", [0.0] * self._L)
        self._rec_pad = array("q", [0] * self._R)

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, player: str, state: PlayerState) -> int:
        """Intern a new player with `state`; returns its number."""
        i = len(self.ids)
        self.index[player] = i
        self.ids.append(player)
        for column in (self.mu, self.sigma, self.phi, self.pool, self.h_up, self.h_down):
            column.append(0.0)
        for int_column in (
            self.streak,
            self.n,
            self.last_ts,
            self.tier,
            self.win_len,
            self.rec_len,
        ):
            int_column.append(0)
        self.win.extend(self._win_pad)
        self.rec.extend(self._rec_pad)
        self.put(i, state)
        return i

    def get(self, i: int) -> PlayerState:
        """The state of player number i."""
        last_ts = self.last_ts[i]
        w0 = i * self._L
        r0 = i * self._R
        return PlayerState(
            mu=self.mu[i],
            sigma=self.sigma[i],
            streak=self.streak[i],
            phi=self.phi[i],
            pool=self.pool[i],
            n=self.n[i],
            last_ts=None if last_ts == _NO_TS else last_ts,
            tier=self.tier[i],
            h_up=self.h_up[i],
            h_down=self.h_down[i],
            window=tuple(self.win[w0 : w0 + self.win_len[i]]),
            recent=tuple(self.rec[r0 : r0 + self.rec_len[i]]),
        )

    def put(self, i: int, state: PlayerState) -> None:
        """Store `state` as player number i."""
        self.mu[i] = state.mu
        self.sigma[i] = state.sigma
        self.streak[i] = state.streak
        self.phi[i] = state.phi
        self.pool[i] = state.pool
        self.n[i] = state.n
        self.last_ts[i] = _NO_TS if state.last_ts is None else state.last_ts
        self.tier[i] = state.tier
        self.h_up[i] = state.h_up
        self.h_down[i] = state.h_down
        window = state.window
        w0 = i * self._L
        self.win[w0 : w0 + len(window)] = array("d", window)
        self.win_len[i] = len(window)
        recent = state.recent
        r0 = i * self._R
        self.rec[r0 : r0 + len(recent)] = array("q", recent)
        self.rec_len[i] = len(recent)

    def window_mean(self, i: int) -> float:
        """w̄ of player i: fsum of its window / its length, 0 when empty (§2.2)."""
        length = self.win_len[i]
        if length == 0:
            return 0.0
        w0 = i * self._L
        return math.fsum(self.win[w0 : w0 + length]) / length

    def push_window(self, i: int, delta_mu: float) -> None:
        """Append |Δμ| to player i's window, dropping the oldest past L (§4.5, as window_next)."""
        size = self._L
        w0 = i * size
        length = self.win_len[i]
        if length < size:
            self.win[w0 + length] = abs(delta_mu)
            self.win_len[i] = length + 1
        else:
            self.win[w0 : w0 + size - 1] = self.win[w0 + 1 : w0 + size]
            self.win[w0 + size - 1] = abs(delta_mu)

    def push_recent(self, i: int, ts: int, params: Params) -> int | None:
        """Count an event at ts in player i's recent times (as recent_next); its activity time."""
        size = self._R
        r0 = i * size
        length = self.rec_len[i]
        rec = self.rec
        if length == 0 or ts >= rec[r0 + length - 1]:
            if length < size:
                rec[r0 + length] = ts
                length += 1
                self.rec_len[i] = length
            else:
                rec[r0 : r0 + size - 1] = rec[r0 + 1 : r0 + size]
                rec[r0 + size - 1] = ts
        else:
            recent = recent_next(tuple(rec[r0 : r0 + length]), ts, params)
            length = len(recent)
            rec[r0 : r0 + length] = array("q", recent)
            self.rec_len[i] = length
        return rec[r0] if length == size else None

    def sorted_items(self) -> Iterator[tuple[str, PlayerState]]:
        """(id, state) for every player, by id."""
        for player in sorted(self.index):
            yield player, self.get(self.index[player])
