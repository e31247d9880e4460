"""The one produce-and-poll loop (runtime.kafka_produce.produce_waiting), on a fake producer whose
local queue is full a given number of times (the loop's logic only; the relay, the dead-letter
producer and the load generator run it against a real broker in their tests)."""

from __future__ import annotations

import time
from typing import Any

from runtime.kafka_produce import produce_waiting


class _FullQueue:
    def __init__(self, full_times: int) -> None:
        self.full_times = full_times
        self.polls: list[float] = []
        self.produced: list[tuple[str, Any, Any, dict[str, Any]]] = []

    def produce(self, topic: str, value: Any = None, key: Any = None, **extra: Any) -> None:
        if self.full_times > 0:
            self.full_times -= 1
            raise BufferError("Local: Queue full")
        self.produced.append((topic, value, key, extra))

    def poll(self, timeout: float) -> int:
        self.polls.append(timeout)
        return 0


def test_a_full_queue_is_served_and_retried_with_a_tick_per_wait() -> None:
    producer, ticks = _FullQueue(3), []
    delivered = lambda _err, _msg: None  # noqa: E731
    queued = produce_waiting(
        producer, "t", b"v", b"k", on_delivery=delivered, wait_s=0.01,
        on_wait=lambda: ticks.append(1),
    )  # fmt: skip
    assert queued
    assert producer.polls == [0.01] * 3 and len(ticks) == 3
    assert producer.produced == [("t", b"v", b"k", {"on_delivery": delivered})]


def test_a_passed_deadline_gives_up_without_queueing() -> None:
    producer = _FullQueue(10**9)
    assert not produce_waiting(producer, "t", b"v", deadline=time.monotonic() - 1)
    assert producer.polls == [] and producer.produced == []
    started = time.monotonic()
    assert not produce_waiting(producer, "t", b"v", wait_s=0.01, deadline=started + 0.05)
    assert 0.05 <= time.monotonic() - started < 1.0 and producer.polls
