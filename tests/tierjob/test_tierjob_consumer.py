"""Through the real consumer (`consumer.Pipeline`) on a real broker and Redis: the snapshot the
job takes from the consumer's state equals engine.take_snapshot on the same players, and after a
publish the consumer's next counted events use the new boundaries and μ̄_A.

The expected states come from the engine's own functions (is_duplicate, rate_kill) driven over
the same events, with the snapshot switched where the job published it.
"""

from __future__ import annotations

import random
import threading
import time

import redis
from _tierjob_support import expected_snapshot
from confluent_kafka import Producer

from consumer.pipeline import Pipeline
from engine import (
    TIER_LABELS,
    Params,
    PlayerState,
    Snapshot,
    initial_snapshot,
    is_duplicate,
    new_player,
    rate_kill,
    sigma_units,
)
from redis_layout import Keys
from schemas import encode_kill_event, kill_event
from tierjob import Calibrator, Config

PARAMS = Params()
ARENA = "arena-1"


class Driver:
    """The engine's functions over an ordered event stream under a given snapshot (the oracle)."""

    def __init__(self, params: Params) -> None:
        self.params = params
        self.players: dict[str, PlayerState] = {}
        self.units = 0
        self.last_counted: dict[tuple[str, str], int] = {}

    def apply(self, a: str, b: str, ts: int, snapshot: Snapshot) -> None:
        if is_duplicate(self.last_counted.get((a, b)), ts, self.params):
            return
        for p in (a, b):
            if p not in self.players:
                self.players[p] = new_player(self.params)
                self.units += sigma_units(self.params.sigma0, self.params)
        out = rate_kill(
            self.players[a],
            self.players[b],
            ts,
            self.units,
            len(self.players),
            snapshot,
            self.params,
        )
        self.players[a], self.players[b] = out.attacker, out.victim
        self.units += out.sigma_units_delta
        self.last_counted[(a, b)] = ts


def events(rng: random.Random, players: int, count: int, start: int, step: int):  # type: ignore[no-untyped-def]
    ts = start
    for _ in range(count):
        a, b = rng.sample(range(players), 2)
        yield f"p{a}", f"p{b}", ts
        ts += step


def produce(bootstrap: str, topic: str, evs: list[tuple[str, str, int]], tag: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i, (a, b, ts) in enumerate(evs):
        event = kill_event(id=f"{tag}-{i}", arena=ARENA, attacker=a, victim=b, ts=ts)
        producer.produce(topic, key=ARENA.encode(), value=encode_kill_event(event))
    assert producer.flush(30) == 0


def wait_offset(client: redis.Redis, ns: str, topic: str, offset: int, timeout: float = 60) -> None:
    key = Keys(ns).offsets(topic)
    deadline = time.monotonic() + timeout
    while int(client.hget(key, "0") or 0) < offset:
        assert time.monotonic() < deadline, f"consumer did not reach offset {offset}"
        time.sleep(0.1)


def stored(client: redis.Redis, ns: str, player: str) -> tuple[float, str]:
    mu, tier = client.hmget(Keys.of(ns).player(player), ["mu", "tier"])
    assert mu is not None
    return float(mu), (tier or b"").decode()


def label(state: PlayerState) -> str:
    return TIER_LABELS[state.tier - 1] if state.tier else ""


def test_the_consumer_uses_a_published_snapshot_at_its_next_batch(
    redis_client: redis.Redis,
    redis_url: str,
    kafka_bootstrap: str,
    kafka_admin,  # type: ignore[no-untyped-def]
    ns: str,
    unique_name,  # type: ignore[no-untyped-def]
    consumer_config,  # type: ignore[no-untyped-def]
) -> None:
    topic = unique_name("kills")
    for name in (topic, f"{topic}-ratings", f"{topic}-dlq"):
        kafka_admin.create(name, partitions=1)
    pipeline = Pipeline(consumer_config(redis_url, ns, topic, metrics_port=0), PARAMS)
    thread = threading.Thread(
        target=pipeline.run, kwargs={"serve_metrics": False, "signals": False}, daemon=True
    )
    thread.start()
    try:
        rng = random.Random(21)
        now = int(time.time() * 1000)
        # Phase 1: 30 players, ~20 events each (enough to be placed), no boundaries yet.
        first = list(events(rng, 30, 300, now - 50 * 60_000, 4_000))
        produce(kafka_bootstrap, topic, first, "a")
        wait_offset(redis_client, ns, topic, len(first))

        oracle = Driver(PARAMS)
        for a, b, ts in first:
            oracle.apply(a, b, ts, initial_snapshot(PARAMS))
        assert all(stored(redis_client, ns, p) == (s.mu, "") for p, s in oracle.players.items())

        job = Calibrator(redis_client, Config(namespace=ns, params=PARAMS))
        result = job.run_once()
        snapshot = result.snapshot
        assert result.outcome == "published" and snapshot is not None
        # The consumer's activity index and player hashes give the engine's snapshot.
        assert snapshot == expected_snapshot(oracle.players, result.now_ms, None, PARAMS)
        assert snapshot.active_count == 30 and snapshot.boundaries is not None
        assert snapshot.mean_mu_active != PARAMS.mu0

        # Phase 2: the next counted events use the published μ̄_A and boundaries.
        second = list(events(rng, 30, 120, now - 20 * 60_000, 4_000))
        produce(kafka_bootstrap, topic, second, "b")
        wait_offset(redis_client, ns, topic, len(first) + len(second))
    finally:
        pipeline.request_stop()
        thread.join(60)
    stale = Driver(PARAMS)
    stale.players, stale.units = dict(oracle.players), oracle.units
    stale.last_counted = dict(oracle.last_counted)
    for a, b, ts in second:
        oracle.apply(a, b, ts, snapshot)
        stale.apply(a, b, ts, initial_snapshot(PARAMS))
    got = {p: stored(redis_client, ns, p) for p in oracle.players}
    assert got == {p: (s.mu, label(s)) for p, s in oracle.players.items()}
    assert any(tier for _, tier in got.values())  # placed by the published boundaries
    assert got != {p: (s.mu, label(s)) for p, s in stale.players.items()}
    assert {p: mu for p, (mu, _) in got.items()} != {p: s.mu for p, s in stale.players.items()}
