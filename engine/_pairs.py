"""The a→b cooldown table (§2.1): last counted time per ordered pair, in two int64 arrays.

Open addressing with linear probing keeps an entry at 16 bytes of table (a dict of int → int costs
~100 bytes). Entries are only ever dropped wholesale when the table fills up: the rebuild keeps
those with t' > horizon, the caller's proof that no acceptable event can still hit the rest.
"""

from __future__ import annotations

from array import array
from typing import Final

_MIN_CAPACITY: Final = 1024
_A_MULT: Final = 0x9E3779B1  # odd multipliers spread consecutive player numbers over the table
_B_MULT: Final = 0x85EBCA6B
_SHIFT: Final = 32


def _zeros(count: int) -> array[int]:
    return array("q", bytes(8 * count))


class PairTable:
    """Last counted time (ms) of each ordered pair (a, b) of player numbers < 2**32."""

    def __init__(self, capacity: int = _MIN_CAPACITY) -> None:
        self._min_cap = max(8, capacity)
        self._cap = self._min_cap
        self._keys = _zeros(self._cap)  # (a << 32 | b) + 1; 0 = empty slot
        self._stamps = _zeros(self._cap)
        self._used = 0
        self._limit = self._cap * 2 // 3

    def __len__(self) -> int:
        return self._used

    def _slot(self, a: int, b: int, key: int) -> int:
        cap = self._cap
        keys = self._keys
        i = (a * _A_MULT + b * _B_MULT) % cap
        while True:
            k = keys[i]
            if k == key or k == 0:
                return i
            i += 1
            if i == cap:
                i = 0

    def get(self, a: int, b: int) -> int | None:
        """The last counted a→b time, None if unknown (or forgotten)."""
        key = ((a << _SHIFT) | b) + 1
        i = self._slot(a, b, key)
        return self._stamps[i] if self._keys[i] == key else None

    def put(self, a: int, b: int, ts: int, horizon: int) -> None:
        """Record a counted a→b at ts; a refill may drop entries with t' ≤ horizon."""
        key = ((a << _SHIFT) | b) + 1
        i = self._slot(a, b, key)
        if self._keys[i] == 0:
            self._keys[i] = key
            self._used += 1
        self._stamps[i] = ts
        if self._used > self._limit:
            self._rebuild(horizon)

    def _rebuild(self, horizon: int) -> None:
        """Rehash the entries with t' > horizon into a table at most 40 % full."""
        old_keys, old_stamps = self._keys, self._stamps
        live = 0
        for i in range(self._cap):
            if old_keys[i] != 0 and old_stamps[i] > horizon:
                live += 1
        self._cap = max(self._min_cap, live * 5 // 2 + 1)
        self._keys = keys = _zeros(self._cap)
        self._stamps = stamps = _zeros(self._cap)
        self._used = live
        self._limit = self._cap * 2 // 3
        mask = (1 << _SHIFT) - 1
        for i in range(len(old_keys)):
            key = old_keys[i]
            if key != 0 and old_stamps[i] > horizon:
                pair = key - 1
                j = self._slot(pair >> _SHIFT, pair & mask, key)
                keys[j] = key
                stamps[j] = old_stamps[i]
