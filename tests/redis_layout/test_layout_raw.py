"""The raw pipelined connection (redis_layout.raw) on a real Redis: error replies, a script call
that survives Redis forgetting it, and `read_replies` (replies taken from hiredis' buffer)
answering as redis-py's read_response does."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import hiredis
import pytest
import redis

from redis_layout import Conflict, Keys
from redis_layout.raw import (
    PendingWrite,
    Sent,
    pipelined,
    read_replies,
    read_reply,
    send_packed,
)


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


def test_read_replies_answers_as_read_reply_over_many_socket_reads(
    redis_client: redis.Redis, unique_name: Callable[..., str]
) -> None:
    """Thousands of replies (many recv calls, replies split across them), a WRONGTYPE among
    them: the same replies as one `read_reply` each, and the connection left clean."""
    keys = Keys(unique_name("raw"))
    players = [f"p{i}" for i in range(3000)]
    redis_client.hset(keys.player("p7"), mapping={"mu": "1.5", "sigma": "x" * 5000})
    redis_client.set(keys.player("p9"), "not a hash")
    commands = [_pack("HMGET", keys.player(p), "mu", "sigma", "ver") for p in players]
    commands += [_pack("MGET", *(keys.player(p) for p in players)), _pack("PING")]
    try:
        fast = pipelined(redis_client, commands)
        conn = redis_client.connection_pool.get_connection()
        try:
            send_packed(conn, commands)
            slow = [read_reply(conn) for _ in commands]
        finally:
            redis_client.connection_pool.release(conn)
        assert len(fast) == len(slow) == len(commands)
        assert [str(r) if isinstance(r, Exception) else r for r in fast] == [
            str(r) if isinstance(r, Exception) else r for r in slow
        ]
        assert fast[7] == [b"1.5", b"x" * 5000, None]
        assert isinstance(fast[9], redis.ResponseError) and "WRONGTYPE" in str(fast[9])
        assert fast[-1] in (b"PONG", "PONG", True)
        assert redis_client.ping()
    finally:
        redis_client.delete(keys.player("p7"), keys.player("p9"))


def test_read_replies_raises_an_error_reply_and_closes_the_connection(
    redis_client: redis.Redis,
) -> None:
    """A refusal (not WRONGTYPE) is raised, like read_reply's, and the connection, with replies
    left unread on it, is closed; the pool then hands out a clean one."""
    conn = redis_client.connection_pool.get_connection()
    try:
        send_packed(conn, [_pack("PING"), _pack("NOSUCHCOMMAND"), _pack("PING")])
        with pytest.raises(redis.ResponseError, match="unknown command"):
            read_replies(conn, 3)
        assert conn._sock is None
    finally:
        redis_client.connection_pool.release(conn)
    assert redis_client.ping()


def test_read_replies_hands_push_messages_to_the_parser_and_skips_them(
    redis_client: redis.Redis, unique_name: Callable[..., str]
) -> None:
    """RESP3: an invalidation push (client tracking: the connection changes a key it read)
    arriving among buffered replies goes to the parser's push handler, as redis-py does, and
    is not taken for a reply."""
    conn = redis_client.connection_pool.get_connection()
    key = unique_name("raw")
    pushed: list[object] = []
    try:
        if conn.protocol not in (3, "3"):
            pytest.skip("RESP2 connection: no push messages")
        conn._parser.invalidation_push_handler_func = pushed.append
        redis_client.set(key, "1")
        send_packed(conn, [_pack("CLIENT", "TRACKING", "ON"), _pack("GET", key)])
        assert read_replies(conn, 2)[1] == b"1"
        send_packed(conn, [_pack("PING"), _pack("SET", key, "2"), _pack("GET", key)])
        replies = read_replies(conn, 3)
        assert replies[0] in (b"PONG", "PONG", True)
        assert replies[1] in (b"OK", "OK", True) and replies[2] == b"2"
        assert pushed and pushed[0][0] in (b"invalidate", "invalidate")
    finally:
        conn.disconnect()
        redis_client.connection_pool.release(conn)
        redis_client.delete(key)
