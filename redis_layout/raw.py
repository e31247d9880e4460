"""Raw pipelined reads and writes on one pooled redis-py connection, skipping redis-py's
per-argument packing and reply callbacks.

Why raw: redis-py's pipeline packs each argument in Python, which costs the consumer more than
Redis spends on its commands (the commands here come packed by hiredis).

Every helper takes the connection from the client's pool and gives it back, or closes it first
when a failure may have left replies unread on it.

Why commands go out as one buffer and replies come in through `read_replies`: redis-py's
`send_packed_command` makes one `sendall` system call per item of the list it is given, and its
`read_response` runs its checks for every reply; on a batch's ~hundreds of HMGETs that was ~6 µs
of the consumer's thread per command (loopback TCP work in the kernel, mostly), against ~0.4 µs
with one send and the replies taken from hiredis' buffer (docs/benchmarks.md, 2026-12-05).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

import hiredis
import redis
from redis._parsers import hiredis as _hiredis_parser

from redis_layout._errors import Conflict, LayoutError

T = TypeVar("T")
# redis-py < 5.3 requires get_connection's command name; later releases deprecate passing it.
_COMMAND_NAME: Final = (
    ()
    if inspect.signature(redis.ConnectionPool.get_connection).parameters["command_name"].default
    is None
    else ("EVALSHA",)
)


_NOT_ENOUGH_DATA: Final[Any] = getattr(_hiredis_parser, "NOT_ENOUGH_DATA", None)
"""What redis-py's hiredis reader returns while no complete reply is buffered (None: a redis-py
without it, whose replies `read_replies` reads one `read_reply` at a time)."""
_HIREDIS_PARSER: Final[Any] = _hiredis_parser._HiredisParser if _NOT_ENOUGH_DATA else ()
_PUSH: Final[Any] = getattr(hiredis, "PushNotification", None)
"""hiredis' type of a RESP3 push message (None before hiredis 3.2: pushes came as lists)."""


def _connection(client: redis.Redis) -> Any:
    return client.connection_pool.get_connection(*_COMMAND_NAME)


def read_reply(conn: Any) -> Any:
    """One reply of a read; a WRONGTYPE error reply (a key holding another type: corrupt) is
    returned, not raised, so that every reply is still read off the connection and the caller
    can say which key it was. Other errors (refusals such as OOM or TRYAGAIN) are raised."""
    try:
        return conn.read_response()
    except redis.ResponseError as exc:
        if _wrong_type(exc):
            return exc
        raise


def _wrong_type(exc: redis.ResponseError) -> bool:
    return str(exc).startswith("WRONGTYPE")


def send_packed(conn: Any, commands: list[bytes]) -> None:
    """Send hiredis-packed commands in one `sendall` (redis-py makes one per list item)."""
    conn.send_packed_command(commands if len(commands) < 2 else [b"".join(commands)])


def read_replies(conn: Any, n: int) -> list[Any]:
    """`read_reply` n times, as redis-py's `read_response` would, but with the replies already
    buffered taken straight from hiredis' reader: one `read_reply` (redis-py's own path: it reads
    the socket, and sets the health-check clock) whenever no complete reply is buffered.

    An error reply is what `read_reply` makes of it (WRONGTYPE returned, others raised); a push
    message (RESP3) goes to the parser's handler and is not counted, as redis-py does. Any
    failure closes the connection (replies may be left unread on it), as `read_response` does
    on all but error replies; every caller closes it on those too."""
    parser = conn._parser
    reader = getattr(parser, "_reader", None) if isinstance(parser, _HIREDIS_PARSER) else None
    out: list[Any] = []
    try:
        while len(out) < n:
            reply = _NOT_ENOUGH_DATA if reader is None else reader.gets()
            if reply is _NOT_ENOUGH_DATA:
                out.append(read_reply(conn))
            elif isinstance(reply, Exception):
                if not isinstance(reply, redis.ResponseError) or not _wrong_type(reply):
                    raise reply
                out.append(reply)
            elif _PUSH is not None and isinstance(reply, _PUSH):
                parser.handle_push_response(reply)
            elif type(reply) is list and reply and isinstance(reply[0], redis.ConnectionError):
                raise reply[0]
            else:
                out.append(reply)
    except BaseException:
        conn.disconnect()
        raise
    interval = getattr(conn, "health_check_interval", 0)
    if interval:  # as read_response does after each reply
        conn.next_health_check = time.monotonic() + interval
    return out


def pipelined(client: redis.Redis, commands: list[bytes]) -> list[Any]:
    """Send hiredis-packed commands in one write and read every reply (`read_replies`)."""
    pool = client.connection_pool
    conn = _connection(client)
    try:
        send_packed(conn, commands)
        replies = read_replies(conn, len(commands))
    except BaseException:
        conn.disconnect()  # replies may be left unread on it
        raise
    finally:
        pool.release(conn)
    return replies


class Sent:
    """Commands on the wire, the last one EVALSHA of `source`: holds its pooled connection until
    that last reply is read (the reply to a script Redis forgot is answered by loading it and
    sending the call again)."""

    __slots__ = ("_client", "_conn", "_last", "_source")

    def __init__(self, client: redis.Redis, source: str, commands: list[bytes]) -> None:
        self._client = client
        self._source = source
        self._last = commands[-1]
        self._conn: Any = _connection(client)
        self._guard(lambda: send_packed(self._conn, commands), last=False)

    def receive_first(self, n: int) -> list[Any]:
        """The replies of the first n commands (the last one's stays on the wire)."""
        return self._guard(lambda: read_replies(self._conn, n), last=False)

    def abandon(self) -> None:
        """Give up on the last reply: close the connection (its reply is unread) and release it."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.disconnect()
            self._client.connection_pool.release(conn)

    def receive_last(self) -> Any:
        try:
            return self._guard(self._conn.read_response, last=True)
        except redis.exceptions.NoScriptError:
            pass
        self._client.script_load(self._source)  # a restarted Redis forgot it
        self._guard(lambda: self._conn.send_packed_command([self._last]), last=False)
        return self._guard(self._conn.read_response, last=True)

    def _guard(self, action: Callable[[], T], last: bool) -> T:
        """Run a step; the connection goes back to the pool after the last reply, or is closed
        after any failure that leaves replies unread on it."""
        conn = self._conn
        if conn is None:
            raise LayoutError("the write's reply was already read")
        release = last
        try:
            return action()
        except redis.exceptions.NoScriptError:
            if not last:
                conn.disconnect()
            release = not last  # after the last reply: the call is sent again on it
            raise
        except redis.ResponseError:
            if not last:
                conn.disconnect()
            release = True
            raise
        except (redis.ConnectionError, redis.TimeoutError):
            conn.disconnect()
            release = True
            raise
        finally:
            if release:
                self._conn = None
                self._client.connection_pool.release(conn)


class PendingWrite:
    """A batch write (EVALSHA of scripts.APPLY, last of `sent`) on the wire; `result()` waits for
    it (once). `plan` is what the caller wrote (the consumer's Plan)."""

    __slots__ = ("_sent", "plan")

    def __init__(self, plan: Any, sent: Sent) -> None:
        self.plan = plan
        self._sent = sent

    def result(self) -> None:
        """Returns once the write ran; Conflict if a checked value had moved (then nothing was
        written). A connection error leaves it unknown whether the write ran."""
        reply = self._sent.receive_last()
        if int(reply[0]) != 0:
            what, key = reply[1], reply[2]
            raise Conflict(
                what.decode() if isinstance(what, bytes) else str(what),
                key.decode() if isinstance(key, bytes) else str(key),
            )
