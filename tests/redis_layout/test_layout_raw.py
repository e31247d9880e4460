"""The raw pipelined connection (redis_layout.raw) on a real Redis: error replies, and a script
call that survives Redis forgetting it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import hiredis
import pytest
import redis

from redis_layout import Conflict, Keys
from redis_layout.raw import PendingWrite, Sent, pipelined


def _pack(*args: object) -> bytes:
    packed: bytes = hiredis.pack_command(args)  # type: ignore[arg-type]
    return packed


def test_pipelined_answers_wrongtype_as_a_value_and_leaves_the_pool_usable(
    redis_client: redis.Redis, unique_name: Callable[..., str]
) -> None:
    keys = Keys(unique_name("raw"))
    redis_client.set(keys.lb, "not a zset")
    try:
        replies = pipelined(
            redis_client, [_pack("GET", keys.lb), _pack("ZCARD", keys.lb), _pack("PING")]
        )
        assert replies[0] == b"not a zset"
        assert isinstance(replies[1], redis.ResponseError) and "WRONGTYPE" in str(replies[1])
        assert replies[2] in (b"PONG", "PONG", True)
        assert pipelined(redis_client, [_pack("GET", keys.lb)]) == [b"not a zset"]
    finally:
        redis_client.delete(keys.lb)


@pytest.mark.parametrize(
    ("source", "conflict"), [("return {0}", False), ("return {1, 'player', KEYS[1]}", True)]
)
def test_a_pending_write_reloads_a_script_redis_forgot(
    redis_client: redis.Redis, source: str, conflict: bool
) -> None:
    redis_client.script_flush()
    sha = hashlib.sha1(source.encode()).hexdigest()
    pending = PendingWrite("plan", Sent(redis_client, source, [_pack("EVALSHA", sha, 1, "k")]))
    assert pending.plan == "plan"
    if conflict:
        with pytest.raises(Conflict) as caught:
            pending.result()
        assert caught.value.what == "player"
        assert str(caught.value) == "player k changed concurrently"
    else:
        assert pending.result() is None
    assert redis_client.script_exists(sha) == [True]
    assert redis_client.ping()  # the connection went back to the pool in a clean state
