"""The player states this instance last wrote or read, so a batch reads only the others.

An entry may go stale (another instance wrote the player): the atomic write checks every
player's `ver`, so a stale entry costs a Conflict and a re-read, never a lost update.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import islice

from engine import PlayerState

Entry = tuple[PlayerState, int]
"""(state, ver) as Redis holds it."""


class StateCache:
    """player -> (state, ver), at most `capacity` players; the least recently stored go first."""

    __slots__ = ("_capacity", "_entries")

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._entries: dict[str, Entry] = {}

    @property
    def entries(self) -> Mapping[str, Entry]:
        return self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def store(self, entries: Mapping[str, Entry]) -> None:
        """Remember these (state, ver); evicts the oldest tenth when over capacity."""
        if self._capacity <= 0:
            return
        cache = self._entries
        for player, entry in entries.items():
            cache.pop(player, None)  # re-inserted last: dict order is recency
            cache[player] = entry
        excess = len(cache) - self._capacity
        if excess > 0:
            excess += self._capacity // 10  # evict in bulk, not one key per stored player
            for player in list(islice(cache, excess)):
                del cache[player]

    def forget(self, players: Iterable[str]) -> None:
        cache = self._entries
        for player in players:
            cache.pop(player, None)

    def clear(self) -> None:
        self._entries.clear()
