"""Helpers of the tier job tests: seed the Redis layout of docs/design.md as the consumer writes it,
and the snapshot the engine takes from the same players (the expected value)."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Mapping

import msgspec
import redis
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from engine import (
    Params,
    PlayerState,
    Snapshot,
    activity_time,
    is_active,
    new_player,
    take_snapshot,
)
from redis_layout import Keys

DAY_MS = 86_400_000
T0 = 1_800_000_000_000
"""A fixed wall-clock time (2027-01-15) the tests calibrate around."""


def player(params: Params, mu: float, events: tuple[int, ...]) -> PlayerState:
    """A tracked player with μ whose counted events happened at `events` (ms, any order)."""
    recent = tuple(sorted(events))[-params.n_active :]
    return msgspec.structs.replace(
        new_player(params),
        mu=mu,
        n=len(events),
        last_ts=events[-1] if events else None,
        recent=recent,
    )


def write_random_players(
    client: redis.Redis, ns: str, params: Params, count: int, seed: int, last_ts: int
) -> None:
    """`count` players p0, p1, ... with μ uniform in [0, 4000) (seeded), each with five events,
    the last at `last_ts`, written as the consumer would."""
    rng = random.Random(seed)
    players = {
        f"p{i}": player(params, rng.uniform(0, 4000), tuple(last_ts - j for j in range(5)))
        for i in range(count)
    }
    write_players(client, Keys.of(ns), players, params)


def played(params: Params, state: PlayerState, mu: float, events: tuple[int, ...]) -> PlayerState:
    """`state` after more counted events (their times, in arrival order), now with μ = `mu`."""
    if not events:
        return msgspec.structs.replace(state, mu=mu)
    recent = tuple(sorted(state.recent + events))[-params.n_active :]
    return msgspec.structs.replace(
        state, mu=mu, n=state.n + len(events), last_ts=events[-1], recent=recent
    )


def write_players(
    client: redis.Redis, keys: Keys, players: Mapping[str, PlayerState], params: Params
) -> None:
    """What the consumer's atomic write leaves for these players (the fields the job reads):
    the hash's μ and `{ns}:activity` when n >= n_active, as docs/design.md's Redis layout says."""
    pipe = client.pipeline(transaction=True)
    for pid, state in players.items():
        pipe.hset(keys.player(pid), mapping={"mu": repr(state.mu), "n": str(state.n)})
        since = activity_time(state, params)
        if since is None:
            continue
        pipe.zadd(keys.activity, {pid: since})
    pipe.execute()


def expected_snapshot(
    players: Mapping[str, PlayerState], now_ms: int, previous: Snapshot | None, params: Params
) -> Snapshot:
    """engine.take_snapshot on the same players: A by engine.is_active, P = all of them."""
    active = [s.mu for s in players.values() if is_active(s, now_ms, params)]
    everyone = [s.mu for s in players.values()]
    return take_snapshot(now_ms, active, everyone, previous, params)


def drop_namespace(client: redis.Redis, keys: Keys) -> None:
    batch = list(client.scan_iter(match=keys.match_all, count=1000))
    for i in range(0, len(batch), 1000):
        client.delete(*batch[i : i + 1000])


def read_topic(
    bootstrap: str, topic: str, expect: int | None = None, timeout_s: float = 20.0
) -> list[Message]:
    """The first `expect` messages of a one-partition topic (fewer if the timeout passes), or
    (no `expect`) every message up to the partition's end as the broker reports it then: all a
    publisher had committed before the call, and any extra one, with no quiet period to wait."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"tj-test-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 10,  # at the end the broker answers at once, not in 500 ms
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[Message] = []
    deadline = time.monotonic() + timeout_s
    try:
        while (expect is None or len(out) < expect) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is None:
                out.append(msg)
            elif expect is None and msg.error().code() == KafkaError._PARTITION_EOF:
                break
    finally:
        consumer.close()
    return out
