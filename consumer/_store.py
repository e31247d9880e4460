"""The consumer's Redis side: read what a batch needs, apply a Plan in one atomic script.

Key names, the player-hash and snapshot codecs, the write script and the raw pipelined
connection are the Redis layout's (redis_layout); this module sends the batch's read (its
commands and parsing: consumer/_view.py) and builds the write script's arguments.
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
from consumer._season_read import SeasonRecord
from consumer._stages import NO_STAGES, READ, WRITE_ARGUMENTS, StageTimer
from consumer._view import ViewRead, decode_model_player, stored_offsets
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
from redis_layout.player_codec import decode_player
from redis_layout.raw import PendingWrite, Sent, pipelined
from schemas import DEFAULT_LIMITS

_MSGPACK: Final = msgspec.msgpack.Encoder()
"""The write's players section (one msgpack array) and its outbox entry (`m` = msgpack array of
[player, rating-change bytes] pairs)."""


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
        self.decode: Callable[[Any, str], tuple[Any, int] | None] = (
            decode_player if model is None or adr else functools.partial(decode_model_player, model)
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
        self.on_corrupt = on_corrupt
        self.keys = keys
        self._params = params
        self._keep_ms = lateness_ms + params.pair_memory_ms
        """How long (event time) behind the lowest watermark a record is kept: an event up to
        `lateness_ms` behind its partition's watermark is still rated, and it needs the pair's
        last counted time within the pair memory (t_cooldown, or the opt-in repeat_window)."""
        self._max_age_ms = max_age_ms
        """The decoder's wall-clock guard: no event older than this is decoded at all."""
        self.offsets_key = keys.offsets(topic)
        self.watermarks_key = keys.watermarks(topic)
        self._snapshot_version: bytes | None = None
        self.seasons = SeasonRecord(keys.season_schedule)
        """The season schedule's read (consumer/_season_read.py)."""
        self._index_args = (
            DUE_BUCKET_MS,
            keys.cooldown_bucket_prefix,
            keys.event_id_bucket_prefix,
            keys.cooldown_prefix,
        )
        """The write's sweep section after keep and floor: the record index's bucket width and
        the prefixes the script builds its names from (redis_layout/scripts/apply.lua)."""
        self._write_keys = {
            "offsets": self.offsets_key,
            "outbox": keys.outbox,
            "lb": keys.lb,
            "activity": keys.activity,
            "pop": keys.pop,
            "tier_counts": keys.tier_counts,
            "watermarks": self.watermarks_key,
            "cooldown_due": keys.cooldown_due,
            "due_buckets": keys.due_buckets,
            "epoch": keys.epoch,
            "season_schedule": keys.season_schedule,
        }
        """The write's KEYS by their names in redis_layout/apply_contract.py."""
        self._snapshot = initial_snapshot(params)
        self._raise_epoch = client.register_script(scripts.RAISE_EPOCH)

    def read_offsets(self, partitions: list[int]) -> dict[int, int | None]:
        """partition -> next offset to apply, as stored with the state."""
        if not partitions:
            return {}
        try:
            values = self._r.hmget(self.offsets_key, [str(p) for p in partitions])
        except redis.ResponseError as exc:  # e.g. WRONGTYPE
            raise CorruptState("offsets", self.offsets_key, str(exc)) from None
        return stored_offsets(self.offsets_key, partitions, values)

    def raise_epoch(self, least: int) -> int:
        """Set the pool epoch to max(stored + 1, `least`) and return it (scripts/raise_epoch.lua;
        consumer/_epoch.py says when and why)."""
        return int(self._raise_epoch(keys=[self.keys.epoch], args=[least]))

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
        read = ViewRead(self, players, pairs, partitions, cached, ids)
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
        read = ViewRead(self, players, pairs, partitions, cached, ids)
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

    def current_snapshot(self, version: Any) -> Snapshot:
        """The latest published snapshot; re-read in full only when its version changed.

        It is decoded by the one snapshot codec every reader uses (redis_layout/snapshot_codec.py).
        One that fails its checks is reported once per version, and the last good one (before
        any: the initial one) stays in use until the tier job publishes again.
        """
        if isinstance(version, Exception) or version != self._snapshot_version:
            key = self.keys.snapshot
            try:
                if isinstance(version, Exception):
                    raise ValueError(str(version))
                fields: Any = self._r.hgetall(key)
                decoded = decode_snapshot(fields, key)
                self._snapshot = initial_snapshot(self._params) if decoded is None else decoded[1]
            except CorruptValue as exc:
                self.on_corrupt(CorruptState("snapshot", key, exc.detail))
            except (ValueError, TypeError, redis.ResponseError) as exc:
                self.on_corrupt(CorruptState("snapshot", key, f"{type(exc).__name__}: {exc}"))
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
        k = self.keys
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
            "season": [*plan.season, *plan.unranked],
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


def _flat(items: Iterable[Iterable[object]]) -> list[object]:
    """The items' items in one list (C's loop: ~3,000 of them per batch in the write)."""
    return list(chain.from_iterable(items))
