"""The a→b cooldown table (§2.1): the last counted time of each ordered pair of player numbers.

Pairs counted since the last sweep live in a dict (`new`), those of the interval before in a
second one (`old`). Every S ≥ 2·cooldown of event time (W = watermark) a sweep turns `old` into an
immutable run, two sorted int64 arrays (16 bytes an entry, searched with bisect), and `new`
into `old`. A run is dropped whole once all its times are ≤ the caller's horizon
(W − lateness − cooldown: no acceptable event can be a duplicate of them).

Why the dicts alone answer for an event at ts ≥ W − cooldown: an entry in a run was counted
before the previous sweep, so t' ≤ W − S ≤ W − 2·cooldown and ts − t' ≥ cooldown. Older (late)
events also search the runs, newest first. A pair's newest entry is always in the first place
searched that holds the pair (new, old, then runs newest first).
"""

from __future__ import annotations

import bisect
from array import array
from collections import deque
from typing import Final

_SHIFT: Final = 32
_MASK: Final = (1 << _SHIFT) - 1
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
        every = sweep_every_ms or (lateness_ms + cooldown_ms) // _RUNS_PER_HORIZON
        self._sweep_every = max(_MIN_SWEEP_MS, 2 * cooldown_ms, every)
        self._new: dict[int, int] = {}  # counted since the last sweep
        self._old: dict[int, int] = {}  # counted in the sweep interval before
        self._runs: deque[_Run] = deque()
        self._swept_at: int | None = None

    def __len__(self) -> int:
        return len(self._new) + len(self._old) + sum(len(run.keys) for run in self._runs)

    @property
    def runs(self) -> int:
        """How many immutable runs are kept."""
        return len(self._runs)

    def last(self, a: int, b: int, ts: int, watermark: int) -> int | None:
        """The last counted a→b time an event at ts must be checked against (None: no such)."""
        key = (a << _SHIFT) | b
        t = self._new.get(key)
        if t is None:
            t = self._old.get(key)
        if t is not None or ts >= watermark - self._cooldown:
            return t
        for run in reversed(self._runs):
            t = run.find(key)
            if t is not None:
                return t
        return None

    def items(self) -> dict[tuple[int, int], int]:
        """(a, b) -> the pair's newest counted time, of every pair still held (a run may hold
        pairs older than any horizon of the caller's: filter by time)."""
        out: dict[tuple[int, int], int] = {}
        for run in self._runs:  # oldest first: a newer place overwrites
            for key, t in zip(run.keys, run.stamps, strict=True):
                out[(key >> _SHIFT, key & _MASK)] = t
        for table in (self._old, self._new):
            for key, t in table.items():
                out[(key >> _SHIFT, key & _MASK)] = t
        return out

    def put(self, a: int, b: int, ts: int, watermark: int, horizon: int) -> None:
        """Record a counted a→b at ts; a due sweep may forget entries with t' ≤ horizon."""
        self._new[(a << _SHIFT) | b] = ts
        swept = self._swept_at
        if swept is None:
            self._swept_at = watermark
        elif watermark - swept >= self._sweep_every:
            self._sweep(watermark, horizon)

    def _sweep(self, watermark: int, horizon: int) -> None:
        """The older dict becomes a run; the newer one becomes the older; old runs expire."""
        old = self._old
        if old:
            keys = sorted(old)
            stamps = array("q", [old[key] for key in keys])
            self._runs.append(_Run(array("q", keys), stamps, max(stamps)))
        self._old = self._new
        self._new = {}
        runs = self._runs
        while runs and runs[0].newest <= horizon:
            runs.popleft()
        self._swept_at = watermark
