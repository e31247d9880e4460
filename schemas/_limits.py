"""Limits enforced on decode: the format's fixed ones and the configurable event-time window."""

from __future__ import annotations

from dataclasses import dataclass

MAX_MESSAGE_BYTES = 4096
"""A message (the encoded msgpack map) is at most 4 KiB."""

MAX_ID_BYTES = 64
"""Every id (event, arena, player) is 1–64 bytes of UTF-8."""

MAX_LABEL_BYTES = 16
"""A tier label (e.g. "1H") is 1–16 bytes of UTF-8."""

DEFAULT_MAX_AGE_MS = 7 * 86_400_000
"""Oldest accepted event time, relative to the wall clock: a guard against plainly absurd times
only (seconds sent as milliseconds, a clock at zero). Whether an event is too late to rate is
decided by event time (the consumer's per-partition watermark, like the engine's)."""

DEFAULT_MAX_FUTURE_MS = 60_000
"""Newest accepted event time, relative to the wall clock (tolerates game-server clock skew)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The accepted event-time window: `now - max_age_ms <= ts <= now + max_future_ms`."""

    max_age_ms: int = DEFAULT_MAX_AGE_MS
    max_future_ms: int = DEFAULT_MAX_FUTURE_MS

    def __post_init__(self) -> None:
        if self.max_age_ms < 0 or self.max_future_ms < 0:
            raise ValueError("max_age_ms and max_future_ms must be >= 0")


DEFAULT_LIMITS = Limits()
