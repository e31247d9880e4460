"""CPU time of the consumer's thread by stage of a batch, for the benchmark's profiling phase.

`Pipeline(stage_timer=...)` hands one timer to every stage; each stage brackets its work with
`start()` / `stop(stage)` once per batch (never per event). The default, `NO_STAGES`, does
nothing, so a consumer that is not profiled pays a few empty calls per batch. `StageClock`
charges the calling thread's CPU time (time.thread_time: waits on sockets are not counted) to
the named stage; bench/consumer_bench.py reports it per event.
"""

from __future__ import annotations

import time
from typing import Final

DECODE: Final = "decode"
"""Kafka messages -> typed kill events (schemas.decode_kill_event, the key check)."""
RATE: Final = "dedup_and_rating"
"""Dedup and rating: rate_batch's loop (cooldowns, ids, the engine, the rating-change records)."""
HASH_VALUES: Final = "hash_values"
"""The changed players' hash values (player codec), tier counts and σ-limb deltas."""
READ: Final = "read"
"""Packing the batch's read and parsing its reply into a View."""
WRITE_ARGUMENTS: Final = "write_arguments"
"""Packing the atomic write (msgpack sections, EVALSHA arguments)."""
RELAY: Final = "relay"
"""The outbox relay's pump (read the stream, produce, acknowledge)."""
STAGES: Final = (DECODE, RATE, HASH_VALUES, READ, WRITE_ARGUMENTS, RELAY)


class StageTimer:
    """The no-op timer: what a consumer that is not profiled runs."""

    def start(self) -> None:
        """A stage begins (nested starts are not supported: stages do not overlap)."""

    def stop(self, stage: str) -> None:
        """The stage begun by the last `start` ends: charge it to `stage`."""


NO_STAGES: Final = StageTimer()


class StageClock(StageTimer):
    """Sums the calling thread's CPU seconds per stage (one thread: the pipeline's)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self._started = 0.0

    def start(self) -> None:
        self._started = time.thread_time()

    def stop(self, stage: str) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + time.thread_time() - self._started
