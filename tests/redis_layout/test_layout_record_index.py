"""The event-time index of the cooldown and event-id records (redis_layout/scripts/apply.lua,
sections 5, 9 and 10), driven through the real write script on a real Redis.

The rule it keeps is the one of the zset index it replaced (`{ns}:cd_due`, member = key, score =
its last written ts): a record goes once its last written ts <= the horizon, the horizon rounded
down to the last ms of a bucket of DUE_BUCKET_MS. `_OldRule` is that zset rule in pure Python.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redis_layout import Keys, scripts
from redis_layout.keys import DUE_BUCKET_MS, due_bucket_end

B = DUE_BUCKET_MS
T0 = 1_764_680_400_000 // B * B  # a bucket's first ms
LIMIT = 1000  # entries a call sweeps beyond the records it writes


def _call(
    client: redis.Redis,
    keys: Keys,
    horizon: int,
    cooldowns: Sequence[tuple[str, int]] = (),
    ids: Sequence[tuple[str, str, int]] = (),
    bucket_ms: int = B,
) -> list[object]:
    """The write script with only cooldown and event-id records, horizon = its floor (no
    watermarks, keep 0): what Store._write_command sends for such a batch."""
    prefixes = [keys.cooldown_bucket_prefix, keys.event_id_bucket_prefix, keys.cooldown_prefix]
    sections: list[list[object]] = [
        *([], [], [], ["0", "0", "0"]),
        [x for pair in cooldowns for x in pair],
        *([], [], []),
        [0, horizon, bucket_ms, *prefixes],
        [x for record in ids for x in record],
        ["0"],
        ["0", "0", "0"],
    ]
    names = (keys.offsets("t"), keys.outbox, keys.lb, keys.activity, keys.pop,
             keys.tier_counts, keys.watermarks("t"), keys.cooldown_due,
             keys.due_buckets, keys.epoch, keys.season_schedule)  # fmt: skip
    args: list[object] = [keys.player(""), *(len(s) for s in sections)]
    for s in sections:
        args += s
    reply: list[object] = client.eval(scripts.APPLY, len(names), *names, *args)  # type: ignore[arg-type,no-untyped-call]
    return reply


def _rounded(horizon: int) -> int:
    return (horizon + 1) // B * B - 1


@dataclass
class _OldRule:
    """The cooldown_due zset's rule: record values, their scores, deleted at score <= horizon."""

    values: dict[str, str] = field(default_factory=dict)
    score: dict[str, int] = field(default_factory=dict)

    def call(self, horizon: int, cooldowns: Sequence[tuple[str, int]],
             ids: Sequence[tuple[str, str, int]]) -> str | None:  # fmt: skip
        """The call's effect; the event-id key that conflicts (nothing written), if one does."""
        for key, _digest, _ts in ids:
            if key in self.values:
                return key
        for key, ts in cooldowns:
            self.values[key], self.score[key] = str(ts), ts
        for key, digest, ts in ids:
            self.values[key], self.score[key] = digest, ts
        cut = _rounded(horizon)
        for key in [k for k, ts in self.score.items() if ts <= cut]:
            del self.values[key], self.score[key]
        return None


def _records(client: redis.Redis, keys: Keys) -> dict[str, str]:
    found = {}
    for raw in client.scan_iter(match=keys.match_all, count=1000):
        key = raw.decode()
        if key.startswith((keys.cooldown_prefix, keys.event_id(""))):
            found[key] = client.get(key).decode()  # type: ignore[union-attr]
    return found


def _index_keys(client: redis.Redis, keys: Keys) -> set[str]:
    """The index's own keys left in Redis (bucket lists, registry, the old zset)."""
    out = set()
    for raw in client.scan_iter(match=keys.match_all, count=1000):
        key = raw.decode()
        if not key.startswith((keys.cooldown_prefix, keys.event_id(""))):
            out.add(key)
    return out - {keys.pop}


@pytest.fixture
def pool(redis_client: redis.Redis) -> Iterator[Keys]:
    keys = Keys(f"idx-{uuid.uuid4().hex[:8]}")
    yield keys
    _drop(redis_client, keys)


def _drop(client: redis.Redis, keys: Keys) -> None:
    for raw in list(client.scan_iter(match=keys.match_all, count=1000)):
        client.delete(raw)


def _times(first: int, last: int) -> st.SearchStrategy[int]:
    """Times from bucket `first` to bucket `last`, often at a bucket's edge."""
    edge = st.builds(lambda b, at: T0 + b * B + at, st.integers(first, last),
                     st.sampled_from([0, 1, B // 2, B - 2, B - 1]))  # fmt: skip
    return st.one_of(st.integers(T0 + first * B, T0 + last * B + B - 1), edge)


_step = st.tuples(
    _times(-1, 8),  # horizon: moves back and forth
    st.lists(st.tuples(st.integers(0, 3), _times(0, 7)), max_size=6),  # rewrites included
    st.lists(st.tuples(st.integers(0, 3), _times(0, 7)), max_size=3, unique_by=lambda x: x[0]),
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_step, min_size=1, max_size=16))
def test_the_sweep_deletes_what_the_zset_rule_deleted(
    redis_client: redis.Redis, steps: list[tuple[int, list[tuple[int, int]], list[tuple[int, int]]]]
) -> None:
    keys = Keys(f"idx-{uuid.uuid4().hex[:8]}")
    model = _OldRule()
    universe = [keys.cooldown(f"a{i}", "v") for i in range(4)]
    universe += [keys.event_id(f"e{i}") for i in range(4)]
    ends = [T0 + b * B - 1 for b in range(1, 9)]
    index = [keys.due_buckets, *map(keys.cooldown_bucket, ends), *map(keys.event_id_bucket, ends)]
    try:
        for horizon, cds, eids in steps:
            cooldowns = [(keys.cooldown(f"a{i}", "v"), ts) for i, ts in cds]
            ids = [(keys.event_id(f"e{i}"), f"{ts:016x}", ts) for i, ts in eids]
            conflict = model.call(horizon, cooldowns, ids)
            reply = _call(redis_client, keys, horizon, cooldowns, ids)
            if conflict is None:
                assert reply == [0]
            else:
                assert reply[0] == 1 and reply[1] == b"event_id", reply
            values = zip(universe, redis_client.mget(universe), strict=True)
            assert {k: v.decode() for k, v in values if v} == model.values
        # Past every record: all of them and all of the index go.
        _call(redis_client, keys, T0 + 9 * B - 1)
        assert redis_client.exists(*universe, *index) == 0
    finally:
        redis_client.delete(*universe, *index)


def test_a_rewritten_cooldown_stays_until_its_newest_bucket_passes(
    redis_client: redis.Redis, pool: Keys
) -> None:
    pair = pool.cooldown("a", "b")
    _call(redis_client, pool, 0, [(pair, T0 + 5)])
    _call(redis_client, pool, 0, [(pair, T0 + 3 * B)])  # in two buckets now
    assert redis_client.lrange(pool.cooldown_bucket(due_bucket_end(T0)), 0, -1) == [pair.encode()]
    _call(redis_client, pool, T0 + 2 * B)  # sweeps the first: the key's value is after it
    assert redis_client.get(pair) == str(T0 + 3 * B).encode()
    assert not redis_client.exists(pool.cooldown_bucket(due_bucket_end(T0)))
    _call(redis_client, pool, T0 + 3 * B + 5)  # the horizon is inside its bucket: rounded down
    assert redis_client.get(pair) is not None
    _call(redis_client, pool, T0 + 4 * B - 1)
    assert redis_client.get(pair) is None
    assert _index_keys(redis_client, pool) == set()


def test_a_call_sweeps_at_most_1000_entries_beyond_what_it_writes(
    redis_client: redis.Redis, pool: Keys
) -> None:
    n = 2600
    # old ts in several buckets, written with the horizon far before them
    cooldowns = [(pool.cooldown(f"a{i}", "v"), T0 + i * 7) for i in range(n)]
    assert _call(redis_client, pool, 0, cooldowns) == [0]
    assert len(_records(redis_client, pool)) == n
    # a call writing 5 new records (not due) may take 1005 index entries
    fresh = [(pool.cooldown(f"f{i}", "v"), T0 + 100 * B) for i in range(5)]
    _call(redis_client, pool, T0 + 50 * B, fresh)
    assert len(_records(redis_client, pool)) == n + 5 - 1005
    # oldest bucket first: the second one is still whole
    left = [int(v) for v in _records(redis_client, pool).values()]
    assert len([ts for ts in left if T0 + B <= ts < T0 + 2 * B]) == len(range(1429, n))
    _call(redis_client, pool, T0 + 50 * B)
    assert len(_records(redis_client, pool)) == n + 5 - 2005
    _call(redis_client, pool, T0 + 50 * B)
    assert len(_records(redis_client, pool)) == 5


def _legacy(client: redis.Redis, keys: Keys, records: dict[str, tuple[str, int]]) -> None:
    """What the write script of earlier releases left: each record and its cd_due entry."""
    for key, (value, ts) in records.items():
        client.set(key, value)
        client.zadd(keys.cooldown_due, {key: ts})


def test_the_zset_of_earlier_releases_drains_by_the_same_rule(
    redis_client: redis.Redis, pool: Keys
) -> None:
    old_pair, kept_pair, renewed = (pool.cooldown(a, "v") for a in ("old", "kept", "renewed"))
    old_id, kept_id = pool.event_id("old"), pool.event_id("kept")
    digest = "1234567890123456"  # all decimal: still an event id, deleted by its entry's ts
    _legacy(redis_client, pool, {
        old_pair: (str(T0), T0), kept_pair: (str(T0 + 5 * B), T0 + 5 * B),
        renewed: (str(T0 + 1), T0 + 1), old_id: (digest, T0 + 2), kept_id: (digest, T0 + 6 * B),
    })  # fmt: skip
    # an upgraded instance counts `renewed` again: its stale zset entry goes, so that an instance
    # of the earlier release (a rolling upgrade), sweeping by the zset, does not delete it early
    assert _call(redis_client, pool, 0, [(renewed, T0 + 8 * B)]) == [0]
    assert redis_client.zscore(pool.cooldown_due, renewed) is None
    redis_client.zadd(pool.cooldown_due, {renewed: T0 + 1})  # as if it were still there
    _call(redis_client, pool, T0 + 2 * B)
    assert set(_records(redis_client, pool)) == {kept_pair, renewed, kept_id}
    assert redis_client.get(renewed) == str(T0 + 8 * B).encode()
    assert redis_client.zcard(pool.cooldown_due) == 2  # the kept ones
    _call(redis_client, pool, T0 + 7 * B)
    assert set(_records(redis_client, pool)) == {renewed}
    assert not redis_client.exists(pool.cooldown_due)  # drained: gone
    _call(redis_client, pool, T0 + 9 * B)
    assert _records(redis_client, pool) == {}
    assert _index_keys(redis_client, pool) == set()


def test_the_old_zset_drains_within_the_same_limit(redis_client: redis.Redis, pool: Keys) -> None:
    _legacy(redis_client, pool, {pool.event_id(f"e{i}"): ("x", T0 + i) for i in range(700)})
    cooldowns = [(pool.cooldown(f"a{i}", "v"), T0 + i) for i in range(700)]
    _call(redis_client, pool, 0, cooldowns)
    _call(redis_client, pool, T0 + B)  # 1000: the 700 old ones first, then 300 of the buckets
    assert not redis_client.exists(pool.cooldown_due)
    assert len(_records(redis_client, pool)) == 400
    _call(redis_client, pool, T0 + B)
    assert _records(redis_client, pool) == {} and _index_keys(redis_client, pool) == set()


def test_another_type_in_a_bucket_the_batch_writes_writes_nothing(
    redis_client: redis.Redis, pool: Keys
) -> None:
    pair = pool.cooldown("a", "b")
    redis_client.hset(pool.cooldown_bucket(due_bucket_end(T0)), "x", "1")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        _call(redis_client, pool, 0, [(pair, T0)], [(pool.event_id("e"), "d", T0)])
    redis_client.set(pool.due_buckets, "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        _call(redis_client, pool, 0, [(pool.cooldown("c", "d"), T0 + 3 * B)])
    assert _records(redis_client, pool) == {}
    assert _index_keys(redis_client, pool) == {
        pool.cooldown_bucket(due_bucket_end(T0)),
        pool.due_buckets,
    }


def test_the_sweep_passes_over_keys_of_another_type(redis_client: redis.Redis, pool: Keys) -> None:
    """Records of another type or value are deleted as the zset sweep did; a bucket of another
    type is dropped from the registry; the batch's writes all happen."""
    hash_pair, text_pair, good = (pool.cooldown(a, "v") for a in ("h", "t", "g"))
    hash_id = pool.event_id("h")
    _call(redis_client, pool, 0, [(hash_pair, T0), (text_pair, T0), (good, T0 + 3 * B)],
          [(hash_id, "d", T0)])  # fmt: skip
    redis_client.delete(hash_pair, hash_id)
    redis_client.hset(hash_pair, "x", "1")
    redis_client.rpush(hash_id, "x")
    redis_client.set(text_pair, "not a ts")
    broken = pool.event_id_bucket(due_bucket_end(T0 + B))
    redis_client.zadd(pool.due_buckets, {str(due_bucket_end(T0 + B)): due_bucket_end(T0 + B)})
    redis_client.hset(broken, "x", "1")
    new = pool.cooldown("n", "v")
    assert _call(redis_client, pool, T0 + 2 * B, [(new, T0 + 5 * B)]) == [0]
    assert set(_records(redis_client, pool)) == {good, new}
    assert not redis_client.exists(hash_pair, hash_id, text_pair)
    assert redis_client.zscore(pool.due_buckets, str(due_bucket_end(T0 + B))) is None
    assert redis_client.type(broken) == b"hash"  # not the index's to delete


def test_writers_of_another_bucket_width_delete_nothing_early(
    redis_client: redis.Redis, pool: Keys
) -> None:
    """During a rolling change of DUE_BUCKET_MS: buckets are named by their end, so a record is
    swept only once a bucket that holds it has ended before the horizon."""
    pair, eid = pool.cooldown("a", "b"), pool.event_id("e")
    _call(redis_client, pool, 0, [(pair, T0 + 1)], [(eid, "d", T0 + 1)], bucket_ms=60_000)
    _call(redis_client, pool, T0 + B, bucket_ms=B)  # its 10 s bucket would have passed
    assert set(_records(redis_client, pool)) == {pair, eid}
    _call(redis_client, pool, T0 + 59_999, bucket_ms=B)  # T0 starts a minute too
    assert _records(redis_client, pool) == {}
