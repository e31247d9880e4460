"""Handing a message to librdkafka when its local queue may be full: the one produce loop."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

WAIT_STEP_S: Final = 0.05
"""How long one wait serves delivery reports before trying again."""


def produce_waiting(
    producer: Any,
    topic: str,
    value: bytes | None,
    key: bytes | str | None = None,
    *,
    headers: list[tuple[str, Any]] | None = None,
    on_delivery: Callable[[Any, Any], None] | None = None,
    wait_s: float = WAIT_STEP_S,
    deadline: float | None = None,
    on_wait: Callable[[], None] | None = None,
) -> bool:
    """Queue one message; while the local queue is full (BufferError), serve delivery reports
    for `wait_s`, call `on_wait` (a liveness tick: waiting on the broker is not a stall) and try
    again. With a `deadline` (time.monotonic()), give up once it has passed: False, nothing
    queued. Any other refusal (KafkaException) is the caller's."""
    extra: dict[str, Any] = {}
    if headers is not None:
        extra["headers"] = headers
    if on_delivery is not None:
        extra["on_delivery"] = on_delivery
    while True:
        try:
            producer.produce(topic, value=value, key=key, **extra)
            return True
        except BufferError:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            producer.poll(wait_s)
            if on_wait is not None:
                on_wait()
