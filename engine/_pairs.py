"""The a→b cooldown table (§2.1): the last counted time of each ordered pair of player numbers.

Recent pairs live in a dict; a sweep every `sweep_every_ms` of event time moves the entries with
t' ≤ W − 2·cooldown (W = watermark) into an immutable run: two sorted int64 arrays (16 bytes an
entry, searched with bisect). A run is dropped whole once all its times are ≤ the caller's
horizon (W − lateness − cooldown: no acceptable event can be a duplicate of them).

Why the dict alone answers for an event at ts ≥ W − cooldown: a pair missing from the dict was
last counted at some t' ≤ W_sweep − 2·cooldown ≤ W − 2·cooldown, so ts − t' ≥ cooldown. Older
(late) events also search the runs, newest first; the dict always holds a pair's newest entry.
"""

from __future__ import annotations

import bisect
from array import array
from collections import deque
from typing import Final

_SHIFT: Final = 32
_MIN_SWEEP_MS: Final = 1000
_RUNS_PER_HORIZON: Final = 32


class _Run:
    """Pairs moved out of the dict by one sweep: keys ascending, their times alongside."""

    __slots__ = ("keys", "newest", "stamps")

    def __init__(self, keys: array[int], stamps: array[int], newest: int) -> None:
        self.keys = keys
        self.stamps = stamps
        self.newest = newest

    def find(self, key: int) -> int | None:
        keys = self.keys
        i = bisect.bisect_left(keys, key)
        return self.stamps[i] if i < len(keys) and keys[i] == key else None


class PairTable:
    """Last counted time (ms) per ordered pair (a, b) of player numbers < 2**32."""

    def __init__(self, cooldown_ms: int, lateness_ms: int, sweep_every_ms: int = 0) -> None:
        self._cooldown = cooldown_ms
        self._sweep_every = sweep_every_ms or max(
            _MIN_SWEEP_MS, cooldown_ms, (lateness_ms + cooldown_ms) // _RUNS_PER_HORIZON
        )
        self._hot: dict[int, int] = {}
        self._runs: deque[_Run] = deque()
        self._swept_at: int | None = None

    def __len__(self) -> int:
        return len(self._hot) + sum(len(run.keys) for run in self._runs)

    @property
    def runs(self) -> int:
        """How many immutable runs are kept."""
        return len(self._runs)

    def last(self, a: int, b: int, ts: int, watermark: int) -> int | None:
        """The last counted a→b time an event at ts must be checked against (None: no such)."""
        key = (a << _SHIFT) | b
        t = self._hot.get(key)
        if t is not None or ts >= watermark - self._cooldown:
            return t
        for run in reversed(self._runs):
            t = run.find(key)
            if t is not None:
                return t
        return None

    def put(self, a: int, b: int, ts: int, watermark: int, horizon: int) -> None:
        """Record a counted a→b at ts; a due sweep may forget entries with t' ≤ horizon."""
        self._hot[(a << _SHIFT) | b] = ts
        swept = self._swept_at
        if swept is None:
            self._swept_at = watermark
        elif watermark - swept >= self._sweep_every:
            self._sweep(watermark, horizon)

    def _sweep(self, watermark: int, horizon: int) -> None:
        limit = watermark - 2 * self._cooldown
        hot = self._hot
        moved = [key for key, t in hot.items() if t <= limit]
        if moved:
            moved.sort()
            # popped in place: the dict never holds more than about one sweep's worth
            stamps = array("q", [hot.pop(key) for key in moved])
            self._runs.append(_Run(array("q", moved), stamps, max(stamps)))
        runs = self._runs
        while runs and runs[0].newest <= horizon:
            runs.popleft()
        self._swept_at = watermark
