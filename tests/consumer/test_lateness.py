"""Lateness by event time, as the engine decides it, and a cooldown that no wall clock ends.

A backlog hours old is rated (the decoder's wall-clock guard only refuses absurd times); an
event more than the lateness older than its partition's watermark is late, as in the replay;
a pair's cooldown key lives until no accepted event can fall in its cooldown, by event time,
however long its write or the next event of the pair is delayed.
"""

from __future__ import annotations

import time
from pathlib import Path

import consumer_support as S
import redis
from consumer_servers import DurableRedis

from consumer._batch import rate_batch
from consumer._intake import Accepted
from consumer._store import Store
from engine import DEFAULT_LATENESS_MS, Params
from redis_layout import Conflict, Keys
from redis_layout.keys import DUE_BUCKET_MS
from schemas import kill_event

HOUR_MS = 3_600_000

PARAMS = Params()


def _counter(consumer: S.ThreadedConsumer, name: str) -> float:
    return consumer.pipeline.metrics.registry.get_sample_value(name) or 0.0


def test_a_backlog_hours_old_is_rated_and_only_events_late_by_event_time_are_not(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, consumer_config
) -> None:
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    now = time.time_ns() // 1_000_000
    # The events of 3 h 50 min to 3 h ago, as after an outage of three hours ...
    events = S.events(4000, players=400, arenas=40, seed=61, start_ms=now - 3 * HOUR_MS)
    assert events[-1].ts < now - 3 * HOUR_MS + 60_000
    # ... and among them a few sent much later than their time: more than the lateness behind
    # the newest event before them, so late by event time (the replay rejects them too).
    for k in (1000, 2000, 3000):
        old = events[k - 1].ts - DEFAULT_LATENESS_MS - 60_000
        events.insert(k, kill_event(id=f"late-{k}", arena="a", attacker="p1", victim="p2", ts=old))
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    consumer = S.start_threaded(consumer_config(redis_url, ns, topic), PARAMS)
    try:
        S.wait_applied(client, keys, topic, {0: len(events)}, 120, alive=consumer.thread.is_alive)
        assert _counter(consumer, "adr_events_late_total") == 3
        dead = consumer.pipeline.metrics.registry.get_sample_value(
            "adr_events_dead_lettered_total", {"reason": "ts_out_of_range"}
        )
        assert not dead
    finally:
        consumer.stop()
    book = S.replay(events, PARAMS, S.SNAPSHOT)
    assert book.rejected_by_reason == {"late": 3}
    assert not {f"late-{k}" for k in (1000, 2000, 3000)} & set(book.counted_ids)
    assert len(book.counted_ids) > 3000
    S.assert_redis_equals_replay(client, keys, book, PARAMS, exact=True)
    client.close()


def test_cooldowns_stay_exact_when_writes_are_delayed_hours_after_the_events(
    kafka_bootstrap: str, kafka_admin, unique_name, tmp_path: Path, consumer_config
) -> None:
    """One event per batch, so every cooldown decision reads the pair's key back from Redis;
    the events are two hours old and Redis goes away for a while with events read but not
    written. A key that expired on Redis's clock (ts + a TTL) would count repeats the engine
    drops."""
    server = DurableRedis(tmp_path / "redis")
    server.start()
    consumer = None
    try:
        topic, ns, keys, client = S.pool_on_topic(kafka_admin, server.url, unique_name)
        now = time.time_ns() // 1_000_000
        events = S.events(600, players=12, arenas=3, seed=67, start_ms=now - 2 * HOUR_MS)
        config = consumer_config(server.url, ns, topic, batch_size=1, backoff_max_s=0.2)
        consumer = S.start_threaded(config, PARAMS)
        alive = consumer.thread.is_alive
        S.produce(kafka_bootstrap, topic, S.encoded(events[:300]))
        S.wait_applied(client, keys, topic, {0: 150}, 60, alive=alive)
        client.close()
        server.restart(down_s=3.0)  # writes of events already read wait for Redis meanwhile
        client = redis.Redis.from_url(server.url)
        S.produce(kafka_bootstrap, topic, S.encoded(events[300:]))
        S.wait_applied(client, keys, topic, {0: len(events)}, 120, alive=alive)
        duplicates = _counter(consumer, "adr_events_duplicate_total")
        consumer.stop()
        consumer = None

        book = S.replay(events, PARAMS, S.SNAPSHOT)
        assert book.duplicates > 20  # the stream repeats pairs inside the cooldown
        assert duplicates == book.duplicates
        S.assert_redis_equals_replay(client, keys, book, PARAMS, exact=True)
        cooldown_keys = list(client.scan_iter(match=keys.match_cooldowns, count=1000))
        assert cooldown_keys
        assert {client.pttl(k) for k in cooldown_keys} == {-1}  # no wall-clock expiry
        client.close()
    finally:
        if consumer is not None:
            consumer.stop()
        server.stop()


def _write(store: Store, keys: Keys, params: Params, batch: list[Accepted]) -> None:
    ends = {x.partition: x.offset + 1 for x in batch}
    players = list(dict.fromkeys(p for x in batch for p in (x.event.attacker, x.event.victim)))
    pairs = list(dict.fromkeys(keys.cooldown(x.event.attacker, x.event.victim) for x in batch))
    while True:
        view = store.read_view(players, pairs, list(ends))
        plan = rate_batch(batch, ends, view, keys, params)  # the default lateness, as the store's
        try:
            store.write(plan)
            return
        except Conflict:
            continue


def test_a_cooldown_key_lives_until_every_partition_watermark_is_past_it(
    redis_url: str, unique_name
) -> None:
    params = Params()
    client, keys, store = S.fresh_store(redis_url, unique_name, params)
    keep = DEFAULT_LATENESS_MS + params.cooldown_ms
    # t0 in the middle of its index bucket (redis_layout/keys.py, DUE_BUCKET_MS)
    t0 = (time.time_ns() // 1_000_000 - 5 * HOUR_MS) // DUE_BUCKET_MS * DUE_BUCKET_MS + 4_000
    end = t0 - 4_000 + DUE_BUCKET_MS - 1  # the bucket's last ms
    pair = keys.cooldown("a", "b")

    def event(i: int, a: str, b: str, ts: int, partition: int) -> Accepted:
        return Accepted(
            # ids unique across partitions: a reused id would be dead-lettered (id_reused)
            partition,
            i,
            kill_event(id=f"e{partition}-{i}", arena="x", attacker=a, victim=b, ts=ts),
        )

    _write(store, keys, params, [event(0, "a", "b", t0, partition=0)])
    _write(store, keys, params, [event(0, "c", "d", t0, partition=1)])
    assert client.get(pair) == str(t0).encode() and client.pttl(pair) == -1
    # Partition 0 moves far past the pair; partition 1 still could send a→b within its cooldown.
    _write(store, keys, params, [event(1, "e", "f", t0 + 2 * keep, partition=0)])
    assert client.get(pair) == str(t0).encode()
    _write(store, keys, params, [event(1, "g", "h", t0 + keep - 1, partition=1)])
    assert client.get(pair) == str(t0).encode()  # an a→b at t0 + 59 s would still be accepted
    # Once every partition's watermark minus the lateness is a cooldown past t0, it may go; it
    # goes once that is past the whole of its index bucket.
    _write(store, keys, params, [event(2, "g", "h", t0 + keep, partition=1)])
    assert client.get(pair) == str(t0).encode()
    _write(store, keys, params, [event(3, "g", "h", end + keep - 1, partition=1)])
    assert client.get(pair) == str(t0).encode()
    _write(store, keys, params, [event(4, "g", "h", end + keep, partition=1)])
    assert client.get(pair) is None
    assert not client.exists(keys.cooldown_bucket(end))
    assert client.zscore(keys.due_buckets, str(end)) is None
    client.close()
