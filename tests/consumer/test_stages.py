"""The stage timer (consumer/_stages.py) the benchmark's profiling phase hands to the pipeline:
each stage of a batch is charged once, in order, and timing changes nothing that is computed."""

from __future__ import annotations

import time

import pytest
import redis

from consumer._batch import rate_batch
from consumer._intake import Accepted
from consumer._stages import (
    DECODE,
    HASH_VALUES,
    RATE,
    READ,
    STAGES,
    WRITE_ARGUMENTS,
    StageClock,
    StageTimer,
)
from consumer._store import Store
from engine import Params
from redis_layout import Keys
from schemas import kill_event

TOPIC = "kill-events"


class Recorder(StageTimer):
    """Records the order of starts and stops."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")

    def stop(self, stage: str) -> None:
        self.calls.append(stage)


def _batch(now: int) -> list[Accepted]:
    events = [("a", "b"), ("b", "c"), ("a", "b"), ("c", "a")]
    return [
        Accepted(0, i, kill_event(id=f"e{i}", arena="x", attacker=a, victim=v, ts=now + i))
        for i, (a, v) in enumerate(events)
    ]


def test_rate_batch_charges_the_rating_then_the_hash_values_and_computes_the_same(
    redis_url: str, unique_name
) -> None:
    recorder = Recorder()
    batch = _batch(time.time_ns() // 1_000_000)
    keys, params = Keys(unique_name("ns")), Params()
    client = redis.Redis.from_url(redis_url)
    store = Store(client, keys, TOPIC, params, stages=recorder)
    players = ["a", "b", "c"]
    pairs = list(dict.fromkeys(keys.cooldown(x.event.attacker, x.event.victim) for x in batch))
    view = store.read_view(players, pairs, [0])
    assert recorder.calls == ["start", READ, "start", READ]  # packing the read, parsing it
    recorder.calls.clear()
    timed = rate_batch(batch, {0: 4}, view, keys, params, stages=recorder)
    assert recorder.calls == ["start", RATE, "start", HASH_VALUES]
    assert timed == rate_batch(batch, {0: 4}, view, keys, params)
    recorder.calls.clear()
    store.write(timed)
    assert recorder.calls == ["start", WRITE_ARGUMENTS]
    assert client.hget(keys.offsets(TOPIC), "0") == b"4"
    client.close()


def test_stage_clock_sums_the_thread_cpu_time_per_stage() -> None:
    clock = StageClock()
    assert clock.seconds == dict.fromkeys(STAGES, 0.0)
    clock.start()
    deadline = time.thread_time() + 0.02
    while time.thread_time() < deadline:  # busy: CPU time, not a sleep
        pass
    clock.stop(DECODE)
    clock.start()
    time.sleep(0.05)  # waiting costs no CPU time
    clock.stop(RATE)
    assert clock.seconds[DECODE] >= 0.02
    assert clock.seconds[RATE] < 0.02
    assert clock.seconds[HASH_VALUES] == pytest.approx(0.0)
