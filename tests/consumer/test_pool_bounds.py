"""A flood of new player ids grows the pool only up to `max_players`: events that would add players
beyond it go to the dead-letter topic (`pool_full`), counted, and the rest is rated as if they
had never been sent."""

from __future__ import annotations

import consumer_support as S
from hypothesis import given, settings
from hypothesis import strategies as st

from consumer._batch import View, rate_batch
from consumer._intake import Accepted
from consumer.config import Config
from engine import Params, initial_snapshot
from redis_layout import Keys
from schemas import KillEvent, encode_kill_event, kill_event

MAX_PLAYERS = 50


def _stream() -> list[KillEvent]:
    """Regular play among 40 players, a flood of 400 events naming new ids in the middle, each in
    a new arena (every fourth one kills a new id with a known attacker: it adds one player, not
    two), then regular play again."""
    base = S.events(600, players=40, arenas=5, seed=3)
    at = base[300].ts
    flood = [
        kill_event(
            id=f"flood-{i}",
            arena=f"flood-arena-{i}",
            attacker="p1" if i % 4 == 0 else f"new-{i}-a",
            victim=f"new-{i}-b",
            ts=at,
        )
        for i in range(400)
    ]
    return base[:300] + flood + base[300:]


def _refusals(events: list[KillEvent]) -> list[KillEvent]:
    """What one consumer refuses: events that would add players beyond MAX_PLAYERS."""
    known: set[str] = set()
    refused = []
    for e in events:
        new = {e.attacker, e.victim} - known
        if len(known) + len(new) > MAX_PLAYERS:
            refused.append(e)
        else:
            known |= new
    return refused


def test_a_flood_of_new_ids_stops_at_max_players_and_dead_letters_the_rest(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    params = Params()
    events = _stream()
    refused = _refusals(events)
    assert 300 < len(refused) < 400  # the flood fills the pool, then is refused
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    config = Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=unique_name("g"), rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
        batch_size=100, max_players=MAX_PLAYERS,
    )  # fmt: skip
    consumer = S.start_threaded(config, params)
    try:
        S.wait_applied(client, keys, topic, {0: len(events)}, 120, alive=consumer.thread.is_alive)
        metrics = consumer.pipeline.metrics
        assert metrics.dead_lettered.labels("pool_full")._value.get() == len(refused)
        assert metrics.pool_players._value.get() == MAX_PLAYERS
        assert metrics.pool_max_players._value.get() == MAX_PLAYERS
    finally:
        consumer.stop()

    # The pool holds exactly MAX_PLAYERS hashes, and the state of the events it took.
    assert int(client.hget(keys.pop, "count") or 0) == MAX_PLAYERS
    refused_ids = {e.id for e in refused}
    book = S.replay([e for e in events if e.id not in refused_ids], params, S.SNAPSHOT)
    S.assert_redis_equals_replay(client, keys, book, params, exact=True)
    assert len(list(client.scan_iter(match=keys.match_players, count=1000))) == MAX_PLAYERS
    # Redis holds players, cooldown pairs and counted ids (each indexed for the event-time sweep)
    # and the pool's fixed keys: nothing per arena.
    fixed = {keys.lb, keys.activity, keys.pop, keys.outbox, keys.snapshot,
             keys.tier_counts, keys.offsets(topic), keys.watermarks(topic),
             keys.due_buckets, keys.layout, keys.model}  # fmt: skip
    buckets = [int(e) for e in client.zrange(keys.due_buckets, 0, -1)]
    swept = {m.decode() for e in buckets for bucket in (keys.cooldown_bucket(e),
             keys.event_id_bucket(e)) for m in client.lrange(bucket, 0, -1)}  # fmt: skip
    for raw in client.scan_iter(match=keys.match_all, count=1000):
        key = raw.decode()
        assert "arena" not in key, key
        if key.startswith(keys.cooldown_prefix) or key.startswith(keys.event_id("")):
            assert key in swept, key
        elif key.startswith((keys.cooldown_bucket_prefix, keys.event_id_bucket_prefix)):
            assert int(key.rpartition(":")[2]) in buckets, key
        else:
            assert key in fixed or key.startswith(keys.player("")), key
    # The regular play after the flood was still rated.
    late = {e.id for e in events[700:]}
    assert late & set(book.counted_ids)  # type: ignore[attr-defined]

    dead = S.read_topic(kafka_bootstrap, f"{topic}-dlq", expect=len(refused))
    assert sorted(m.value() for m in dead) == sorted(encode_kill_event(e) for e in refused)
    assert {dict(m.headers())["reason"] for m in dead} == {b"pool_full"}
    client.close()


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=60),
    st.integers(1, 20),
    st.sets(st.integers(0, 59)),
)
def test_rate_batch_never_grows_the_pool_past_max_players(
    pairs: list[tuple[int, int]], max_players: int, refused_before: set[int]
) -> None:
    """Pure: P after the plan <= max_players; an event refused by an earlier attempt stays refused;
    every event is counted, a duplicate, or refused."""
    params, keys = Params(), Keys("ns")
    events = [
        Accepted(0, i, kill_event(id=f"e{i}", arena="a", attacker=f"p{a}", victim=f"p{b}",
                                  ts=1_000_000 + i * 100_000))
        for i, (a, b) in enumerate(pairs)
        if a != b
    ]  # fmt: skip
    players = {p: (None, 0) for e in events for p in (e.event.attacker, e.event.victim)}
    view = View(players, {}, 0, 0, {0: None}, initial_snapshot(params))  # type: ignore[arg-type]
    before = {(0, o) for o in refused_before}
    plan = rate_batch(
        events, {0: len(pairs)}, view, keys, params, max_players=max_players, refused=before
    )
    assert plan.player_count == len(plan.states) <= max_players
    refused = {(a.partition, a.offset) for a in plan.pool_full}
    assert {(0, e.offset) for e in events} & before <= refused
    assert plan.counted + plan.duplicates + len(refused) == len(events)
