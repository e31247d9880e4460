"""The player states this instance last wrote or read, so a batch reads only the others.

An entry may go stale (another instance wrote the player): the atomic write checks every
player's `ver`, so a stale entry costs a Conflict and a re-read, never a lost update.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import islice

from engine import PlayerState

Entry = tuple[PlayerState, int]
"""(state, ver) as Redis holds it."""


class Entries(Mapping[str, Entry]):
    """player -> (state, ver), held as two dicts of objects the garbage collector does not track
    (PlayerState has gc=False), so that neither dict is tracked: a plan's thousands of changed
    players cost the young collection at the batch boundary nothing, where (state, ver) tuples
    would. StateCache is one, bounded."""

    __slots__ = ("_states", "_vers")

    def __init__(self) -> None:
        self._states: dict[str, PlayerState] = {}
        self._vers: dict[str, int] = {}

    def put(self, player: str, state: PlayerState, ver: int) -> None:
        self._states[player] = state
        self._vers[player] = ver

    def __getitem__(self, player: str) -> Entry:
        return self._states[player], self._vers[player]

    def get(self, player: str, default: Entry | None = None) -> Entry | None:  # type: ignore[override]
        state = self._states.get(player)
        return default if state is None else (state, self._vers[player])

    def __contains__(self, player: object) -> bool:
        return player in self._states

    def __iter__(self) -> Iterator[str]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)

    def __bool__(self) -> bool:
        return bool(self._states)

    def clear(self) -> None:
        self._states.clear()
        self._vers.clear()


class StateCache(Entries):
    """player -> (state, ver), at most `capacity` players; the least recently stored go first.

    States and vers are kept in two dicts of objects the garbage collector does not track
    (PlayerState has gc=False; see Entries), so that neither dict is ever tracked: a dict of
    (state, ver) tuples was re-tracked on every store and traversed whole by every young
    collection, pauses that grew with the cache.
    """

    __slots__ = ("_capacity",)

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self._capacity = capacity

    @property
    def entries(self) -> Mapping[str, Entry]:
        return self

    def store(self, entries: Mapping[str, Entry]) -> None:
        """Remember these (state, ver); evicts the oldest tenth when over capacity."""
        if self._capacity <= 0:
            return
        states, vers = self._states, self._vers
        if isinstance(entries, Entries):  # a plan's: no (state, ver) tuple made per player
            for player, state in entries._states.items():
                states.pop(player, None)  # re-inserted last: dict order is recency
                states[player] = state
                vers[player] = entries._vers[player]
        else:
            for player, (state, ver) in entries.items():
                states.pop(player, None)
                states[player] = state
                vers[player] = ver
        excess = len(states) - self._capacity
        if excess > 0:
            excess += self._capacity // 10  # evict in bulk, not one key per stored player
            for player in list(islice(states, excess)):
                del states[player]
                del vers[player]

    def forget(self, players: Iterable[str]) -> None:
        for player in players:
            if self._states.pop(player, None) is not None:
                del self._vers[player]


class Overlay(Mapping[str, Entry]):
    """`newer` laid over `older` (e.g. what a write ahead leaves, over the cache): a lookup is
    two dict probes, where collections.ChainMap's runs a generator in Python."""

    __slots__ = ("_newer", "_older")

    def __init__(self, newer: Mapping[str, Entry], older: Mapping[str, Entry]) -> None:
        self._newer = newer
        self._older = older

    def __getitem__(self, player: str) -> Entry:
        hit = self._newer.get(player)
        return self._older[player] if hit is None else hit

    def get(self, player: str, default: Entry | None = None) -> Entry | None:  # type: ignore[override]
        hit = self._newer.get(player)
        return self._older.get(player, default) if hit is None else hit

    def __contains__(self, player: object) -> bool:
        return player in self._newer or player in self._older

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._older), **dict.fromkeys(self._newer)})

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __bool__(self) -> bool:  # not via __len__, which walks both
        return bool(self._newer) or bool(self._older)
