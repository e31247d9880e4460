"""Retrying a Redis step with exponential backoff while Redis is unreachable, refuses it or
holds corrupt state it cannot go on without.

Two kinds of failure pass once the server (or an operator) has done something, so they are
retried, each with a log line and a metric, never a crash that follows the partition from
instance to instance:

- Redis unreachable: the connection is lost or times out (`REDIS_DOWN`).
- Redis refuses the command (`refusal`): OOM under `maxmemory` with `noeviction`, READONLY from
  a replica (after a failover), MASTERDOWN and LOADING during failover or start-up, BUSY while a
  slow script runs, and WRONGTYPE / BADVALUE when a key the write needs holds data of another
  kind (the write script checks this before its first write; redis_layout/scripts/apply.lua).

- Redis holds corrupt `pop` or offsets (`CorruptState`, raised by the reads): nothing can be
  computed without them; counted in `adr_corrupt_state_total{what}` (docs/operations.md,
  AdrCorruptState).

Any other error is a bug or a bad reply and is raised.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final, TypeVar

import redis

from consumer._errors import CorruptState, StopRequested
from consumer._health import Status
from consumer._metrics import Metrics

REDIS_DOWN: Final = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)
"""What "Redis unavailable" means here."""
_REDIS_UP: Final = Status(True)
_REDIS_DOWN: Final = Status(False)
REFUSALS: Final = {
    "OOM": "out of memory: maxmemory reached with a noeviction policy",
    "READONLY": "a read-only replica (a failover, or REPLICAOF on this server)",
    "MASTERDOWN": "a replica that lost its primary",
    "LOADING": "loading its dataset",
    "BUSY": "busy running a slow script",
    "TRYAGAIN": "a cluster slot in migration",
    "CLUSTERDOWN": "the cluster is down",
    "WRONGTYPE": "a key the write needs holds another type (see the key in the error)",
    "BADVALUE": "a counter the write increments is not an integer (see the key in the error)",
}
"""Redis error codes that are retried like a lost connection, and what each means."""
_CODE_OF_CLASS: Final = tuple(
    (cls, code)
    for name, code in (
        ("OutOfMemoryError", "OOM"),
        ("ReadOnlyError", "READONLY"),
        ("MasterDownError", "MASTERDOWN"),
        ("TryAgainError", "TRYAGAIN"),
        ("ClusterDownError", "CLUSTERDOWN"),
    )
    if (cls := getattr(redis.exceptions, name, None)) is not None
)
"""redis-py versions without `status_code` strip these codes from the message."""
T = TypeVar("T")
log = logging.getLogger("adr.consumer")


def refusal(exc: BaseException) -> str | None:
    """The code (a key of REFUSALS) of a Redis refusal that is retried, else None."""
    if isinstance(exc, redis.BusyLoadingError):  # redis-py makes LOADING a ConnectionError
        return "LOADING"
    if not isinstance(exc, redis.ResponseError):
        return None
    code = getattr(exc, "status_code", None)
    if code is None:
        code = next((c for cls, c in _CODE_OF_CLASS if isinstance(exc, cls)), None)
    if code is None:
        code = str(exc).split(" ", 1)[0]
    return code if code in REFUSALS else None


def retriable(exc: BaseException) -> bool:
    """Whether `exc` is Redis unreachable or refusing, so that the step is tried again."""
    return isinstance(exc, REDIS_DOWN) or refusal(exc) is not None


def log_redis_failure(exc: BaseException, what: str, retry_in_s: float | None = None) -> None:
    """One clear line per failed try: unreachable, or refused with the code and its meaning."""
    code = refusal(exc)
    extra: dict[str, object] = {"during": what, "error": str(exc)}
    if retry_in_s is not None:
        extra["retry_in_s"] = retry_in_s
    if code is None:
        log.warning("redis unavailable, retrying", extra=extra)
    else:
        extra.update(code=code, meaning=REFUSALS[code])
        log.warning("redis refused the command, retrying", extra=extra)


def _never() -> bool:
    return False


class RedisRetry:
    """Runs an action until Redis answers, backing off from `initial_s` up to `max_s`; gives up
    with StopRequested once `stopping()` says the process is to stop (a SIGTERM while Redis is
    down or loading must not wait for Redis past the grace period)."""

    def __init__(
        self,
        metrics: Metrics,
        initial_s: float,
        max_s: float,
        stopping: Callable[[], bool] = _never,
    ) -> None:
        self._metrics = metrics
        self._initial_s = initial_s
        self._max_s = max_s
        self._stopping = stopping
        self.status = _REDIS_DOWN
        """Readiness part `redis` (consumer/_health.py): whether the last Redis step answered
        (every Redis step of the pipeline that waits for Redis runs here; a step outside it that
        fails is redone here, so a failure is seen)."""

    def __call__(self, action: Callable[[], T], what: str, give_up_s: float | None = None) -> T:
        """`action()`, retried while Redis is unreachable or refuses it (re-raised after
        `give_up_s`)."""
        metrics = self._metrics
        delay = self._initial_s
        deadline = None if give_up_s is None else time.monotonic() + give_up_s
        while True:
            try:
                result = action()
                self.status = _REDIS_UP
                return result
            except redis.RedisError as exc:
                if not retriable(exc):
                    raise
                self.status = _REDIS_DOWN
                metrics.swallowed.labels("redis_" + what.replace(" ", "_")).inc()
                code = refusal(exc)
                if code is not None:
                    metrics.redis_refused.labels(code).inc()
                if deadline is not None and time.monotonic() > deadline:
                    raise
                log_redis_failure(exc, what, delay)
            except CorruptState as exc:
                self.status = _REDIS_DOWN
                metrics.corrupt_state.labels(exc.what).inc()
                if deadline is not None and time.monotonic() > deadline:
                    raise
                log.error(
                    "corrupt state in redis, waiting for a repair (docs/operations.md)",
                    extra={"during": what, "retry_in_s": delay, "error": str(exc)},
                )
            if self._stopping():
                raise StopRequested(what)
            _sleep(delay, self._stopping)
            metrics.tick()
            delay = min(delay * 2, self._max_s)


_STOP_CHECK_S: Final = 0.1


def _sleep(seconds: float, stopping: Callable[[], bool]) -> None:
    """Sleep `seconds`, waking early when `stopping()` turns true (checked every 0.1 s)."""
    end = time.monotonic() + seconds
    while not stopping():
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, _STOP_CHECK_S))
