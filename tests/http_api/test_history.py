"""The rating-history reader against a real Kafka broker and a real redis-server: changes land in
each player's list in (epoch, seq) order, bounded; redelivery (the same messages read again by
a new group) changes nothing; a newer epoch replaces the changes the pool lost; a malformed
message or a change without seq is skipped and counted; offsets are committed after the write.
The `adr history` process is run too, and `adr serve`'s profile shows its history."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
import redis
from confluent_kafka import Consumer, Producer
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from leaderboard import Board
from redis_layout import Keys
from redis_layout.history_codec import decode_history_point
from schemas import encode_rating_change, rating_change
from serve.history import HistoryMetrics, HistoryReader, HistoryStore
from stack import TopicAdmin

pytestmark = pytest.mark.integration


def _change(player: str, seq: int, epoch: int = 0, mu: float | None = None) -> bytes:
    return encode_rating_change(
        rating_change(
            player=player, role="attacker", arena="a1", source_id=f"e-{epoch}-{seq}-{player}",
            ts=1_000 * seq, mu_before=1000.0, mu_after=mu if mu is not None else 1000.0 + seq,
            sigma_after=300.0 - seq, tier_before=None, tier_after="3M", seq=seq, epoch=epoch,
        )
    )  # fmt: skip


def _produce(bootstrap: str, topic: str, messages: list[tuple[str, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in messages:
        producer.produce(topic, key=key.encode(), value=value)
    assert producer.flush(30) == 0


def _drain(
    bootstrap: str, topic: str, group: str, store: HistoryStore, want: int
) -> HistoryMetrics:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })  # fmt: skip
    consumer.subscribe([topic])
    metrics = HistoryMetrics(CollectorRegistry())
    reader = HistoryReader(consumer, store, metrics, batch=7, poll_s=0.5)
    read, deadline = 0, time.monotonic() + 60
    try:
        while read < want:
            assert time.monotonic() < deadline, f"read {read} of {want}"
            read += reader.step()
        committed = consumer.committed(consumer.assignment(), timeout=10)
        assert sum(tp.offset for tp in committed if tp.offset >= 0) == want
    finally:
        consumer.close()
    return metrics


def _points(client: redis.Redis, keys: Keys, player: str) -> list[tuple[int, int]]:
    return [
        (p.epoch, p.seq)
        for p in map(decode_history_point, client.lrange(keys.history(player), 0, -1))
    ]


def test_ordered_bounded_idempotent_and_rewound(
    kafka_bootstrap: str,
    kafka_admin: TopicAdmin,
    redis_client: redis.Redis,
    unique_name: Callable[[str], str],
) -> None:
    topic = kafka_admin.create(unique_name("rating-changes"), partitions=3)
    keys = Keys(unique_name("hist"))
    messages = [("p1", _change("p1", s)) for s in range(1, 8)]
    messages += [("p2", _change("p2", s)) for s in (1, 2, 3, 4)]
    # the consumer's relay sent p2's 3 and 4 again; then Redis lost 4 and the pool raised its
    # epoch: 4 again with another body, and 5
    messages += [("p2", _change("p2", 3)), ("p2", _change("p2", 4))]
    messages += [("p2", _change("p2", 4, epoch=99, mu=1.5)), ("p2", _change("p2", 5, epoch=99))]
    messages += [("p3", b"\x93not a change"), ("p3", _change("p3", 0))]
    _produce(kafka_bootstrap, topic, messages)
    store = HistoryStore(redis_client, keys.namespace, points=5)
    metrics = _drain(kafka_bootstrap, topic, unique_name("g"), store, len(messages))
    assert _points(redis_client, keys, "p1") == [(0, s) for s in range(3, 8)]
    assert _points(redis_client, keys, "p2") == [(0, 1), (0, 2), (0, 3), (99, 4), (99, 5)]
    assert redis_client.exists(keys.history("p3")) == 0
    value = metrics.changes.labels
    assert (value("malformed")._value.get(), value("unordered")._value.get()) == (1, 1)
    assert value("already_kept")._value.get() == 2
    before = {p: redis_client.lrange(keys.history(p), 0, -1) for p in ("p1", "p2")}
    _drain(kafka_bootstrap, topic, unique_name("again"), store, len(messages))  # redelivery
    assert {p: redis_client.lrange(keys.history(p), 0, -1) for p in ("p1", "p2")} == before


@settings(max_examples=40, deadline=None)
@given(
    seqs=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 12)), min_size=1, max_size=30),
    points=st.integers(1, 6),
)
def test_the_list_is_the_newest_of_the_changes_in_order_whatever_the_redelivery(
    redis_url: str, seqs: list[tuple[int, int]], points: int
) -> None:
    """Model: a change is kept when it is above the last kept (epoch, seq); a newer epoch drops
    the kept ones of older epochs at or above its seq; the list is the newest `points`."""
    from schemas import decode_rating_change

    client = redis.Redis.from_url(redis_url)
    keys = Keys(f"hyp-{os.urandom(4).hex()}")
    store = HistoryStore(client, keys.namespace, points)
    model: list[tuple[int, int]] = []
    for epoch, seq in seqs:
        store.append([decode_rating_change(_change("p", seq, epoch))])
        if not model or (epoch, seq) > model[-1]:
            if model and epoch > model[-1][0]:
                while model and model[-1][0] < epoch and model[-1][1] >= seq:
                    model.pop()
            model.append((epoch, seq))
        model = model[-points:]
    try:
        assert _points(client, keys, "p") == model
    finally:
        client.delete(keys.history("p"))
        client.close()


def test_adr_history_runs_until_sigterm_and_the_profile_shows_it(
    kafka_bootstrap: str,
    kafka_admin: TopicAdmin,
    redis_url: str,
    redis_client: redis.Redis,
    unique_name: Callable[[str], str],
) -> None:
    topic = kafka_admin.create(unique_name("rating-changes"), partitions=2)
    keys = Keys(unique_name("hist"))
    redis_client.hset(keys.player("p1"), mapping={"mu": "1003.0", "sigma": "297.0", "tier": ""})
    _produce(kafka_bootstrap, topic, [("p1", _change("p1", s)) for s in (1, 2, 3)])
    env = {**os.environ, "REDIS_URL": redis_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "ADR_NAMESPACE": keys.namespace, "ADR_RATING_TOPIC": topic,
           "ADR_HISTORY_GROUP": unique_name("g"), "ADR_METRICS_PORT": "0"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "adr_cli.main", "history"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while redis_client.llen(keys.history("p1")) < 3:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    profile = Board(redis_client, keys.namespace).profile("p1", 10)
    assert [(p.seq, p.mu) for p in profile.history] == [(1, 1001.0), (2, 1002.0), (3, 1003.0)]
