"""Corrupt values in the real Redis, under a running consumer: quarantined, counted, never applied,
never a crash loop.

- a player hash or cooldown key that does not decode (or a state the engine cannot rate): the
  events that need it go to the dead-letter topic as `corrupt_state`; everything else applies;
- a published snapshot that does not parse: the last good one stays in use;
- an outbox entry that does not decode: moved to `{ns}:outbox:quarantine`;
- corrupt `pop` or offsets: the consumer waits (readiness down, metric) and goes on once they
  are repaired.
"""

from __future__ import annotations

import time

import consumer_support as S
import msgspec

from engine import Params
from schemas import encode_kill_event

# player -> how its hash is corrupted (None: the key is a string, not a hash)
_CORRUPT_PLAYERS: dict[str, dict[str, bytes] | None] = {
    "p3": {"mu": b"garbage"},
    "p7": {"window": b"\xc1"},
    "p11": {"mu": b"nan"},
    "p13": None,
    "p17": {},  # a hash holding only ver
    "p19": {"window": msgspec.msgpack.encode([1e308] * 20), "n": b"30"},  # engine overflows
}


def _corrupt_players(client, keys) -> None:
    base = {
        "mu": b"1000.0", "sigma": b"100.0", "streak": b"0", "phi": b"0.0", "pool": b"0.0",
        "n": b"3", "last_ts": b"", "tier": b"", "h_up": b"0.0", "h_down": b"0.0",
        "window": msgspec.msgpack.encode([]), "recent": msgspec.msgpack.encode([]), "ver": b"4",
    }  # fmt: skip
    for player, change in _CORRUPT_PLAYERS.items():
        key = keys.player(player)
        if change is None:
            client.set(key, b"not a hash")
        elif not change:
            client.hset(key, "ver", b"2")
        else:
            client.hset(key, mapping={**base, **change})


PARAMS = Params()
_SETTINGS = {
    "metrics_host": "127.0.0.1",
    "metrics_port": 0,
    "batch_size": 100,
    "backoff_max_s": 0.5,
}


def _metric(consumer: S.ThreadedConsumer, what: str) -> float:
    value = consumer.pipeline.metrics.registry.get_sample_value(
        "adr_corrupt_state_total", {"what": what}
    )
    return value or 0.0


def test_corrupt_players_cooldowns_snapshot_and_outbox_are_quarantined(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, consumer_config
) -> None:
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    good = S.events(1600, players=40, arenas=4, seed=21)
    corrupt_pair = next(
        (e.attacker, e.victim)
        for e in good
        if e.attacker not in _CORRUPT_PLAYERS and e.victim not in _CORRUPT_PLAYERS
    )
    _corrupt_players(client, keys)
    client.set(keys.cooldown(*corrupt_pair), b"xyz")
    client.xadd(keys.outbox, {"m": b"\xc1 not msgpack"})
    client.xadd(keys.outbox, {"other": b"no m field"})

    def rejected(e) -> bool:
        return (
            e.attacker in _CORRUPT_PLAYERS
            or e.victim in _CORRUPT_PLAYERS
            or (e.attacker, e.victim) == corrupt_pair
        )

    half = len(good) // 2
    S.produce(kafka_bootstrap, topic, S.encoded(good[:half]))
    consumer = S.start_threaded(consumer_config(redis_url, ns, topic, **_SETTINGS), PARAMS)
    try:
        S.wait_applied(client, keys, topic, {0: half}, 120, alive=consumer.thread.is_alive)
        # A new snapshot version that does not parse: the consumer keeps rating with SNAPSHOT.
        client.hset(keys.snapshot, mapping={"version": "2", "boundaries": "[1, 2"})
        S.produce(kafka_bootstrap, topic, S.encoded(good[half:]))
        S.wait_applied(client, keys, topic, {0: len(good)}, 120, alive=consumer.thread.is_alive)
        S.wait_outbox_empty(client, keys, 30)
        assert consumer.thread.is_alive()
        for what in ("player", "cooldown", "rating"):
            assert _metric(consumer, what) >= 1, what
        assert _metric(consumer, "snapshot") == 1  # once per published version
        assert _metric(consumer, "outbox") == 2
    finally:
        consumer.stop()

    quarantined = client.xrange(keys.outbox_quarantine)
    assert [sorted(f) for _id, f in quarantined] == [
        [b"entry", b"error", b"m"],
        [b"entry", b"error", b"other"],
    ]
    want_dead = [e for e in good if rejected(e)]
    assert want_dead, "the stream never touched a corrupt value"
    dead = S.read_topic(kafka_bootstrap, f"{topic}-dlq", expect=len(want_dead))
    assert [m.value() for m in dead] == [encode_kill_event(e) for e in want_dead]
    assert {dict(m.headers())["reason"] for m in dead} == {b"corrupt_state"}

    # Everything else applied exactly as the replay of the events that were not rejected.
    client.delete(*(keys.player(p) for p in _CORRUPT_PLAYERS))
    S.assert_as_replayed(client, keys, [e for e in good if not rejected(e)], PARAMS)
    client.close()


def test_corrupt_offsets_and_pop_stall_until_repaired_then_everything_applies(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, consumer_config
) -> None:
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    good = S.events(500, players=30, arenas=3, seed=22)
    client.hset(keys.offsets(topic), "0", b"zz")
    client.hset(keys.pop, mapping={"count": b"abc", "sigma_hi": b"0", "sigma_lo": b"0"})
    S.produce(kafka_bootstrap, topic, S.encoded(good))
    consumer = S.start_threaded(consumer_config(redis_url, ns, topic, **_SETTINGS), PARAMS)
    try:
        S.wait_until(lambda: _metric(consumer, "offsets") >= 2, 60, "offsets reported corrupt")
        assert consumer.thread.is_alive()
        assert not consumer.pipeline.metrics.ready()
        client.hdel(keys.offsets(topic), "0")  # the repair: nothing was applied yet
        S.wait_until(lambda: _metric(consumer, "pop") >= 2, 60, "pop reported corrupt")
        time.sleep(1)
        assert consumer.thread.is_alive()
        assert not client.hgetall(keys.offsets(topic))  # nothing applied meanwhile
        client.delete(keys.pop)
        S.wait_applied(client, keys, topic, {0: len(good)}, 120, alive=consumer.thread.is_alive)
        S.wait_until(consumer.pipeline.metrics.ready, 30, "ready again")
    finally:
        consumer.stop()
    S.assert_as_replayed(client, keys, good, PARAMS)
    client.close()


def test_the_tier_job_replaces_a_corrupt_snapshot_instead_of_failing_every_run(
    redis_url: str, unique_name
) -> None:
    """The tier job reads the previous snapshot each run: a corrupt one made every later run fail,
    so nothing could ever replace it. Now it publishes a fresh one over it, counted."""
    from redis_layout import decode_snapshot
    from tierjob import Calibrator
    from tierjob import Config as TierConfig
    from tierjob._metrics import Metrics as TierMetrics

    ns, keys, client = S.rating_pool(redis_url, unique_name)
    client.hset(
        keys.snapshot, mapping={"version": "7", "boundaries": "[1, 2", "mean_mu_active": "x"}
    )
    job = Calibrator(client, TierConfig(namespace=ns))
    result = job.run_once()
    assert result.outcome == "published" and result.version == 8
    assert result.corrupt_snapshot is not None
    found = decode_snapshot(client.hgetall(keys.snapshot))
    assert found is not None and found[0] == 8
    metrics = TierMetrics()
    metrics.observe(result)
    assert metrics.registry.get_sample_value("adr_corrupt_state_total", {"what": "snapshot"}) == 1
    # An unreadable version stops the run with the tier job's StateError (retried, logged).
    client.hset(keys.snapshot, "version", "not a number")
    client.hset(keys.snapshot, "boundaries", "[")
    try:
        job.run_once()
    except Exception as exc:
        assert type(exc).__name__ == "StateError"
    else:
        raise AssertionError("published over an unreadable version")
    client.close()


def test_keys_of_the_wrong_type_stall_or_quarantine_never_crash(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, consumer_config
) -> None:
    """`{ns}:lb` replaced by a string: the write script refuses before writing anything
    (WRONGTYPE) and the consumer waits until it is repaired. A cached player's hash replaced by
    a string mid-run: the write fails on it, the batch is read afresh and that player's events
    are dead-lettered."""
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    good = S.events(900, players=20, arenas=3, seed=23)
    client.set(keys.lb, b"not a zset")
    S.produce(kafka_bootstrap, topic, S.encoded(good[:300]))
    consumer = S.start_threaded(consumer_config(redis_url, ns, topic, **_SETTINGS), PARAMS)
    try:
        refused = consumer.pipeline.metrics.registry.get_sample_value
        S.wait_until(
            lambda: (refused("adr_redis_refused_total", {"code": "WRONGTYPE"}) or 0) >= 2,
            60,
            "the write refused over lb",
        )
        assert consumer.thread.is_alive() and not client.hgetall(keys.offsets(topic))
        client.delete(keys.lb)
        S.wait_applied(client, keys, topic, {0: 300}, 120, alive=consumer.thread.is_alive)
        victim = good[299].attacker  # in the state cache now
        client.delete(keys.player(victim))
        client.set(keys.player(victim), b"not a hash")
        S.produce(kafka_bootstrap, topic, S.encoded(good[300:]))
        S.wait_applied(client, keys, topic, {0: len(good)}, 120, alive=consumer.thread.is_alive)
        assert _metric(consumer, "player") >= 1
    finally:
        consumer.stop()
    later = [e for e in good[300:] if victim in (e.attacker, e.victim)]
    dead = S.read_topic(kafka_bootstrap, f"{topic}-dlq", expect=len(later))
    assert [m.value() for m in dead] == [encode_kill_event(e) for e in later]
    assert {dict(m.headers())["reason"] for m in dead} == {b"corrupt_state"}
    client.close()
