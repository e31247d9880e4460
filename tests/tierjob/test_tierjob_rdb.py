"""μ over A read from DUMP (tierjob._rdb) equals ZRANGE WITHSCORES exactly, on a real Redis; what
the reader does not know falls back to ZRANGE."""

from __future__ import annotations

import math
import random
import uuid

import pytest
import redis
from _tierjob_support import DAY_MS, T0, drop_namespace, expected_snapshot, player, write_players
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Params
from redis_layout import Keys
from tierjob import Calibrator, Config
from tierjob._rdb import zset_scores

_member = st.one_of(
    st.text(min_size=1, max_size=12),
    st.integers(-(2**40), 2**40).map(str),  # stored as RDB integers
    st.integers(1, 400).map(lambda n: "ab" * n),  # long and compressible: LZF
    st.binary(min_size=1, max_size=80),
)
_score = st.floats(allow_nan=False)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(members=st.dictionaries(_member, _score, min_size=140, max_size=260))
def test_dump_scores_equal_zrange_scores_bit_for_bit(redis_client: redis.Redis, members) -> None:  # type: ignore[no-untyped-def]
    key = f"{{tjr-{uuid.uuid4().hex[:8]}}}:z"
    redis_client.zadd(key, members)
    try:
        payload = redis_client.dump(key)
        want = [s for _, s in redis_client.zrange(key, 0, -1, withscores=True)]
        encoding = redis_client.object("encoding", key)
    finally:
        redis_client.delete(key)
    assert payload is not None
    got = zset_scores(payload)
    if encoding != b"skiplist":  # equal members collapsed below the listpack limit
        assert got is None
        return
    assert got is not None

    # ±0.0 compare equal: order them by sign too, so that repr() checks every bit.
    def canonical(xs: list[float]) -> list[str]:
        return [repr(x) for x in sorted(xs, key=lambda x: (x, math.copysign(1.0, x)))]

    assert canonical(got) == canonical(want)


def test_small_sets_and_damaged_payloads_are_left_to_zrange(redis_client: redis.Redis) -> None:
    key = f"{{tjr-{uuid.uuid4().hex[:8]}}}:z"
    redis_client.zadd(key, {f"m{i}": i / 3 for i in range(300)})
    try:
        payload = redis_client.dump(key)
    finally:
        redis_client.delete(key)
    assert payload is not None
    assert zset_scores(payload) is not None
    assert zset_scores(payload[:-11] + payload[-10:]) is None  # a byte missing
    assert zset_scores(payload[:40]) is None
    assert zset_scores(b"\x11" + payload[1:]) is None  # another type
    assert zset_scores(b"") is None
    redis_client.zadd(key, {"a": 1.0, "b": 2.0})
    try:
        tiny = redis_client.dump(key)
    finally:
        redis_client.delete(key)
    assert tiny is not None and zset_scores(tiny) is None  # listpack encoding


def test_without_dump_permission_the_job_reads_with_zrange(
    redis_client: redis.Redis, redis_url: str, unique_name
) -> None:  # type: ignore[no-untyped-def]
    params = Params()
    keys = Keys.of(unique_name("tjr"))
    rng = random.Random(41)
    players = {
        f"p{i}": player(
            params, rng.uniform(0, 4000), tuple(T0 - rng.randrange(DAY_MS) - j for j in range(5))
        )
        for i in range(200)
    }
    write_players(redis_client, keys, players, params)
    user, password = f"tj-nodump-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex
    redis_client.acl_setuser(
        user, enabled=True, passwords=[f"+{password}"], keys=["*"], commands=["+@all", "-dump"]
    )
    host = redis_client.connection_pool.connection_kwargs["host"]
    port = redis_client.connection_pool.connection_kwargs["port"]
    limited = redis.Redis(host=host, port=port, username=user, password=password)
    try:
        with pytest.raises(redis.exceptions.NoPermissionError):
            limited.dump(keys.active_mu)
        job = Calibrator(limited, Config(namespace=keys.namespace, params=params))
        first = job.run_once(T0)
        second = job.run_once(T0 + 1)
    finally:
        limited.close()
        redis_client.acl_deluser(user)
        drop_namespace(redis_client, keys)
    assert first.snapshot == expected_snapshot(players, T0, None, params)
    assert second.snapshot == expected_snapshot(players, T0 + 1, first.snapshot, params)
