"""The consumer's Redis side: read what a batch needs, apply a Plan in one atomic script."""

from __future__ import annotations

import hashlib
import importlib.resources
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import hiredis
import msgspec
import redis

from consumer._batch import Plan, View
from consumer._errors import ConsumerError, CorruptState
from consumer._redis_codec import FIELDS, decode_player
from engine import DEFAULT_LATENESS_MS, Params, PlayerState, Snapshot, initial_snapshot
from redis_layout import Keys
from tierjob._errors import StateError
from tierjob.snapshot_codec import decode_snapshot

_SCRIPTS: Final = importlib.resources.files("consumer")
_WRITE: Final = _SCRIPTS.joinpath("_apply.lua").read_text()
_WRITE_SHA: Final = hashlib.sha1(_WRITE.encode()).hexdigest()
T = TypeVar("T")
# redis-py < 5.3 requires get_connection's command name; later releases deprecate passing it.
_COMMAND_NAME: Final = (
    ()
    if inspect.signature(redis.ConnectionPool.get_connection).parameters["command_name"].default
    is None
    else ("EVALSHA",)
)
_MSGPACK: Final = msgspec.msgpack.Encoder()
"""The write's players section (one msgpack array) and its outbox entry (`m` = msgpack array of
[player, rating-change bytes] pairs)."""


class Conflict(Exception):
    """A value the batch was computed from changed before the write (another instance)."""

    def __init__(self, what: str, key: str) -> None:
        super().__init__(f"{what} {key} changed concurrently")
        self.what = what


def _ignore(_exc: CorruptState) -> None:
    pass


class Store:
    """Reads and the atomic write of one rating pool (namespace) for one source topic.

    A corrupt player hash or cooldown key is reported to `on_corrupt` and named in
    `View.corrupt` (its events are not rated); a snapshot that fails the checks of the one
    snapshot codec (tierjob/snapshot_codec.py) is reported and the last good one kept; corrupt
    `pop` or offsets raise CorruptState (nothing can be computed without them).
    """

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        topic: str,
        params: Params,
        lateness_ms: int = DEFAULT_LATENESS_MS,
        on_corrupt: Callable[[CorruptState], None] = _ignore,
    ) -> None:
        self._r = client
        self._on_corrupt = on_corrupt
        self._keys = keys
        self._params = params
        self.lateness_ms = lateness_ms
        """Events older than their partition's watermark minus this are late (not rated)."""
        self._offsets_key = keys.offsets(topic)
        self._watermarks_key = keys.watermarks(topic)
        self._snapshot_version: bytes | None = None
        self._snapshot = initial_snapshot(params)

    def read_offsets(self, partitions: list[int]) -> dict[int, int | None]:
        """partition -> next offset to apply, as stored with the state."""
        if not partitions:
            return {}
        try:
            values = self._r.hmget(self._offsets_key, [str(p) for p in partitions])
        except redis.ResponseError as exc:  # e.g. WRONGTYPE
            raise CorruptState("offsets", self._offsets_key, str(exc)) from None
        return _offsets(self._offsets_key, partitions, values)

    def read_view(
        self,
        players: list[str],
        pairs: list[str],
        partitions: list[int],
        cached: Mapping[str, tuple[PlayerState, int]] | None = None,
        ids: Sequence[str] = (),
    ) -> View:
        """Everything the batch is computed from, in one pipelined round trip.

        Players in `cached` (state and ver as this instance last wrote or read them) are not read:
        the write checks every player's ver, so a stale entry costs a Conflict, never an update.
        The reads need not be one instant either: the write checks every player and offset it
        depends on, and S, P only shape σ̄ (see consumer/README.md, "σ̄").
        """
        read = _ViewRead(self, players, pairs, partitions, cached, ids)
        return read.parse(_pipelined(self._r, read.commands))

    def read_view_then_write(
        self,
        players: list[str],
        pairs: list[str],
        partitions: list[int],
        cached: Mapping[str, tuple[PlayerState, int]] | None,
        plan: Plan,
        cooldown_ms: int,
        max_age_ms: int,
        ids: Sequence[str] = (),
    ) -> tuple[View, PendingWrite]:
        """`read_view` for the next batch, then `plan`'s write, on one connection in that order:
        the read is answered before Redis starts the write, and the write runs while the caller
        computes on the read (`PendingWrite.result()` waits for it). The view is what Redis held
        before the write: the caller lays the plan's effect over it."""
        read = _ViewRead(self, players, pairs, partitions, cached, ids)
        write = self._write_command(plan, cooldown_ms, max_age_ms)
        sent = _Sent(self._r, _WRITE, [*read.commands, write])
        replies = sent.receive_first(len(read.commands))
        try:
            view = read.parse(replies)
        except CorruptState:
            sent.abandon()  # whether the write ran is unknown: the caller redoes its batch
            raise
        return view, PendingWrite(plan, sent)

    def _current_snapshot(self, version: Any) -> Snapshot:
        """The latest published snapshot; re-read in full only when its version changed.

        It is decoded by the one snapshot codec every reader uses (tierjob/snapshot_codec.py).
        One that fails its checks is reported once per version, and the last good one (before
        any: the initial one) stays in use until the tier job publishes again.
        """
        if isinstance(version, Exception) or version != self._snapshot_version:
            key = self._keys.snapshot
            try:
                if isinstance(version, Exception):
                    raise ValueError(str(version))
                fields: Any = self._r.hgetall(key)
                decoded = decode_snapshot(fields)
                self._snapshot = initial_snapshot(self._params) if decoded is None else decoded[1]
            except (ValueError, TypeError, StateError, redis.ResponseError) as exc:
                self._on_corrupt(CorruptState("snapshot", key, f"{type(exc).__name__}: {exc}"))
            if not isinstance(version, Exception):
                self._snapshot_version = version
        return self._snapshot

    def write(self, plan: Plan, cooldown_ms: int, max_age_ms: int) -> None:
        """Apply the plan atomically; Conflict (nothing written) if a checked value moved."""
        write = self._write_command(plan, cooldown_ms, max_age_ms)
        PendingWrite(plan, _Sent(self._r, _WRITE, [write])).result()

    def _write_command(self, plan: Plan, cooldown_ms: int, max_age_ms: int) -> bytes:
        """EVALSHA of consumer/_apply.lua with the plan's sections.

        A pair's cooldown key is needed while an accepted event could still fall in its
        cooldown, which event time decides, not Redis's clock: the script deletes the keys of
        pairs last counted at t' <= (lowest partition watermark) - lateness - t_cooldown, or
        t' <= now - max_age - lateness - t_cooldown (no event that old passes the decoder's
        wall-clock guard, even one decoded up to `lateness` before its write). The caller passes
        Params.pair_memory_ms as `cooldown_ms`: t_cooldown, or the opt-in repeat_window if longer
        (a pair's last counted time then weighs its next kill for that long).
        """
        k = self._keys
        keep_ms = self.lateness_ms + cooldown_ms
        floor = time.time_ns() // 1_000_000 - max_age_ms - keep_ms
        sections: tuple[Sequence[object], ...] = (
            # One argument, not ~17 per player: Redis and the client each spend less per item.
            [_MSGPACK.encode(plan.players)] if plan.players else [],
            _flat((p, "" if o is None else o) for p, o in plan.offset_checks),
            _flat(plan.tier_counts.items()),
            [plan.count_delta, plan.sigma_hi_delta, plan.sigma_lo_delta],
            _flat(plan.cooldowns),
            _flat(plan.offsets),
            [_MSGPACK.encode(plan.outbox)] if plan.outbox else [],
            _flat(plan.watermarks),
            [keep_ms, floor],
            [x for key, digest, ts in plan.event_ids for x in (key, digest, ts)],
        )
        keys = (
            self._offsets_key,
            k.outbox,
            k.lb,
            k.activity,
            k.active_mu,
            k.pop,
            k.tier_counts,
            self._watermarks_key,
            k.cooldown_due,
        )
        args: list[object] = ["EVALSHA", _WRITE_SHA, len(keys), *keys, k.player("")]
        args += (len(s) for s in sections)
        for section in sections:
            args += section
        packed: bytes = hiredis.pack_command(tuple(args))  # type: ignore[arg-type]
        return packed


class _ViewRead:
    """The commands of one `read_view` and the parsing of their replies."""

    __slots__ = ("commands", "ids", "pairs", "partitions", "store", "stored", "wanted")

    def __init__(
        self,
        store: Store,
        players: list[str],
        pairs: list[str],
        partitions: list[int],
        cached: Mapping[str, tuple[PlayerState, int]] | None,
        ids: Sequence[str] = (),
    ) -> None:
        k = store._keys
        self.store = store
        self.pairs = pairs
        self.ids = ids
        self.partitions = partitions
        self.stored: dict[str, tuple[PlayerState | None, int]] = {}
        self.wanted = players
        if cached:
            self.wanted = []
            for player in players:
                hit = cached.get(player)
                if hit is None:
                    self.wanted.append(player)
                else:
                    self.stored[player] = hit
        pack: Any = hiredis.pack_command  # its stub types a one-element tuple
        commands = [pack(("HMGET", k.player(p), *FIELDS)) for p in self.wanted]
        if ids:
            commands.append(pack(("MGET", *ids)))
        if pairs:
            commands.append(pack(("MGET", *pairs)))
        commands.append(pack(("HMGET", k.pop, "count", "sigma_hi", "sigma_lo")))
        commands.append(pack(("HMGET", store._offsets_key, *(partitions or [-1]))))
        commands.append(pack(("HMGET", store._watermarks_key, *(partitions or [-1]))))
        commands.append(pack(("HGET", k.snapshot, "version")))
        self.commands: list[bytes] = commands

    def _watermarks(self, values: Any) -> dict[int, int | None]:
        """partition -> watermark; one that is no integer counts as none (reported): the write
        script skips it too, and the batch's write replaces it."""
        store = self.store
        out: dict[int, int | None] = {}
        if isinstance(values, Exception):
            store._on_corrupt(CorruptState("watermarks", store._watermarks_key, str(values)))
            values = [None] * len(self.partitions)
        for p, v in zip(self.partitions, values, strict=False):
            try:
                out[p] = None if v is None else int(v)
            except ValueError as exc:
                out[p] = None
                store._on_corrupt(CorruptState("watermarks", store._watermarks_key, str(exc)))
        return out

    def parse(self, reply: list[Any]) -> View:
        """The view; corrupt players and cooldown pairs are left out and named in `corrupt`."""
        stored, pairs, store = self.stored, self.pairs, self.store
        keys = store._keys
        corrupt: dict[str, str] = {}
        for player, values in zip(self.wanted, reply, strict=False):
            try:
                decoded = decode_player(values, keys.player(player))
            except CorruptState as exc:
                corrupt[player] = exc.detail
                store._on_corrupt(exc)
                continue
            stored[player] = (None, 0) if decoded is None else decoded
        cooldowns: dict[str, int | None] = {}
        for key, v in zip(pairs, reply[-5] if pairs else (), strict=True):
            try:
                cooldowns[key] = None if v is None else int(v)
            except ValueError as exc:
                corrupt[key] = str(exc)
                store._on_corrupt(CorruptState("cooldown", key, str(exc)))
        pop = reply[-4]
        try:
            if isinstance(pop, Exception):
                raise ValueError(str(pop))
            count, hi, lo = pop
            sigma_units_total = (int(hi or 0) << 32) + int(lo or 0)
            player_count = int(count or 0)
        except ValueError as exc:
            raise CorruptState("pop", keys.pop, str(exc)) from None
        return View(
            players=stored,
            cooldowns=cooldowns,
            sigma_units_total=sigma_units_total,
            player_count=player_count,
            offsets=_offsets(store._offsets_key, self.partitions, reply[-3]),
            snapshot=store._current_snapshot(reply[-1]),
            watermarks=self._watermarks(reply[-2]),
            corrupt=corrupt,
            event_ids=dict(zip(self.ids, reply[len(self.wanted)], strict=True)) if self.ids else {},
        )


def _offsets(key: str, partitions: list[int], values: Any) -> dict[int, int | None]:
    """partition -> stored next offset, from HMGET's reply; CorruptState if one is not an int."""
    try:
        if isinstance(values, Exception):
            raise ValueError(str(values))
        return {p: None if v is None else int(v) for p, v in zip(partitions, values, strict=False)}
    except ValueError as exc:
        raise CorruptState("offsets", key, str(exc)) from None


def _read_reply(conn: Any) -> Any:
    """One reply of a read; a WRONGTYPE error reply (a key holding another type: corrupt) is
    returned, not raised, so that every reply is still read off the connection and the caller
    can say which key it was. Other errors (refusals such as OOM or TRYAGAIN) are raised."""
    try:
        return conn.read_response()
    except redis.ResponseError as exc:
        if str(exc).startswith("WRONGTYPE"):
            return exc
        raise


class PendingWrite:
    """A batch write sent to Redis; `result()` waits for it (once)."""

    __slots__ = ("_sent", "plan")

    def __init__(self, plan: Plan, sent: _Sent) -> None:
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


def _pipelined(client: redis.Redis, commands: list[bytes]) -> list[Any]:
    """Send hiredis-packed commands in one write and read every reply (redis-py's pipeline
    packs each argument in Python, which costs more than Redis spends on the commands)."""
    pool = client.connection_pool
    conn = pool.get_connection(*_COMMAND_NAME)
    try:
        conn.send_packed_command(commands)  # type: ignore[no-untyped-call]
        replies = [_read_reply(conn) for _ in commands]
    except BaseException:
        conn.disconnect()  # type: ignore[no-untyped-call]  # replies may be left unread on it
        raise
    finally:
        pool.release(conn)
    return replies


class _Sent:
    """Commands on the wire, the last one EVALSHA of `source`: holds its pooled connection until
    that last reply is read (the reply to a script Redis forgot is answered by loading it and
    sending the call again)."""

    __slots__ = ("_client", "_conn", "_last", "_source")

    def __init__(self, client: redis.Redis, source: str, commands: list[bytes]) -> None:
        self._client = client
        self._source = source
        self._last = commands[-1]
        self._conn: Any = client.connection_pool.get_connection(*_COMMAND_NAME)
        self._guard(lambda: self._conn.send_packed_command(commands), last=False)

    def receive_first(self, n: int) -> list[Any]:
        """The replies of the first n commands (the last one's stays on the wire)."""
        return self._guard(lambda: [_read_reply(self._conn) for _ in range(n)], last=False)

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
            raise ConsumerError("the write's reply was already read")
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


def _flat(pairs: object) -> list[object]:
    out: list[object] = []
    for item in pairs:  # type: ignore[attr-defined]
        out.extend(item)
    return out
