"""One view read: the commands that read what a batch needs, and their replies parsed into a
`View` (consumer/_batch.py).

The read is one pipelined round trip (consumer/_store.py sends it, alone or ahead of a write):
each player's hash (HMGET of the codec's READ_FIELDS, the key set into a command packed once),
then one command per section (event ids, cooldowns, the epoch, `pop`, offsets, watermarks, the
snapshot's version, the season schedule). The replies are taken by section name, and every value
that does not decode is handled here: a corrupt player or cooldown is left out and named in
`View.corrupt` (reported through the store), a corrupt `pop`, offsets, epoch or season schedule
raises CorruptState.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import hiredis

from consumer._batch import View
from consumer._errors import CorruptState
from engine import PlayerState, RatingModel
from redis_layout import CorruptValue
from redis_layout.player_codec import READ_FIELDS, decode_fields

if TYPE_CHECKING:
    from consumer._store import Store

_READ_TEMPLATE: Final[bytes] = hiredis.pack_command(("HMGET", "", *READ_FIELDS))  # type: ignore[arg-type]
_READ_HEAD, _READ_TAIL = _READ_TEMPLATE.split(b"$0\r\n\r\n", 1)
"""A player's read, HMGET key READ_FIELDS, packed with an empty key: what comes before and after
the key (the fields are the same for every player; none is empty)."""


def read_player_command(key: str) -> bytes:
    """`hiredis.pack_command(("HMGET", key, *READ_FIELDS))`, the key set into the command packed
    once: ~0.3 µs per player instead of ~2 (hiredis formats each of the 16 arguments anew)."""
    raw = key.encode()
    return b"%b$%d\r\n%b\r\n%b" % (_READ_HEAD, len(raw), raw, _READ_TAIL)


class ViewRead:
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
        k = store.keys
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
        section("offsets", pack(("HMGET", store.offsets_key, *(partitions or [-1]))))
        section("watermarks", pack(("HMGET", store.watermarks_key, *(partitions or [-1]))))
        section("snapshot_version", pack(("HGET", k.snapshot, "version")))
        section("season", store.seasons.command)
        self.at = at
        """section name -> the index of its reply (the players' replies come first, in order)."""
        self.commands: list[bytes] = commands

    def _watermarks(self, values: Any) -> dict[int, int | None]:
        """partition -> watermark; one that is no integer counts as none (reported): the write
        script skips it too, and the batch's write replaces it."""
        store = self.store
        out: dict[int, int | None] = {}
        if isinstance(values, Exception):
            store.on_corrupt(CorruptState("watermarks", store.watermarks_key, str(values)))
            values = [None] * len(self.partitions)
        for p, v in zip(self.partitions, values, strict=False):
            try:
                out[p] = None if v is None else int(v)
            except ValueError as exc:
                out[p] = None
                store.on_corrupt(CorruptState("watermarks", store.watermarks_key, str(exc)))
        return out

    def parse(self, reply: list[Any]) -> View:
        """The view; corrupt players and cooldown pairs are left out and named in `corrupt`."""
        stored, pairs, store, at = self.stored, self.pairs, self.store, self.at
        keys = store.keys
        corrupt: dict[str, str] = {}
        for player, values in zip(self.wanted, reply, strict=False):
            try:
                decoded = store.decode(values, keys.player(player))
            except CorruptValue as exc:
                corrupt[player] = exc.detail
                store.on_corrupt(CorruptState(exc.what, exc.key, exc.detail))
                continue
            stored[player] = (None, 0) if decoded is None else decoded
        cooldowns: dict[str, int | None] = {}
        for key, v in zip(pairs, reply[at["cooldowns"]] if pairs else (), strict=True):
            try:
                cooldowns[key] = None if v is None else int(v)
            except ValueError as exc:
                corrupt[key] = str(exc)
                store.on_corrupt(CorruptState("cooldown", key, str(exc)))
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
        seasons, season_version, ladder = store.seasons.parse(reply[at["season"]])
        return View(
            epoch=stored_epoch(keys.epoch, reply[at["epoch"]]),
            players=stored,
            cooldowns=cooldowns,
            sigma_units_total=sigma_units_total,
            player_count=player_count,
            offsets=stored_offsets(store.offsets_key, self.partitions, reply[at["offsets"]]),
            snapshot=store.current_snapshot(reply[at["snapshot_version"]]),
            watermarks=self._watermarks(reply[at["watermarks"]]),
            corrupt=corrupt,
            event_ids=dict(zip(ids, reply[at["event_ids"]], strict=True)) if ids else {},
            seasons=seasons,
            season_version=season_version,
            ladder=ladder,
        )


def decode_model_player(model: RatingModel[Any], values: Any, key: str) -> tuple[Any, int] | None:
    """(state, ver) of a pool whose model is not ADR, from HMGET READ_FIELDS (None: no hash);
    CorruptValue for what its codec does not read (another model's hash, a bad value)."""
    fields = decode_fields(values, key)
    if fields is None:
        return None
    try:
        return model.from_fields(fields[0]), fields[1]
    except (ValueError, TypeError) as exc:
        raise CorruptValue("player", key, f"{type(exc).__name__}: {exc}") from None


def stored_offsets(key: str, partitions: list[int], values: Any) -> dict[int, int | None]:
    """partition -> stored next offset, from HMGET's reply; CorruptState if one is not an int."""
    try:
        if isinstance(values, Exception):
            raise ValueError(str(values))
        return {p: None if v is None else int(v) for p, v in zip(partitions, values, strict=False)}
    except ValueError as exc:
        raise CorruptState("offsets", key, str(exc)) from None


def stored_epoch(key: str, value: Any) -> int:
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
