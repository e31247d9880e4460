"""The real redis-server: hashes, sorted-set ranks and a Lua script round trip."""

from __future__ import annotations

from collections.abc import Callable

import redis

from redis_layout import Keys


def test_hash_and_sorted_set_ranks(
    redis_client: redis.Redis, unique_name: Callable[..., str]
) -> None:
    pool = Keys(unique_name("ns"))
    player = pool.player("alice")
    lb = pool.lb

    redis_client.hset(player, mapping={"mu": repr(1512.25), "sigma": repr(187.5), "n": 3})
    assert redis_client.hgetall(player) == {b"mu": b"1512.25", b"sigma": b"187.5", b"n": b"3"}
    mu = redis_client.hget(player, "mu")
    assert isinstance(mu, bytes) and float(mu) == 1512.25

    redis_client.zadd(lb, {"alice": 1512.25, "bob": 1490.0, "carol": 1600.5, "dave": 1490.0})
    assert redis_client.zrank(lb, "bob") == 0  # ties order by member, bytewise
    assert redis_client.zrank(lb, "dave") == 1
    assert redis_client.zrank(lb, "carol") == 3
    assert redis_client.zrevrank(lb, "carol") == 0
    assert redis_client.zrank(lb, "nobody") is None
    assert redis_client.zrevrange(lb, 0, 1, withscores=True) == [
        (b"carol", 1600.5),
        (b"alice", 1512.25),
    ]
    redis_client.zadd(lb, {"bob": 1700.0})
    assert redis_client.zrevrank(lb, "bob") == 0


# Compare-and-set on a version field, then move the player in the leaderboard: one atomic step,
# the shape the consumer's writes take.
_CAS_SCRIPT = """
local ver = redis.call('HGET', KEYS[1], 'ver') or '0'
if ver ~= ARGV[1] then return {0, ver} end
redis.call('HSET', KEYS[1], 'mu', ARGV[2], 'ver', tostring(tonumber(ver) + 1))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return {1, redis.call('ZREVRANK', KEYS[2], ARGV[3])}
"""


def test_lua_script_runs_atomically_with_compare_and_set(
    redis_client: redis.Redis, unique_name: Callable[..., str]
) -> None:
    pool = Keys(unique_name("ns"))
    keys = [pool.player("p1"), pool.lb]
    redis_client.zadd(keys[1], {"p0": 1550.0})
    script = redis_client.register_script(_CAS_SCRIPT)

    assert script(keys=keys, args=["0", repr(1500.5), "p1"]) == [1, 1]
    assert script(keys=keys, args=["0", repr(1600.0), "p1"]) == [0, b"1"]  # stale version
    assert script(keys=keys, args=["1", repr(1600.0), "p1"]) == [1, 0]
    assert redis_client.hgetall(keys[0]) == {b"mu": b"1600.0", b"ver": b"2"}
    assert redis_client.zscore(keys[1], "p1") == 1600.0
    # EVALSHA really used the server's script cache.
    assert redis_client.script_exists(script.sha) == [True]
