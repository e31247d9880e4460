"""Rate-limited summary log lines: one line per kind of event, however many there are.

A deleted topic fails every undelivered rating change (17,114 warning lines in one burst, before
this); a replayed backlog makes thousands of late events; a publisher bug dead-letters every
message. An operator needs each kind once, at once, and then how many more came: a `LogSummary`
writes the first occurrence of a key immediately, then at most one line per `interval_s` with
the count since its last line, the total and one sample (an event id or a partition@offset:
never payload bytes), and a last line with the remainder once the key stops (`flush`, which the
consumer's loop calls about once a second, and once more with `final` when it stops).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Final

SUMMARY_INTERVAL_S: Final = 30.0
"""At most one line per key this often (the first occurrence is written at once)."""


class _Tally:
    __slots__ = ("count", "fields", "last_line", "sample", "total")

    def __init__(self, fields: dict[str, Any]) -> None:
        self.count = 0  # since the last line
        self.total = 0
        self.sample: str | None = None
        self.fields = fields
        self.last_line = float("-inf")


class LogSummary:
    """Summary lines of one kind (`message`) at `level`, keyed by the `fields` given to `add`."""

    def __init__(
        self,
        logger: logging.Logger,
        message: str,
        level: int = logging.WARNING,
        interval_s: float = SUMMARY_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._message = message
        self._level = level
        self._interval_s = interval_s
        self._clock = clock
        self._tallies: dict[tuple[Any, ...], _Tally] = {}

    def add(self, count: int = 1, sample: str | None = None, **fields: Any) -> None:
        """Count `count` events of the kind `fields` names (e.g. reason="undecodable"), with a
        `sample` id; writes a line now if this kind had none within `interval_s`."""
        if count <= 0:
            return
        key = tuple(sorted(fields.items()))
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = _Tally(fields)
        tally.count += count
        tally.total += count
        if sample is not None:
            tally.sample = sample
        now = self._clock()
        if now - tally.last_line >= self._interval_s:
            self._write(tally, now)

    def flush(self, final: bool = False) -> None:
        """Write the due lines: each kind with events since its last line, once `interval_s`
        has passed since it (`final`: at once, the process is stopping)."""
        now = self._clock()
        for tally in self._tallies.values():
            if tally.count and (final or now - tally.last_line >= self._interval_s):
                self._write(tally, now)

    def totals(self) -> dict[tuple[Any, ...], int]:
        """Events counted per kind (its sorted fields), since the start."""
        return {key: tally.total for key, tally in self._tallies.items()}

    def _write(self, tally: _Tally, now: float) -> None:
        extra = {**tally.fields, "count": tally.count, "total": tally.total}
        if tally.sample is not None:
            extra["sample"] = tally.sample
        if tally.last_line != float("-inf"):
            extra["window_s"] = round(now - tally.last_line, 1)
        self._logger.log(self._level, self._message, extra=extra)
        tally.count = 0
        tally.sample = None
        tally.last_line = now


class Summaries:
    """The consumer's summary lines (one object per process, held by its Metrics)."""

    def __init__(self, interval_s: float = SUMMARY_INTERVAL_S) -> None:
        consumer = logging.getLogger("adr.consumer")
        self.dead_letters = LogSummary(
            consumer, "events dead-lettered", logging.WARNING, interval_s
        )
        """Per `reason`: copies the broker acknowledged."""
        self.late = LogSummary(consumer, "late events counted, not rated", logging.INFO, interval_s)
        """Per partition: events older than the partition's watermark minus the lateness."""
        # Not adr.consumer.kafka: that logger's RepeatThrottle (runtime/logs.py) would hold back
        # a summary of another topic with the same error code.
        self.kafka = LogSummary(consumer, "kafka path degraded", logging.WARNING, interval_s)
        """Per (path, topic, cause): refusals of the broker or the client
        (consumer/_kafka_faults.py)."""

    def flush(self, final: bool = False) -> None:
        for summary in (self.dead_letters, self.late, self.kafka):
            summary.flush(final)
