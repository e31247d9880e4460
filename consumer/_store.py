"""The consumer's Redis side: read what a batch needs, apply a Plan in one atomic script.

Key names, the player-hash and snapshot codecs, the write script and the raw pipelined
connection are the Redis layout's (redis_layout); this module builds the batch's reads and the
write script's arguments from them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from typing import Any, Final

import hiredis
import msgspec
import redis

from consumer._batch import Plan, View
from consumer._errors import CorruptState
from consumer._stages import NO_STAGES, READ, WRITE_ARGUMENTS, StageTimer
from engine import (
    DEFAULT_LATENESS_MS,
    AdrModel,
    Params,
    PlayerState,
    RatingModel,
    Snapshot,
    initial_snapshot,
)
from redis_layout import CorruptValue, Keys, apply_contract, decode_snapshot, scripts
from redis_layout.keys import DUE_BUCKET_MS
from redis_layout.player_codec import READ_FIELDS, decode_fields, decode_player
from redis_layout.raw import PendingWrite, Sent, pipelined
from schemas import DEFAULT_LIMITS

_MSGPACK: Final = msgspec.msgpack.Encoder()
"""The write's players section (one msgpack array) and its outbox entry (`m` = msgpack array of
[player, rating-change bytes] pairs)."""


_READ_TEMPLATE: Final[bytes] = hiredis.pack_command(("HMGET", "", *READ_FIELDS))  # type: ignore[arg-type]
_READ_HEAD, _READ_TAIL = _READ_TEMPLATE.split(b"$0\r\n\r\n", 1)
"""A player's read, HMGET key READ_FIELDS, packed with an empty key: what comes before and after
the key (the fields are the same for every player; none is empty)."""


def read_player_command(key: str) -> bytes:
    """`hiredis.pack_command(("HMGET", key, *READ_FIELDS))`, the key set into the command packed
    once: ~0.3 µs per player instead of ~2 (hiredis formats each of the 16 arguments anew)."""
    raw = key.encode()
    return b"%b$%d\r\n%b\r\n%b" % (_READ_HEAD, len(raw), raw, _READ_TAIL)


def _ignore(_exc: CorruptState) -> None:
    pass


class Store:
    """Reads and the atomic write of one rating pool (namespace) for one source topic.

    A corrupt player hash or cooldown key is reported to `on_corrupt` and named in
    `View.corrupt` (its events are not rated); a snapshot that fails the checks of the one
    snapshot codec (redis_layout/snapshot_codec.py) is reported and the last good one kept; corrupt
    `pop` or offsets raise CorruptState (nothing can be computed without them).

    The store owns every setting its write uses: `lateness_ms` and `max_age_ms` (the consumer's
    Config) and the pair memory (`params.pair_memory_ms`) bound how long the script keeps a
    cooldown or event-id record (`_write_command`).
    """

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        topic: str,
        params: Params,
        lateness_ms: int = DEFAULT_LATENESS_MS,
        on_corrupt: Callable[[CorruptState], None] = _ignore,
        stages: StageTimer = NO_STAGES,
        max_age_ms: int = DEFAULT_LIMITS.max_age_ms,
        model: RatingModel[Any] | None = None,
    ) -> None:
        self._r = client
        adr = model is None or isinstance(model, AdrModel)
        self._decode: Callable[[Any, str], tuple[Any, int] | None] = (
            decode_player
            if model is None or adr
            else functools.partial(_decode_model_player, model)
        )
        """A player's hash from HMGET READ_FIELDS: ADR's codec, or the pool's model's
        (`to_fields`' values as layout 2 holds them, RatingModel.from_fields)."""
        self._apply, self._apply_sha = (
            (scripts.APPLY, scripts.APPLY_SHA)
            if adr
            else (scripts.APPLY_SCORED, scripts.APPLY_SCORED_SHA)
        )
        """The write script: a pool of another model than ADR sends each player's leaderboard
        score, its display rating (redis_layout/apply_contract.py, SCORED_PLAYER_ITEMS)."""
        self._stages = stages
        """Times packing the reads and the write and parsing the replies (consumer/_stages.py)."""
        self._on_corrupt = on_corrupt
        self._keys = keys
        self._params = params
        self._keep_ms = lateness_ms + params.pair_memory_ms
        """How long (event time) behind the lowest watermark a record is kept: an event up to
        `lateness_ms` behind its partition's watermark is still rated, and it needs the pair's
        last counted time within the pair memory (t_cooldown, or the opt-in repeat_window)."""
        self._max_age_ms = max_age_ms
        """The decoder's wall-clock guard: no event older than this is decoded at all."""
        self._offsets_key = keys.offsets(topic)
        self._watermarks_key = keys.watermarks(topic)
        self._snapshot_version: bytes | None = None
        self._index_args = (
            DUE_BUCKET_MS,
            keys.cooldown_bucket_prefix,
            keys.event_id_bucket_prefix,
            keys.cooldown_prefix,
        )
        """The write's sweep section after keep and floor: the record index's bucket width and
        the prefixes the script builds its names from (redis_layout/scripts/apply.lua)."""
        self._write_keys = {
            "offsets": self._offsets_key,
            "outbox": keys.outbox,
            "lb": keys.lb,
            "activity": keys.activity,
            "pop": keys.pop,
            "tier_counts": keys.tier_counts,
            "watermarks": self._watermarks_key,
            "cooldown_due": keys.cooldown_due,
            "due_buckets": keys.due_buckets,
            "epoch": keys.epoch,
        }
        """The write's KEYS by their names in redis_layout/apply_contract.py."""
        self._snapshot = initial_snapshot(params)
        self._raise_epoch = client.register_script(scripts.RAISE_EPOCH)

    def read_offsets(self, partitions: list[int]) -> dict[int, int | None]:
        """partition -> next offset to apply, as stored with the state."""
        if not partitions:
            return {}
        try:
            values = self._r.hmget(self._offsets_key, [str(p) for p in partitions])
        except redis.ResponseError as exc:  # e.g. WRONGTYPE
            raise CorruptState("offsets", self._offsets_key, str(exc)) from None
        return _offsets(self._offsets_key, partitions, values)

    def raise_epoch(self, least: int) -> int:
        """Set the pool epoch to max(stored + 1, `least`) and return it (scripts/raise_epoch.lua;
        consumer/_epoch.py says when and why)."""
        return int(self._raise_epoch(keys=[self._keys.epoch], args=[least]))

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
        stages = self._stages
        stages.start()
        read = _ViewRead(self, players, pairs, partitions, cached, ids)
        stages.stop(READ)
        replies = pipelined(self._r, read.commands)
        stages.start()
        view = read.parse(replies)
        stages.stop(READ)
        return view

    def read_view_then_write(
        self,
        players: list[str],
        pairs: list[str],
        partitions: list[int],
        cached: Mapping[str, tuple[PlayerState, int]] | None,
        plan: Plan,
        ids: Sequence[str] = (),
    ) -> tuple[View, PendingWrite]:
        """`read_view` for the next batch, then `plan`'s write, on one connection in that order:
        the read is answered before Redis starts the write, and the write runs while the caller
        computes on the read (`PendingWrite.result()` waits for it). The view is what Redis held
        before the write: the caller lays the plan's effect over it."""
        stages = self._stages
        stages.start()
        read = _ViewRead(self, players, pairs, partitions, cached, ids)
        stages.stop(READ)
        write = self._write_command(plan)
        sent = Sent(self._r, self._apply, [*read.commands, write])
        replies = sent.receive_first(len(read.commands))
        stages.start()
        try:
            view = read.parse(replies)
        except CorruptState:
            sent.abandon()  # whether the write ran is unknown: the caller redoes its batch
            raise
        finally:
            stages.stop(READ)
        return view, PendingWrite(plan, sent)

    def _current_snapshot(self, version: Any) -> Snapshot:
        """The latest published snapshot; re-read in full only when its version changed.

        It is decoded by the one snapshot codec every reader uses (redis_layout/snapshot_codec.py).
        One that fails its checks is reported once per version, and the last good one (before
        any: the initial one) stays in use until the tier job publishes again.
        """
        if isinstance(version, Exception) or version != self._snapshot_version:
            key = self._keys.snapshot
            try:
                if isinstance(version, Exception):
                    raise ValueError(str(version))
                fields: Any = self._r.hgetall(key)
                decoded = decode_snapshot(fields, key)
                self._snapshot = initial_snapshot(self._params) if decoded is None else decoded[1]
            except CorruptValue as exc:
                self._on_corrupt(CorruptState("snapshot", key, exc.detail))
            except (ValueError, TypeError, redis.ResponseError) as exc:
                self._on_corrupt(CorruptState("snapshot", key, f"{type(exc).__name__}: {exc}"))
            if not isinstance(version, Exception):
                self._snapshot_version = version
        return self._snapshot

    def write(self, plan: Plan) -> None:
        """Apply the plan atomically; Conflict (nothing written) if a checked value moved."""
        write = self._write_command(plan)
        PendingWrite(plan, Sent(self._r, self._apply, [write])).result()

    def _write_command(self, plan: Plan) -> bytes:
        """EVALSHA of redis_layout/scripts/apply.lua with the plan's sections.

        A pair's cooldown key is needed while an accepted event could still fall in its
        cooldown, which event time decides, not Redis's clock: the script deletes the keys of
        pairs last counted at t' <= (lowest partition watermark) - lateness - t_cooldown, or
        t' <= now - max_age - lateness - t_cooldown (no event that old passes the decoder's
        wall-clock guard, even one decoded up to `lateness` before its write). t_cooldown is
        Params.pair_memory_ms: t_cooldown, or the opt-in repeat_window if longer (a pair's last
        counted time then weighs its next kill for that long).
        """
        self._stages.start()
        k = self._keys
        keep_ms = self._keep_ms
        floor = time.time_ns() // 1_000_000 - self._max_age_ms - keep_ms
        by_name: dict[str, Sequence[object]] = {
            # One argument, not ~17 per player: Redis and the client each spend less per item.
            "players": [_MSGPACK.encode(plan.players)] if plan.players else [],
            "offset_checks": _flat((p, "" if o is None else o) for p, o in plan.offset_checks),
            "tier_counts": _flat(plan.tier_counts.items()),
            "pop": [plan.count_delta, plan.sigma_hi_delta, plan.sigma_lo_delta],
            "cooldowns": _flat(plan.cooldowns),
            "offsets": _flat(plan.offsets),
            "outbox": [_MSGPACK.encode(plan.outbox)] if plan.outbox else [],
            "watermarks": _flat(plan.watermarks),
            "sweep": [keep_ms, floor, *self._index_args],
            "event_ids": _flat(plan.event_ids),
            "epoch": [plan.epoch],
        }
        sections = [by_name[name] for name in apply_contract.SECTIONS]
        keys = [self._write_keys[name] for name in apply_contract.KEYS]
        args: list[object] = ["EVALSHA", self._apply_sha, len(keys), *keys, k.player("")]
        args += (len(s) for s in sections)
        for section in sections:
            args += section
        packed: bytes = hiredis.pack_command(tuple(args))  # type: ignore[arg-type]
        self._stages.stop(WRITE_ARGUMENTS)
        return packed


class _ViewRead:
    """The commands of one `read_view` and the parsing of their replies.

    The replies are taken by name: `_Replies` records where each section of the read starts
    (the players' HMGETs, then one command per section that has one), so that a section added
    to the read is added in one place, not counted from the end."""

    __slots__ = ("at", "commands", "ids", "pairs", "partitions", "store", "stored", "wanted")

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
        commands = [read_player_command(k.player(p)) for p in self.wanted]
        at: dict[str, int] = {}

        def section(name: str, command: bytes) -> None:
            at[name] = len(commands)
            commands.append(command)

        if ids:
            section("event_ids", pack(("MGET", *ids)))
        if pairs:
            section("cooldowns", pack(("MGET", *pairs)))
        section("epoch", pack(("GET", k.epoch)))
        section("pop", pack(("HMGET", k.pop, "count", "sigma_hi", "sigma_lo")))
        section("offsets", pack(("HMGET", store._offsets_key, *(partitions or [-1]))))
        section("watermarks", pack(("HMGET", store._watermarks_key, *(partitions or [-1]))))
        section("snapshot_version", pack(("HGET", k.snapshot, "version")))
        self.at = at
        """section name -> the index of its reply (the players' replies come first, in order)."""
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
        stored, pairs, store, at = self.stored, self.pairs, self.store, self.at
        keys = store._keys
        corrupt: dict[str, str] = {}
        for player, values in zip(self.wanted, reply, strict=False):
            try:
                decoded = store._decode(values, keys.player(player))
            except CorruptValue as exc:
                corrupt[player] = exc.detail
                store._on_corrupt(CorruptState(exc.what, exc.key, exc.detail))
                continue
            stored[player] = (None, 0) if decoded is None else decoded
        cooldowns: dict[str, int | None] = {}
        for key, v in zip(pairs, reply[at["cooldowns"]] if pairs else (), strict=True):
            try:
                cooldowns[key] = None if v is None else int(v)
            except ValueError as exc:
                corrupt[key] = str(exc)
                store._on_corrupt(CorruptState("cooldown", key, str(exc)))
        pop = reply[at["pop"]]
        try:
            if isinstance(pop, Exception):
                raise ValueError(str(pop))
            count, hi, lo = pop
            sigma_units_total = (int(hi or 0) << 32) + int(lo or 0)
            player_count = int(count or 0)
        except ValueError as exc:
            raise CorruptState("pop", keys.pop, str(exc)) from None
        ids = self.ids
        return View(
            epoch=_epoch(keys.epoch, reply[at["epoch"]]),
            players=stored,
            cooldowns=cooldowns,
            sigma_units_total=sigma_units_total,
            player_count=player_count,
            offsets=_offsets(store._offsets_key, self.partitions, reply[at["offsets"]]),
            snapshot=store._current_snapshot(reply[at["snapshot_version"]]),
            watermarks=self._watermarks(reply[at["watermarks"]]),
            corrupt=corrupt,
            event_ids=dict(zip(ids, reply[at["event_ids"]], strict=True)) if ids else {},
        )


def _decode_model_player(model: RatingModel[Any], values: Any, key: str) -> tuple[Any, int] | None:
    """(state, ver) of a pool whose model is not ADR, from HMGET READ_FIELDS (None: no hash);
    CorruptValue for what its codec does not read (another model's hash, a bad value)."""
    fields = decode_fields(values, key)
    if fields is None:
        return None
    try:
        return model.from_fields(fields[0]), fields[1]
    except (ValueError, TypeError) as exc:
        raise CorruptValue("player", key, f"{type(exc).__name__}: {exc}") from None


def _offsets(key: str, partitions: list[int], values: Any) -> dict[int, int | None]:
    """partition -> stored next offset, from HMGET's reply; CorruptState if one is not an int."""
    try:
        if isinstance(values, Exception):
            raise ValueError(str(values))
        return {p: None if v is None else int(v) for p, v in zip(partitions, values, strict=False)}
    except ValueError as exc:
        raise CorruptState("offsets", key, str(exc)) from None


def _epoch(key: str, value: Any) -> int:
    """The pool epoch from GET's reply (nil: 0); CorruptState if it is no integer >= 0 (the
    write script compares it as text: nothing can be written until it is repaired)."""
    if value is None:
        return 0
    try:
        if isinstance(value, Exception):
            raise ValueError(str(value))
        epoch = int(value)
        if epoch < 0 or str(epoch).encode() != value:
            raise ValueError(f"{value!r} is not a decimal integer >= 0")
    except ValueError as exc:
        raise CorruptState("epoch", key, str(exc)) from None
    return epoch


def _flat(items: Iterable[Iterable[object]]) -> list[object]:
    """The items' items in one list (C's loop: ~3,000 of them per batch in the write)."""
    return list(chain.from_iterable(items))
