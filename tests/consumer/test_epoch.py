"""The pool epoch on a real Redis: the write script applies a batch only in the epoch it was
rated in, the raise goes above what is stored, and an epoch that is no integer stops the read."""

from __future__ import annotations

import time

import msgspec
import pytest
import redis

from consumer._batch import rate_batch
from consumer._epoch import PoolEpoch
from consumer._errors import CorruptState, RedisBehind
from consumer._intake import Accepted
from consumer._metrics import Metrics
from consumer._store import Store
from engine import Params
from redis_layout import Conflict, Keys
from schemas import RatingChange, decode_rating_change, kill_event

TOPIC = "kill-events"


@pytest.fixture
def pool(redis_url: str, unique_name):
    """(client, keys, params, and two instances' Stores) on a fresh namespace."""
    client = redis.Redis.from_url(redis_url)
    keys, params = Keys(unique_name("ns")), Params()
    yield client, keys, params, *(Store(client, keys, TOPIC, params) for _ in range(2))
    client.close()


def _event(i: int, a: str, b: str, ts: int) -> Accepted:
    return Accepted(0, 0, kill_event(id=f"e{i}", arena="x", attacker=a, victim=b, ts=ts))


def _outbox(client: redis.Redis, keys: Keys) -> list[RatingChange]:
    out = []
    for _id, fields in client.xrange(keys.outbox):
        out += [decode_rating_change(raw) for _player, raw in msgspec.msgpack.decode(fields[b"m"])]
    return out


def test_a_batch_rated_in_an_epoch_another_instance_left_conflicts_and_is_redone_in_the_new_one(
    pool,
) -> None:
    client, keys, params, mine, theirs = pool
    now = time.time_ns() // 1_000_000
    batch = [_event(1, "a", "b", now)]
    view = mine.read_view(["a", "b"], [keys.cooldown("a", "b")], [0])
    plan = rate_batch(batch, {0: 1}, view, keys, params)
    assert view.epoch == plan.epoch == 0
    raised = theirs.raise_epoch(now)  # another instance found Redis behind
    assert raised == now
    with pytest.raises(Conflict) as caught:
        mine.write(plan)
    assert caught.value.what == "epoch"
    assert client.hget(keys.offsets(TOPIC), "0") is None  # nothing of the batch was written
    view = mine.read_view(["a", "b"], [keys.cooldown("a", "b")], [0])
    redo = rate_batch(batch, {0: 1}, view, keys, params)
    mine.write(redo)
    assert [(c.epoch, c.seq) for c in _outbox(client, keys)] == [(now, 1), (now, 1)]


def test_the_raise_goes_above_the_stored_epoch_and_the_least_asked(pool) -> None:
    client, keys, _params, store, _theirs = pool
    assert store.raise_epoch(0) == 1  # nothing stored: 0 + 1
    client.set(keys.epoch, 500)
    assert store.raise_epoch(3) == 501
    assert store.raise_epoch(10**13) == 10**13  # a wall clock in ms beyond what is stored
    assert client.get(keys.epoch) == b"10000000000000"
    client.set(keys.epoch, "garbage")
    assert store.raise_epoch(7) == 7  # no integer: overwritten


def test_an_epoch_that_is_no_integer_stops_the_read(pool) -> None:
    client, keys, _params, store, _theirs = pool
    for bad in (b"x", b"-3", b"07"):
        client.set(keys.epoch, bad)
        with pytest.raises(CorruptState) as caught:
            store.read_view(["a"], [], [0])
        assert caught.value.what == "epoch"


def test_pool_epoch_remembers_the_highest_and_a_lower_read_is_redis_behind(
    redis_url: str, unique_name
) -> None:
    epoch = PoolEpoch(Metrics())
    epoch.observe(0)
    epoch.observe(42)
    epoch.observe(42)
    with pytest.raises(RedisBehind) as caught:
        epoch.observe(41)
    assert (caught.value.what, caught.value.stored, caught.value.confirmed) == ("epoch", 41, 42)
    client = redis.Redis.from_url(redis_url)
    store = Store(client, Keys(unique_name("ns")), TOPIC, Params())
    before = time.time_ns() // 1_000_000
    raised = epoch.raise_(store, "test")
    assert raised >= before and epoch.seen == raised  # the wall clock: above 42 + 1
    assert epoch.raise_(store, "test", least=raised + 10**6) == raised + 10**6
    client.close()
