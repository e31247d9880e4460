"""`adr rebuild`'s write: a book's end state as the consumer's keys of one pool, in bulk.

Visibility (a crash leaves nothing readers can see as a pool): the first write claims the
namespace by setting `{ns}:layout` to `rebuilding`, a value no release knows as a layout; every
leaderboard reader and the tier job refuse the pool (redis_layout.check_layout raises
UnknownLayout) and `adr consume` refuses it at start (stamp_model raises PoolRebuilding). The
last write sets it to the layout version (2): that one SET is the switch. A rerun that finds
`rebuilding` unlinks the namespace's keys and starts clean; a namespace with any other key is
refused (the rebuild never writes over a pool).

The keys and encodings are the consumer's (redis_layout.keys, player_codec; apply.lua derives
the rank, activity, tier counts and σ-limbs from the same values): each player's hash, `lb`,
`activity`, `tier_counts`, `pop`, the cooldown and event-id records the consumer would still
hold with their bucket index and `due`, the offsets and watermarks of the kill topic, and the
snapshot the rating used. No outbox: a rebuild re-sends no rating change."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeVar

import hiredis
import redis

from adr_cli._errors import CliError
from consumer import content_digest
from engine import NO_SEASONS, RatingModel, SeasonSchedule, Snapshot, season_start_ms
from redis_layout import Keys, encode_snapshot
from redis_layout.keys import DUE_BUCKET_MS, due_bucket_end
from redis_layout.layout import LAYOUT_VERSION
from redis_layout.layout import REBUILDING as _REBUILDING
from redis_layout.player_codec import FIELDS, float_text, model_values
from redis_layout.raw import pipelined
from redis_layout.season_schedule import encode_schedule

REBUILDING: Final = _REBUILDING.encode()
"""`{ns}:layout` while a rebuild writes the namespace (redis_layout.layout.REBUILDING), as
Redis answers it."""
COMMANDS_PER_ROUND: Final = 5_000
"""Pipelined commands per round trip: large enough that the round trip vanishes per key."""
MEMBERS_PER_COMMAND: Final = 1_000
"""Members (or key-value pairs) per variadic ZADD, MSET, RPUSH."""
_LIMB_BITS: Final = 32
_LIMB_MASK: Final = (1 << _LIMB_BITS) - 1
_TIER: Final = FIELDS.index("tier")
_MU: Final = FIELDS.index("mu")

S = TypeVar("S")
S_contra = TypeVar("S_contra", contravariant=True)


class PoolModel(Protocol[S_contra]):
    """What the write needs of the pool's rating model (engine.RatingModel has these): a player's
    share of S, its activity time and whether it is in a season; the codec gives its hash
    values."""

    def units(self, state: S_contra) -> int: ...

    def activity_time(self, state: S_contra) -> int | None: ...

    def in_season(self, state: S_contra, seasons: SeasonSchedule, season: int) -> bool: ...


@dataclass(frozen=True, slots=True)
class Encoding(Generic[S]):
    """The seam a model plugs into: its model (units, activity) and its player codec (the hash
    values in redis_layout.player_codec.FIELDS order, without `ver`), each state's `ver`, and
    its `{ns}:lb` score as text (None: the `mu` value, ADR's)."""

    model: PoolModel[S]
    values: Callable[[S], Sequence[str | bytes]]
    ver: Callable[[str, S], int]
    score: Callable[[S], str] | None = None


def model_encoding(model: RatingModel[Any]) -> Encoding[Any]:
    """A model other than ADR as the consumer writes its pool (consumer/_model_batch.py): the
    hash values of `to_fields` (player_codec.model_values), `ver` its counted kills `n` (one
    rating change each), ranked by the display rating."""
    return Encoding(
        model=model,
        values=lambda state: model_values(model.to_fields(state)),
        ver=lambda _player, state: model.to_fields(state)[2],
        score=lambda state: float_text(model.display(state)),
    )


class NamespaceInUse(CliError):
    """The namespace holds keys that are not a rebuild's: refused (exit 3)."""


def claim(client: redis.Redis, keys: Keys, log: Callable[..., None]) -> None:
    """Mark the namespace as being rebuilt (first write); unlink an unfinished rebuild's keys."""
    if not client.set(keys.layout, REBUILDING, nx=True):
        found = client.get(keys.layout)
        if found != REBUILDING:
            raise NamespaceInUse(f"{keys.layout} is {found!r}: the namespace holds a pool")
        removed = _unlink_all(client, keys, but=keys.layout)
        log("info", "unfinished_rebuild_removed", keys=removed)
        return
    other = next(_scan(client, keys, but=keys.layout), None)
    if other is not None:
        client.delete(keys.layout)
        raise NamespaceInUse(f"the namespace holds keys ({other!r}): not a fresh namespace")


def switch(client: redis.Redis, keys: Keys) -> None:
    """The last write: the layout version; from now on the namespace is a pool."""
    client.set(keys.layout, str(LAYOUT_VERSION))


def _scan(client: redis.Redis, keys: Keys, but: str) -> Iterator[bytes]:
    skip = but.encode()
    for key in client.scan_iter(match=keys.match_all, count=10_000):
        if key != skip:
            yield key


def _unlink_all(client: redis.Redis, keys: Keys, but: str) -> int:
    n = 0
    batch: list[bytes] = []
    for key in _scan(client, keys, but):
        batch.append(key)
        if len(batch) >= MEMBERS_PER_COMMAND:
            client.unlink(*batch)
            n, batch = n + len(batch), []
    if batch:
        client.unlink(*batch)
        n += len(batch)
    return n


class BulkWriter:
    """Commands packed by hiredis and sent `per_round` at a time in one write (redis_layout.raw:
    redis-py's pipeline packs each argument in Python, which cost more than Redis spent on the
    commands). No transaction: the layout marker, not MULTI, keeps the half-written pool
    invisible."""

    def __init__(self, client: redis.Redis, per_round: int, tick: Callable[[int], None]) -> None:
        self._client = client
        self._per_round = per_round
        self._packed: list[bytes] = []
        self.sent = 0
        self._tick = tick

    def command(self, *args: Any) -> None:
        packed = self._packed
        packed.append(hiredis.pack_command(args))
        if len(packed) >= self._per_round:
            self.flush()

    def packed(self, commands: Iterable[bytes]) -> None:
        """Commands packed already (as hiredis.pack_command would), flushed as `command`."""
        for packed in commands:
            self._packed.append(packed)
            if len(self._packed) >= self._per_round:
                self.flush()

    def variadic(self, head: tuple[Any, ...], items: Iterable[Any], width: int = 1) -> None:
        """`head + items` as commands of at most MEMBERS_PER_COMMAND groups of `width` items."""
        chunk: list[Any] = []
        limit = MEMBERS_PER_COMMAND * width
        for item in items:
            chunk.append(item)
            if len(chunk) >= limit:
                self.command(*head, *chunk)
                chunk = []
        if chunk:
            self.command(*head, *chunk)

    def flush(self) -> None:
        packed = self._packed
        if not packed:
            return
        for reply in pipelined(self._client, packed):
            if isinstance(reply, Exception):  # WRONGTYPE comes back as a value: raise it
                raise reply
        self.sent += len(packed)
        self._packed = []
        self._tick(self.sent)


@dataclass(frozen=True, slots=True)
class Records:
    """The cooldown and event-id records to write and the horizon that selected them."""

    cooldowns: list[tuple[str, str, int]]
    """(attacker, victim, last counted ts)."""
    event_ids: list[tuple[str, tuple[str, str, str, int]]]
    """(event id, (arena, attacker, victim, ts))."""
    horizon: int
    """The consumer's sweep horizon at the end (lowest watermark - lateness - pair memory,
    rounded down to a bucket's end): a record in a bucket ending at or before it is gone."""

    @property
    def counts(self) -> tuple[int, int]:
        """(cooldown records, event-id records)."""
        return len(self.cooldowns), len(self.event_ids)


@dataclass(frozen=True, slots=True)
class PackedRecords:
    """The same records as `_write_records` packs them, already packed (the native core's)."""

    commands: list[bytes]
    counts: tuple[int, int]
    """(cooldown records, event-id records)."""


def sweep_horizon(lowest_watermark: int | None, keep_ms: int) -> int:
    """The consumer's sweep horizon after the same events (`Records.horizon`)."""
    if lowest_watermark is None:
        return -(2**62)
    return ((lowest_watermark - keep_ms + 1) // DUE_BUCKET_MS) * DUE_BUCKET_MS - 1


def live_records(
    cooldowns: Iterable[tuple[str, str, int]],
    event_ids: Iterable[tuple[str, tuple[str, str, str, int]]],
    lowest_watermark: int | None,
    keep_ms: int,
) -> Records:
    """The records the consumer's write would still hold after the same events: those whose
    bucket ends after the horizon the lowest partition watermark sets (apply.lua's sweep)."""
    horizon = sweep_horizon(lowest_watermark, keep_ms)
    return Records(
        [c for c in cooldowns if due_bucket_end(c[2]) > horizon],
        [e for e in event_ids if due_bucket_end(e[1][3]) > horizon],
        horizon,
    )


def write_pool(
    writer: BulkWriter,
    keys: Keys,
    topic: str,
    players: Iterable[tuple[str, S]],
    encoding: Encoding[S],
    records: Records | PackedRecords,
    offsets: dict[int, int],
    watermarks: dict[int, int],
    snapshot: Snapshot | None,
    seasons: SeasonSchedule = NO_SEASONS,
    ladder: int = 0,
) -> int:
    """Every key of the pool but the layout marker; returns the players written. With
    `seasons`, the board and tier counts are season `ladder`'s, and the schedule is written."""
    season_from = season_start_ms(seasons, ladder)
    lb: list[str | bytes] = []
    activity: list[str] = []
    tiers: Counter[str] = Counter()
    hi = lo = 0
    count = 0
    model, values_of, ver_of = encoding.model, encoding.values, encoding.ver
    score_of = encoding.score
    prefix = keys.player_prefix
    fields = FIELDS
    for player, state in players:
        values = values_of(state)
        flat: list[Any] = []
        for name, value in zip(fields, [*values, str(ver_of(player, state))], strict=True):
            flat += (name, value)
        writer.command("HSET", prefix + player, *flat)
        tier = values[_TIER]
        # with seasons, a placed player is on the board when its largest counted event time is
        # in the board's season (docs/api.md, "Seasons"; RatingModel.in_season)
        if tier and (season_from is None or model.in_season(state, seasons, ladder)):
            lb += (values[_MU] if score_of is None else score_of(state), player)
            tiers[str(tier)] += 1
        since = model.activity_time(state)
        if since is not None:
            activity += (str(since), player)
        units = model.units(state)
        hi += units >> _LIMB_BITS
        lo += units & _LIMB_MASK
        count += 1
    writer.variadic(("ZADD", keys.lb), lb, 2)
    writer.variadic(("ZADD", keys.activity), activity, 2)
    if tiers:
        writer.command("HSET", keys.tier_counts, *_flat(sorted(tiers.items())))
    pop = [("count", count), ("sigma_hi", hi), ("sigma_lo", lo)]
    pop = [(k, v) for k, v in pop if v]  # the consumer's HINCRBY skips a zero delta
    if pop:
        writer.command("HSET", keys.pop, *_flat(pop))
    if isinstance(records, PackedRecords):
        writer.packed(records.commands)
    else:
        _write_records(writer, keys, records)
    if offsets:
        writer.command("HSET", keys.offsets(topic), *_flat(sorted(offsets.items())))
    if watermarks:
        writer.command("HSET", keys.watermarks(topic), *_flat(sorted(watermarks.items())))
    if seasons.starts:
        writer.command("HSET", keys.season_schedule, "version", str(seasons.version),
                       "seasons", encode_schedule(seasons), "ladder", str(ladder))  # fmt: skip
    if snapshot is not None:
        fields_ = encode_snapshot(snapshot) | {"version": "1"}
        writer.command("HSET", keys.snapshot, *_flat(fields_.items()))
    writer.flush()
    return count


def _write_records(writer: BulkWriter, keys: Keys, records: Records) -> None:
    """MSET of the records, RPUSH of each bucket's list, ZADD of the buckets into `due`."""
    cd_buckets: dict[int, list[str]] = {}
    pairs: list[Any] = []
    for attacker, victim, ts in records.cooldowns:
        key = keys.cooldown(attacker, victim)
        pairs += (key, str(ts))
        cd_buckets.setdefault(due_bucket_end(ts), []).append(key)
    writer.variadic(("MSET",), pairs, 2)
    id_buckets: dict[int, list[str]] = {}
    pairs = []
    for event_id, content in records.event_ids:
        key = keys.event_id(event_id)
        pairs += (key, content_digest(*content))
        id_buckets.setdefault(due_bucket_end(content[3]), []).append(key)
    writer.variadic(("MSET",), pairs, 2)
    for end, names in sorted(cd_buckets.items()):
        writer.variadic(("RPUSH", keys.cooldown_bucket(end)), names)
    for end, names in sorted(id_buckets.items()):
        writer.variadic(("RPUSH", keys.event_id_bucket(end)), names)
    ends = sorted(cd_buckets.keys() | id_buckets.keys())
    writer.variadic(("ZADD", keys.due_buckets), _flat((e, e) for e in ends), 2)


def _flat(pairs: Iterable[tuple[Any, Any]]) -> list[Any]:
    out: list[Any] = []
    for a, b in pairs:
        out += (a, b)
    return out
