"""Meaning checks (schemas/kill_event.md, "Meaning checks"), on the real broker and Redis:

- a Kafka key that is not the event's arena is dead-lettered as `key_mismatch`;
- an event id counted once is never counted again: a resend (same arena, players and ts) is a
  duplicate, a reuse for another kill is dead-lettered as `id_reused`, also when two consumers
  see the two uses at once on two partitions; so rating-change ids stay unique.
"""

from __future__ import annotations

import time
from collections import Counter

import consumer_support as S
from confluent_kafka import Producer

from consumer._batch import rate_batch
from consumer._intake import Accepted
from consumer.config import Config
from engine import Params
from redis_layout import Conflict, Keys
from redis_layout.keys import due_bucket_end
from schemas import (
    KillEvent,
    decode_kill_event,
    decode_rating_change,
    encode_kill_event,
    kill_event,
)

MIN = 60_000


def _config(bootstrap: str, redis_url: str, ns: str, topic: str, group: str) -> Config:
    return Config(
        bootstrap_servers=bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=group, rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
        metrics_host="127.0.0.1", metrics_port=0, batch_size=50,
    )  # fmt: skip


def _rating_change_ids(bootstrap: str, topic: str, expect: int) -> Counter[str]:
    changes = S.read_topic(bootstrap, f"{topic}-ratings", expect=expect)
    return Counter(decode_rating_change(m.value()).id for m in changes)


def test_key_mismatch_resend_and_reused_ids(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    params = Params()
    base = time.time_ns() // 1_000_000 - 30 * MIN

    def ev(i: str, a: str, b: str, ts: int, arena: str = "arena-9") -> KillEvent:
        return kill_event(id=i, arena=arena, attacker=a, victim=b, ts=ts)

    k1 = ev("k1", "A", "B", base)
    k2 = ev("k2", "A", "B", base + 2 * MIN)  # past k1's cooldown: counted
    reused = ev("k1", "C", "D", base + 3 * MIN)  # k1 again, another kill
    k4 = ev("k4", "C", "D", base + 4 * MIN)
    k6 = ev("k6", "E", "F", base + 5 * MIN)
    k6_again = ev("k6", "G", "H", base + 5 * MIN)  # reused inside one batch
    wrong_key = ev("k7", "E", "G", base + 6 * MIN, arena="arena-8")
    # (key, event, what the consumer does)
    special = [
        (b"arena-9", k1, "count"),
        (b"arena-9", k2, "count"),
        (b"arena-9", k1, "duplicate"),  # a resend after a later kill of the pair: the cooldown
        (b"arena-9", reused, "id_reused"),  # alone would count it a second time
        (b"arena-9", k4, "count"),
        (b"arena-9", k6, "count"),
        (b"arena-9", k6_again, "id_reused"),
        (b"arena-9", wrong_key, "key_mismatch"),
    ]
    bulk = S.events(400, players=30, arenas=3, seed=31)
    stream = [(e.arena.encode(), e, "count") for e in bulk[:200]]
    stream += special
    stream += [(e.arena.encode(), e, "count") for e in bulk[200:]]
    S.produce(kafka_bootstrap, topic, [(k, encode_kill_event(e)) for k, e, _ in stream])

    consumer = S.start_threaded(
        _config(kafka_bootstrap, redis_url, ns, topic, unique_name("g")), params
    )
    try:
        S.wait_applied(client, keys, topic, {0: len(stream)}, 120, alive=consumer.thread.is_alive)
        S.wait_outbox_empty(client, keys, 30)
    finally:
        consumer.stop()

    dead_want = [
        (offset, what, encode_kill_event(e))
        for offset, (_k, e, what) in enumerate(stream)
        if what in ("id_reused", "key_mismatch")
    ]
    dead = S.read_topic(kafka_bootstrap, f"{topic}-dlq", expect=len(dead_want))
    got = [
        (int(h["source_offset"]), h["reason"].decode(), m.value())
        for m in dead
        for h in [dict(m.headers())]
    ]
    assert sorted(got) == dead_want  # (decode-stage rejections come before rated ones)
    applied = [e for _k, e, what in stream if what == "count"]
    book = S.replay(applied, params, S.SNAPSHOT)
    S.assert_redis_equals_replay(client, keys, book, params, exact=True)
    assert "k1" in book.counted_ids and "k2" in book.counted_ids  # type: ignore[attr-defined]
    ids = _rating_change_ids(kafka_bootstrap, topic, 2 * book.counted)
    assert max(ids.values()) == 1  # unique
    assert set(ids) == S.change_ids(book.counted_ids)  # type: ignore[attr-defined]
    assert client.get(keys.event_id("k1")) is not None
    # No TTL: indexed by its event time with the cooldown keys and swept with them.
    end = due_bucket_end(k1.ts)
    assert keys.event_id("k1").encode() in client.lrange(keys.event_id_bucket(end), 0, -1)
    assert client.zscore(keys.due_buckets, str(end)) == end
    client.close()


def test_an_id_reused_on_two_partitions_at_once_is_counted_once(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    """Each id is used once on each partition, for two different kills, at the same position:
    two consumers rate them at the same time. Exactly one use of each is counted."""
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name, partitions=2)
    params = Params()
    start = time.time_ns() // 1_000_000 - 20 * MIN
    n = 300
    uses = {
        part: [
            kill_event(
                id=f"shared-{i}",
                arena=f"arena-p{part}",
                attacker=f"a{part}-{i % 17}",
                victim=f"v{part}-{i % 13}",
                ts=start + i * 1000,
            )  # fmt: skip  (a pair repeats every 221 s: no cooldown duplicates)
            for i in range(n)
        ]
        for part in (0, 1)
    }
    group = unique_name("g")
    consumers = [
        S.start_threaded(_config(kafka_bootstrap, redis_url, ns, topic, group), params)
        for _ in range(2)
    ]
    try:
        S.wait_until(
            lambda: all(len(c.pipeline.assigned) == 1 for c in consumers), 60, "one partition each"
        )
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 50})
        for i in range(n):
            for part in (0, 1):
                e = uses[part][i]
                producer.produce(
                    topic, key=e.arena.encode(), value=encode_kill_event(e), partition=part
                )
        assert producer.flush(30) == 0
        S.wait_applied(client, keys, topic, {0: n, 1: n}, 120)
        S.wait_outbox_empty(client, keys, 30)
    finally:
        for c in consumers:
            c.stop()

    now = time.time_ns() // 1_000_000
    dead = S.read_topic(kafka_bootstrap, f"{topic}-dlq", expect=n)
    assert {dict(m.headers())["reason"] for m in dead} == {b"id_reused"}
    dead_ids = Counter(decode_kill_event(m.value(), now).id for m in dead)
    assert set(dead_ids) == {f"shared-{i}" for i in range(n)} and max(dead_ids.values()) == 1
    ids = _rating_change_ids(kafka_bootstrap, topic, 2 * n)
    assert max(ids.values()) == 1  # rating-change ids unique
    assert set(ids) == S.change_ids(f"shared-{i}" for i in range(n))
    client.close()


def test_the_write_refuses_an_id_another_instance_recorded_meanwhile(
    redis_url: str, unique_name
) -> None:
    params = Params()
    client, keys, store = S.fresh_store(redis_url, unique_name, params)
    ts = time.time_ns() // 1_000_000
    item = Accepted(0, 0, kill_event(id="x1", arena="a", attacker="p", victim="q", ts=ts))
    ids = [keys.event_id("x1")]
    view = store.read_view(["p", "q"], [keys.cooldown("p", "q")], [0], ids=ids)
    plan = rate_batch([item], {0: 1}, view, keys, params)
    assert plan.event_ids and plan.counted == 1
    client.set(keys.event_id("x1"), b"0123456789abcdef")  # another instance counted x1
    try:
        store.write(plan)
    except Conflict as exc:
        assert exc.what == "event_id"
    else:
        raise AssertionError("the write went through")
    assert client.hget(keys.player("p"), "mu") is None  # nothing written
    view = store.read_view(["p", "q"], [keys.cooldown("p", "q")], [0], ids=ids)
    plan = rate_batch([item], {0: 1}, view, keys, params)
    assert plan.counted == 0 and [r for _a, r in plan.rejected] == ["id_reused"]
    client.close()


def test_a_rated_rejection_whose_dead_letter_is_not_delivered_cuts_the_batch_there() -> None:
    """The rate step (no servers: the lifecycle on in-memory adapters): when the dead letter of
    an event rating left out is not acknowledged, the batch stops at it, like a decode-stage
    rejection: nothing at or after it is applied and the partition's stored offset becomes that
    event's."""
    from lifecycle_fakes import fakes

    from consumer._batch import View
    from consumer._intake import Batch
    from consumer._metrics import Metrics
    from consumer.pipeline import Pipeline
    from engine import initial_snapshot

    keys = Keys("unit")
    params = Params()
    ts = 1_764_680_400_000
    players = ["a", "b", "bad", "c"]
    pairs = [("a", "b"), ("b", "c"), ("bad", "a"), ("c", "a"), ("a", "bad"), ("c", "b")]
    metrics = Metrics()
    made = fakes("kill-events", initial_snapshot(params), metrics)
    accepted = [
        Accepted(
            0,
            offset,
            kill_event(id=f"u{offset}", arena="x", attacker=p, victim=q, ts=ts),
            made.kafka.append(0, b"x", b"(the bytes dead-lettered)"),
        )
        for offset, (p, q) in enumerate(pairs)
    ]
    batch = Batch(accepted, {0: len(pairs)}, len(pairs), 0.0, keys)
    view = View(
        players={p: (None, 0) for p in players if p != "bad"},
        cooldowns={},
        sigma_units_total=0,
        player_count=0,
        offsets={0: None},
        snapshot=initial_snapshot(params),
        corrupt={"bad": "unreadable"},
    )
    made.dead_letters.undeliverable = {(0, 2)}  # the first rejection's copy is not taken
    lifecycle = Pipeline(Config(namespace="unit"), params, metrics, made.clients).lifecycle
    plan = lifecycle.rate(batch, view)
    assert made.dead_letters.delivered == [(0, 4, "corrupt_state")]  # both were tried
    assert plan.counted == 2 and not plan.rejected  # offsets 0 and 1 only
    assert plan.offsets == [(0, 2)] and batch.next_offsets == {0: 2}
    assert 0 in made.kafka.paused  # the partition stops at the undelivered one
