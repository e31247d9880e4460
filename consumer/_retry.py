"""Retrying a Redis step with exponential backoff while Redis is unreachable or holds corrupt
`pop`/offsets (a stall with readiness down, a metric and an alert, never a crash loop)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final, TypeVar

import redis

from consumer._errors import CorruptState
from consumer._metrics import Metrics

REDIS_DOWN: Final = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)
"""What "Redis unavailable" means here: anything else is a bug or a bad reply, not retried."""
T = TypeVar("T")
log = logging.getLogger("adr.consumer")


class RedisRetry:
    """Runs an action until Redis answers, backing off from `initial_s` up to `max_s`."""

    def __init__(self, metrics: Metrics, initial_s: float, max_s: float) -> None:
        self._metrics = metrics
        self._initial_s = initial_s
        self._max_s = max_s

    def __call__(self, action: Callable[[], T], what: str, give_up_s: float | None = None) -> T:
        """`action()`, retried while Redis is unreachable (re-raised after `give_up_s`)."""
        metrics = self._metrics
        delay = self._initial_s
        deadline = None if give_up_s is None else time.monotonic() + give_up_s
        while True:
            try:
                result = action()
                metrics.ready_flags["redis"] = True
                return result
            except REDIS_DOWN as exc:
                metrics.ready_flags["redis"] = False
                metrics.swallowed.labels("redis_" + what.replace(" ", "_")).inc()
                if deadline is not None and time.monotonic() > deadline:
                    raise
                log.warning(
                    "redis unavailable, retrying",
                    extra={"during": what, "retry_in_s": delay, "error": str(exc)},
                )
            except CorruptState as exc:  # pop or offsets: nothing can go on until repaired
                metrics.ready_flags["redis"] = False
                metrics.corrupt_state.labels(exc.what).inc()
                if deadline is not None and time.monotonic() > deadline:
                    raise
                log.error(
                    "corrupt state in redis, waiting for a repair (docs/operations.md)",
                    extra={"during": what, "retry_in_s": delay, "error": str(exc)},
                )
            time.sleep(delay)
            metrics.tick()
            delay = min(delay * 2, self._max_s)
