"""When the consumer runs CPython's cyclic garbage collector (its pauses sit in the latency)."""

from __future__ import annotations

import gc
import time
from typing import Final

_FULL_EVERY_S: Final = 60.0
_YOUNG_THRESHOLD: Final = 10_000
"""A batch allocates thousands of containers; at CPython's default (700) the collector ran many
times per batch. Batch boundaries collect the young generation anyway (`Collector.after_batch`)."""


class Collector:
    """Collects the young generation per batch and every generation once a minute.

    The young generation holds the tuples of every state cached since its last collection;
    allocations and frees balance once the cache is full, so left to itself the collector ran
    ever more rarely and longer (80 ms and more). Per batch it stays a few ms: about 5 µs per
    event, spent visiting the floats of each new state's window once. Fewer, larger collections
    were measured too: the same cost per event, in longer pauses. Freezing each batch's
    survivors and collecting everything once a minute (most tuples die unvisited) cut the work
    to 0.4 µs per event, but that one collection paused the consumer for 362 ms (1,000,000
    events on 100,000 players), so the young generation is still collected per batch. Windows and
    recent times packed into bytes (no tuples to visit) cut the collection to about 3 µs per
    event, but unpacking them for w̄ and for the hash values cost as much again (`rate_kill`
    +0.7 µs, the hash values +0.7 µs per player; two A/B pairs at 300,000 events within noise),
    so PlayerState keeps its tuples. The older generations hold only cycles (e.g. of
    exceptions)."""

    def __init__(self) -> None:
        self._next_full = time.monotonic() + _FULL_EVERY_S

    def start(self) -> None:
        """What start-up built lives as long as the process: collect it once, then scan it no
        more."""
        gc.collect()
        gc.freeze()
        gc.set_threshold(_YOUNG_THRESHOLD, *gc.get_threshold()[1:])

    def stop(self) -> None:
        """Hand what start() froze back to the collector (a process running another pipeline
        after this one would otherwise keep this one's objects for good)."""
        gc.unfreeze()

    def after_batch(self) -> None:
        """A batch is confirmed: collect the young generation, or all of them once a minute."""
        now = time.monotonic()
        if now >= self._next_full:
            self._next_full = now + _FULL_EVERY_S
            gc.collect()
        else:
            gc.collect(0)
