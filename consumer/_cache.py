"""The player states this instance last wrote or read, so a batch reads only the others.

An entry may go stale (another instance wrote the player): the atomic write checks every
player's `ver`, so a stale entry costs a Conflict and a re-read, never a lost update.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

Entry = tuple[Any, int]
"""(state, ver) as Redis holds it: the pool's model's state (engine.PlayerState for ADR; typed
Any so that the compiled cache holds any model's Struct)."""


class Entries(Mapping[str, Entry]):
    """player -> (state, ver), held as two dicts of objects the garbage collector does not track
    (PlayerState has gc=False), so that neither dict is tracked: a plan's thousands of changed
    players cost the young collections nothing, where (state, ver) tuples would. StateCache is
    one, bounded."""

    __slots__ = ("_states", "_vers")

    def __init__(self) -> None:
        self._states: dict[str, Any] = {}
        self._vers: dict[str, int] = {}

    def put(self, player: str, state: Any, ver: int) -> None:
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
    """player -> (state, ver), at most `capacity` players, in two generations.

    A store writes into the young generation in place. Once the young generation holds more
    than half the capacity, it becomes the old one and the old one is dropped: what was stored
    in the two latest generations is held: at least the most recently stored half of the
    capacity less the largest store (and the latest store always), like an LRU of that size,
    without an LRU's reordering on every store (a dict pop and re-insert per player: about three
    times an in-place store's cost; a player dropped too early costs one read, never a wrong
    state, since a held entry is always its latest store).

    States and vers are kept in dicts of objects the garbage collector does not track
    (PlayerState has gc=False; see Entries), so that no dict is ever tracked: a dict of
    (state, ver) tuples was re-tracked on every store and traversed whole by every young
    collection, pauses that grew with the cache.
    """

    __slots__ = ("_capacity", "_old")

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self._capacity = capacity
        self._old = Entries()
        """The previous generation: read after the young one, dropped at the next turn."""

    @property
    def entries(self) -> Mapping[str, Entry]:
        return self

    def store(self, entries: Mapping[str, Entry]) -> None:
        """Remember these (state, ver) in the young generation; turn generations when it is over
        half the capacity, then trim the old one to fit (never the players of this store)."""
        capacity = self._capacity
        if capacity <= 0:
            return
        states, vers = self._states, self._vers
        if isinstance(entries, Entries):  # a plan's: no (state, ver) tuple made per player
            states.update(entries._states)
            vers.update(entries._vers)
        else:
            for player, (state, ver) in entries.items():
                states[player] = state
                vers[player] = ver
        if len(states) > (capacity - 1) // 2:
            old = Entries()
            old._states, old._vers = states, vers
            self._old = old
            self._states, self._vers = {}, {}
        excess = len(self._states) + len(self._old._states) - capacity
        if excess > 0:
            self._trim(excess, entries)

    def _trim(self, excess: int, latest: Mapping[str, Entry]) -> None:
        """Drop `excess` players of the old generation: first those the young one shadows, then
        the earliest inserted, keeping `latest` (the store just made) as long as it fits."""
        old, young = self._old, self._states
        drop = dict.fromkeys(p for p in old._states if p in young)
        if len(drop) < excess:
            later = (p for p in old._states if p not in young and p not in latest)
            drop.update(dict.fromkeys(islice(later, excess - len(drop))))
        if len(drop) < excess:  # one store of more than `capacity` players: keep its last ones
            kept = set(list(latest)[-self._capacity :])
            drop.update(dict.fromkeys(p for p in old._states if p not in kept))
        for player in list(islice(drop, excess)):
            del old._states[player]
            del old._vers[player]

    def __getitem__(self, player: str) -> Entry:
        state = self._states.get(player)
        if state is None:
            return self._old[player]
        return state, self._vers[player]

    def get(self, player: str, default: Entry | None = None) -> Entry | None:  # type: ignore[override]
        state = self._states.get(player)
        if state is None:
            return self._old.get(player, default)
        return state, self._vers[player]

    def __contains__(self, player: object) -> bool:
        return player in self._states or player in self._old

    def __iter__(self) -> Iterator[str]:
        young = self._states
        yield from young
        yield from (player for player in self._old if player not in young)

    def __len__(self) -> int:
        young = self._states
        return len(young) + sum(1 for player in self._old if player not in young)

    def __bool__(self) -> bool:
        return bool(self._states) or bool(self._old)

    def clear(self) -> None:
        super().clear()
        self._old.clear()

    def forget(self, players: Iterable[str]) -> None:
        old = self._old
        for player in players:
            if self._states.pop(player, None) is not None:
                del self._vers[player]
            if old._states.pop(player, None) is not None:
                del old._vers[player]


class Overlay(Mapping[str, Entry]):
    """`newer` laid over `older` (e.g. what a write ahead leaves, over the cache): a lookup is
    two dict probes, where collections.ChainMap's runs a generator in Python. Both are Entries,
    so that compiled, a lookup calls their methods directly."""

    __slots__ = ("_newer", "_older")

    def __init__(self, newer: Entries, older: Entries) -> None:
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
