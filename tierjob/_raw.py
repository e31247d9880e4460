"""A MULTI/EXEC read that skips redis-py's reply callbacks.

redis-py (RESP3 by default since 8.x) turns a ZRANGE WITHSCORES reply back into RESP2-style
pairs by formatting every score to bytes: seconds for 200,000 members. The job wants the scores
as floats, which hiredis already parsed, so it reads the replies raw, from one pooled connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis


def transaction(client: redis.Redis, commands: Sequence[Sequence[Any]]) -> list[Any]:
    """Run `commands` in MULTI/EXEC and return their raw replies (errors raised)."""
    pool = client.connection_pool
    try:
        conn = pool.get_connection()
    except TypeError:  # redis-py < 6 wants a command name
        conn = pool.get_connection("MULTI")
    try:
        packed = conn.pack_commands([("MULTI",), *commands, ("EXEC",)])  # type: ignore[no-untyped-call]
        conn.send_packed_command(packed)  # type: ignore[no-untyped-call]
        conn.read_response()
        for _ in commands:
            conn.read_response()
        replies = conn.read_response()
    except BaseException:
        conn.disconnect()  # type: ignore[no-untyped-call]  # no half-read reply left behind
        raise
    finally:
        pool.release(conn)
    if replies is None:
        raise redis.ResponseError("transaction aborted")
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return list(replies)


def zset_scores(reply: list[Any]) -> tuple[list[bytes], list[float]]:
    """(members, scores) of a raw ZRANGE WITHSCORES reply, RESP2 (flat) or RESP3 (pairs)."""
    if reply and isinstance(reply[0], list):
        return [pair[0] for pair in reply], [float(pair[1]) for pair in reply]
    return list(reply[0::2]), [float(score) for score in reply[1::2]]
