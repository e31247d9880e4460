"""The atomic write's compare-and-set: a concurrent change of a player, a pair's cooldown or a
partition's offset is detected, nothing is written, and the recomputed batch loses no update."""

from __future__ import annotations

import time

import consumer_support as S
import hiredis
import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from consumer._batch import rate_batch
from consumer._intake import Accepted
from consumer._store import Store
from consumer._view import StateCache, read_player_command
from engine import Params, RatingBook, initial_snapshot
from redis_layout import Conflict, Keys
from redis_layout.player_codec import FIELDS, READ_FIELDS, decode_player, encode_player_v1
from schemas import kill_event

TOPIC = "kill-events"


def _event(i: int, a: str, b: str, ts: int, partition: int = 0, offset: int = 0) -> Accepted:
    e = kill_event(id=f"e{i}", arena="x", attacker=a, victim=b, ts=ts)
    return Accepted(partition, offset, e)


def _apply(store: Store, keys: Keys, params: Params, batch: list[Accepted]) -> None:
    """What Pipeline does: read, rate, write; on Conflict re-read and recompute."""
    ends = {}
    for item in batch:
        ends[item.partition] = item.offset + 1
    players = list(dict.fromkeys(p for x in batch for p in (x.event.attacker, x.event.victim)))
    pairs = list(dict.fromkeys(keys.cooldown(x.event.attacker, x.event.victim) for x in batch))
    while True:
        view = store.read_view(players, pairs, list(ends))
        plan = rate_batch(batch, ends, view, keys, params)
        try:
            store.write(plan)
            return
        except Conflict:
            continue


@pytest.fixture
def pool(redis_url: str, unique_name):
    client = redis.Redis.from_url(redis_url)
    keys = Keys(unique_name("ns"))
    params = Params()
    yield (
        client,
        keys,
        params,
        Store(client, keys, TOPIC, params),
        Store(client, keys, TOPIC, params),
    )
    client.close()


def test_a_player_changed_by_another_instance_is_detected_and_the_batch_redone(pool) -> None:
    client, keys, params, mine, theirs = pool
    now = time.time_ns() // 1_000_000
    batch = [_event(1, "a", "b", now, partition=0, offset=0)]
    view = mine.read_view(["a", "b"], [keys.cooldown("a", "b")], [0])
    plan = rate_batch(batch, {0: 1}, view, keys, params)
    # Meanwhile another instance (another partition, shared player a) applies a→c.
    _apply(theirs, keys, params, [_event(2, "a", "c", now + 1, partition=1, offset=0)])
    with pytest.raises(Conflict) as caught:
        mine.write(plan)
    assert caught.value.what == "player"
    assert client.hget(keys.offsets(TOPIC), "0") is None  # nothing of the batch was written
    _apply(mine, keys, params, batch)
    # Both updates of a are there: nothing lost; the state is the sequential one.
    book = RatingBook(params, fixed_snapshot=initial_snapshot(params))
    book.apply("e2", "a", "c", now + 1)
    book.apply("e1", "a", "b", now)
    a = client.hgetall(keys.player("a"))
    assert int(a[b"n"]) == 2 and int(a[b"ver"]) == 2
    assert float(a[b"mu"]) == book.player("a").mu


def test_the_same_pair_counted_by_two_instances_counts_once(pool) -> None:
    client, keys, params, mine, theirs = pool
    now = time.time_ns() // 1_000_000
    view = mine.read_view(["a", "b"], [keys.cooldown("a", "b")], [0])
    plan = rate_batch([_event(1, "a", "b", now)], {0: 1}, view, keys, params)
    # Another instance counts a→b 5 s later from another partition (same pair, other arena).
    _apply(theirs, keys, params, [_event(2, "a", "b", now + 5_000, partition=1)])
    with pytest.raises(Conflict):
        mine.write(plan)
    _apply(mine, keys, params, [_event(1, "a", "b", now)])  # now a duplicate (§2.1)
    assert int(client.hget(keys.player("a"), "n")) == 1
    assert int(client.hget(keys.offsets(TOPIC), "0")) == 1  # but its offset moved on
    assert int(client.get(keys.cooldown("a", "b"))) == now + 5_000


def test_a_zombie_instance_cannot_apply_a_partition_twice(pool) -> None:
    client, keys, params, zombie, owner = pool
    now = time.time_ns() // 1_000_000
    batch = [_event(i, "a", f"v{i}", now + i, offset=i) for i in range(3)]
    players = ["a", "v0", "v1", "v2"]
    pairs = [keys.cooldown("a", f"v{i}") for i in range(3)]
    view = zombie.read_view(players, pairs, [0])
    plan = rate_batch(batch, {0: 3}, view, keys, params)
    _apply(owner, keys, params, batch)  # the new owner after a rebalance
    with pytest.raises(Conflict):
        zombie.write(plan)
    view = zombie.read_view(players, pairs, [0])
    redo = rate_batch(batch, {0: 3}, view, keys, params)
    assert redo.already_applied == 3 and redo.counted == 0 and not redo.outbox
    zombie.write(redo)
    assert int(client.hget(keys.player("a"), "n")) == 3
    assert client.xlen(keys.outbox) == 1  # one batch's rating changes, once


def test_a_stale_cached_player_costs_a_conflict_never_an_update(pool) -> None:
    client, keys, params, mine, theirs = pool
    now = time.time_ns() // 1_000_000
    first = [_event(1, "a", "b", now, offset=0)]
    view = mine.read_view(["a", "b"], [keys.cooldown("a", "b")], [0])
    plan = rate_batch(first, {0: 1}, view, keys, params)
    mine.write(plan)
    cache = StateCache(10)
    cache.store(plan.states)  # what Pipeline keeps after a successful write
    assert {p: ver for p, (_s, ver) in cache.entries.items()} == {"a": 1, "b": 1}
    # Another instance moves a on; my cached a (ver 1) is now stale.
    _apply(theirs, keys, params, [_event(2, "a", "c", now + 1, partition=1)])
    second = [_event(3, "a", "d", now + 2, offset=1)]
    pairs = [keys.cooldown("a", "d")]
    view = mine.read_view(["a", "d"], pairs, [0], cache.entries)
    assert view.players["a"] == cache.entries["a"]  # not read: taken from the cache
    with pytest.raises(Conflict):
        mine.write(rate_batch(second, {0: 2}, view, keys, params))
    cache.forget(["a", "d"])
    view = mine.read_view(["a", "d"], pairs, [0], cache.entries)
    mine.write(rate_batch(second, {0: 2}, view, keys, params))
    book = RatingBook(params, fixed_snapshot=initial_snapshot(params))
    for e in (first[0], _event(2, "a", "c", now + 1), second[0]):
        book.apply(e.event.id, e.event.attacker, e.event.victim, e.event.ts)
    a = client.hgetall(keys.player("a"))
    assert int(a[b"n"]) == 3 and int(a[b"ver"]) == 3
    assert float(a[b"mu"]) == book.player("a").mu


def test_ranks_and_activity_follow_the_written_hashes(pool) -> None:
    client, keys, _params, _mine, _theirs = pool
    params = Params.from_overrides({"n_min": "2", "n_active": "2", "sigma_place": "400"})
    S.publish_snapshot(client, keys, S.SNAPSHOT)  # boundaries, so that a can be placed
    mine = Store(client, keys, TOPIC, params)
    client.set(keys.active_mu, "planted")  # earlier releases' key, of any type: not written now
    now = time.time_ns() // 1_000_000
    batch = [_event(i, "a", f"v{i}", now + i * 61_000, offset=i) for i in range(3)]
    players = ["a", "v0", "v1", "v2"]
    view = mine.read_view(players, [keys.cooldown("a", f"v{i}") for i in range(3)], [0])
    plan = rate_batch(batch, {0: 3}, view, keys, params)
    mine.write(plan)
    a = client.hgetall(keys.player("a"))
    assert a[b"tier"] != b""  # placed after n_min events
    assert client.zscore(keys.lb, "a") == float(a[b"mu"])
    assert client.zscore(keys.activity, "a") == now + 61_000  # its 2nd latest counted event
    assert client.get(keys.active_mu) == b"planted"
    assert client.zscore(keys.lb, "v0") is None  # one event: unplaced, no activity time yet
    assert client.zscore(keys.activity, "v0") is None


def test_a_layout_1_hash_is_read_and_rewritten_in_layout_2(pool) -> None:
    """A hash written before layout 2 (one field per state item) rates as before, and the
    batch's write leaves it in layout 2 with the same state as a pool that never held layout 1."""
    client, keys, params, mine, _ = pool
    old_keys = Keys(keys.namespace + "v1")
    old = Store(client, old_keys, TOPIC, params)
    now = time.time_ns() // 1_000_000
    first = [_event(0, "a", "b", now - 120_000), _event(1, "a", "c", now - 60_000, offset=1)]
    _apply(mine, keys, params, first)
    _apply(old, old_keys, params, first)
    for player in ("a", "b", "c"):  # old_keys' hashes back to layout 1
        name = old_keys.player(player)
        decoded = decode_player(client.hmget(name, READ_FIELDS))
        assert decoded is not None
        client.delete(name)
        client.hset(name, items=encode_player_v1(*decoded))
    later = [_event(2, "a", "b", now, offset=2)]
    _apply(mine, keys, params, later)
    _apply(old, old_keys, params, later)
    for player in ("a", "b"):
        got, want = client.hgetall(old_keys.player(player)), client.hgetall(keys.player(player))
        assert sorted(got) == sorted(f.encode() for f in FIELDS)
        assert got == want  # byte for byte
    assert client.hmget(old_keys.player("c"), "mu", "streak") == [
        client.hget(keys.player("c"), "mu"),
        b"0",
    ]  # a player the batch did not change keeps its layout-1 hash
    client.delete(*client.keys(old_keys.match_all))


@given(st.text(max_size=200))
def test_a_players_read_is_packed_as_hiredis_packs_it(player: str) -> None:
    """The read's HMGET, its key set into a command packed once, is byte for byte hiredis'."""
    key = Keys("ns{x}").player(player)
    assert read_player_command(key) == hiredis.pack_command(("HMGET", key, *READ_FIELDS))
