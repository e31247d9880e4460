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
    allocations and frees balance once the cache is full, so left to itself the collector runs
    ever more rarely and longer. Collected at each batch boundary, each pause stays short (it
    visits the floats of each new state's window once). The alternatives measured (fewer, larger
    collections; freezing survivors with a full collection once a minute; windows packed into
    bytes) either paused the consumer far longer or cost as much elsewhere: docs/benchmarks.md.
    The older generations hold only cycles (e.g. of exceptions)."""

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
