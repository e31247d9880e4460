"""When the consumer runs CPython's cyclic garbage collector (its pauses sit in the latency)."""

from __future__ import annotations

import gc
import time
from typing import Final

_FULL_EVERY_S: Final = 60.0
_YOUNG_THRESHOLD: Final = 300
"""Net container allocations (allocations minus frees) between two young collections: about
every 50 events while rating. The young generation is then a few hundred objects whose contents
the rating has just read (still in the CPU's caches): against one collection per 1,000-event
batch, half the collector's CPU per event and a quarter of the longest young pause
(docs/benchmarks.md)."""
_NEVER: Final = 1 << 30
"""The middle generation's threshold: never collected on its own (the full collection is)."""


class Collector:
    """Collects the young generation every `_YOUNG_THRESHOLD` net allocations and every
    generation once a minute.

    What the young generation holds while the consumer runs: above all the window and recent
    tuples of every state rated since its last collection (a tuple is tracked from its creation
    until the collector first visits it and finds only floats or ints in it: it then untracks
    it), the rating-change and event-id tuples of the plan, the batch's Kafka messages and
    `Accepted` records. Visiting a window means reading each of its floats; collected often, the
    collector finds them in the CPU's caches (the rating has just read them: the window's mean).
    The middle generation, to which survivors of a young collection (the held batch's messages,
    the plan's lists) move, is left to the full collection: collected on CPython's schedule (every
    10 young ones) it visited them all again for no gain. The alternatives measured (one young
    collection per batch; fewer, larger ones; freezing survivors with a full collection once a
    minute; windows packed into bytes) cost more or paused the consumer longer:
    docs/benchmarks.md. The older generations hold only cycles (e.g. of exceptions)."""

    def __init__(self) -> None:
        self._next_full = time.monotonic() + _FULL_EVERY_S
        self._thresholds = gc.get_threshold()

    def start(self) -> None:
        """What start-up built lives as long as the process: collect it once, then scan it no
        more."""
        gc.collect()
        gc.freeze()
        self._thresholds = gc.get_threshold()
        gc.set_threshold(_YOUNG_THRESHOLD, _NEVER, self._thresholds[2])

    def stop(self) -> None:
        """Hand what start() froze back to the collector and restore its thresholds (a process
        running another pipeline after this one would otherwise keep this one's objects for
        good, and collect its middle generation never)."""
        gc.set_threshold(*self._thresholds)
        gc.unfreeze()

    def after_batch(self) -> None:
        """A batch is confirmed: collect every generation if a minute has passed since the last
        full collection (the young one is collected by its threshold)."""
        now = time.monotonic()
        if now >= self._next_full:
            self._next_full = now + _FULL_EVERY_S
            gc.collect()
