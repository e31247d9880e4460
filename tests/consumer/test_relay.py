"""The outbox relay duplicates only after a crash: a slow or blocked broker delays rating changes
but never sends one twice; each pump is bounded; rating changes carry seq = the player's ver."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import consumer_support as S
import msgspec
import redis
from confluent_kafka import Producer

from consumer._degraded import RATING_CHANGES
from consumer._metrics import Metrics
from consumer._relay import Relay
from consumer._topic_watch import STUCK_S
from consumer.config import Config
from engine import Params
from redis_layout import Keys
from schemas import decode_rating_change, encode_rating_change, rating_change
from stack import KafkaBroker, TopicAdmin

CLAIM_IDLE_MS = 300
"""Far below the time the broker is blocked: the old relay re-claimed its own entries then."""
PUMP_S = 0.2
MAX_ENTRIES = 5
MESSAGES_PER_ENTRY = 20


def _add_entries(client: redis.Redis, keys: Keys, first: int, n: int) -> list[str]:
    """n outbox entries as the write script adds them; returns the rating-change ids."""
    ids = []
    for i in range(first, first + n):
        pairs = []
        for j in range(MESSAGES_PER_ENTRY):
            change = rating_change(
                player=f"p{j}", role="attacker", arena="a", source_id=f"e{i}-{j}", ts=1,
                mu_before=1000.0, mu_after=1001.0, sigma_after=300.0, tier_before=None,
                tier_after=None, seq=i + 1,
            )  # fmt: skip
            pairs.append((change.player, encode_rating_change(change)))
            ids.append(change.id)
        client.xadd(keys.outbox, {"m": msgspec.msgpack.encode(pairs)})
    return ids


def _producer(bootstrap: str) -> Producer:
    """The consumer's producer settings, with a local queue small enough to fill while the
    broker is blocked."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "delivery.report.only.error": True,
            "message.timeout.ms": 0,
            "queue.buffering.max.messages": 3 * MESSAGES_PER_ENTRY,
        }
    )


def _relay(client: redis.Redis, bootstrap: str, keys: Keys, topic: str, name: str) -> Relay:
    config = Config(
        rating_topic=topic, instance_id=name, relay_batch=MAX_ENTRIES,
        outbox_claim_idle_ms=CLAIM_IDLE_MS, relay_max_in_flight=10 * MESSAGES_PER_ENTRY,
        relay_pump_ms=int(PUMP_S * 1000),
    )  # fmt: skip
    return Relay(client, _producer(bootstrap), keys, config, Metrics())


def _timed_pump(relay: Relay) -> int:
    started = time.monotonic()
    taken = relay.pump()
    assert time.monotonic() - started < PUMP_S + 2.0, "a pump ran unbounded"
    assert taken <= MAX_ENTRIES
    return taken


def test_a_blocked_broker_delays_rating_changes_but_never_duplicates_them(
    tmp_path: Path, redis_url: str, unique_name
) -> None:
    broker = KafkaBroker(tmp_path / "kafka")  # our own: the test freezes it (SIGSTOP)
    broker.start()
    client = redis.Redis.from_url(redis_url)
    try:
        topic = TopicAdmin(broker.bootstrap).create("ratings", partitions=2)
        keys = Keys(unique_name("ns"))
        # Two live relays share the outbox, as two consumer instances do.
        relays = [_relay(client, broker.bootstrap, keys, topic, n) for n in ("r1", "r2")]
        ids = _add_entries(client, keys, 0, 10)
        for _ in range(5):
            for relay in relays:
                _timed_pump(relay)
        assert broker.pid is not None
        os.kill(broker.pid, signal.SIGSTOP)
        # A pump that never returns would hold the broker frozen: thaw it anyway in 30 s.
        thaw = threading.Timer(30, os.kill, (broker.pid, signal.SIGCONT))
        thaw.start()
        try:
            ids += _add_entries(client, keys, 10, 40)
            # long enough for the relays to ask the broker why nothing is confirmed
            blocked_until = time.monotonic() + max(12 * CLAIM_IDLE_MS / 1000, STUCK_S + 2)
            while time.monotonic() < blocked_until:
                for relay in relays:
                    _timed_pump(relay)
                    assert relay.in_flight <= 10 * MESSAGES_PER_ENTRY + MESSAGES_PER_ENTRY
                    assert relay._metrics.healthy()
            assert client.xlen(keys.outbox) > 0  # still waiting for the broker
            for relay in relays:  # the metadata request got no answer either
                cause = relay._metrics.degraded.cause(RATING_CHANGES, topic)
                assert cause in ("timed_out", "broker_unavailable"), cause
        finally:
            thaw.cancel()
            os.kill(broker.pid, signal.SIGCONT)
        deadline = time.monotonic() + 120
        while client.xlen(keys.outbox) > 0 or any(r.in_flight for r in relays):
            assert time.monotonic() < deadline, "the outbox did not drain"
            for relay in relays:
                _timed_pump(relay)
            time.sleep(0.02)
        for relay in relays:
            relay.drain(10)
            assert relay._metrics.degraded.cause(RATING_CHANGES, topic) is None  # back

        got = [decode_rating_change(m.value()).id for m in S.read_topic(broker.bootstrap, topic)]
        twice = [i for i, n in Counter(got).items() if n > 1]
        assert not twice, f"{len(twice)} rating changes sent twice, e.g. {twice[:3]}"
        assert sorted(got) == sorted(ids)
    finally:
        client.close()
        broker.stop()


def test_rating_change_seq_is_the_players_version(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name, partitions=3)
    params = Params()
    events = S.events(3_000, players=60, arenas=12, seed=5)  # players recur within a batch
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    config = Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=unique_name("g"), rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
        batch_size=200,
    )  # fmt: skip
    consumer = S.start_threaded(config, params)
    try:
        ends = S.end_offsets(kafka_bootstrap, topic, 3)
        S.wait_applied(client, keys, topic, ends, 120, alive=consumer.thread.is_alive)
        S.wait_outbox_empty(client, keys, 60)
    finally:
        consumer.stop()
    stored = S.redis_players(client, keys)
    total = sum(ver for _state, ver in stored.values())  # ver counts a player's changes
    changes = [
        decode_rating_change(m.value()) for m in S.read_topic(kafka_bootstrap, f"{topic}-ratings")
    ]
    assert len(changes) == len({c.id for c in changes}) == total
    seqs: dict[str, list[int]] = defaultdict(list)
    for c in changes:  # topic order: one player's changes share a key, hence a partition
        seqs[c.player].append(c.seq)
    assert set(seqs) == set(stored)
    for player, (_state, ver) in stored.items():
        # 1, 2, ..., ver in the order they were applied: the last seq is the stored version.
        assert seqs[player] == list(range(1, ver + 1)), player
    assert any(ver > 10 for _s, ver in stored.values())
    client.close()
