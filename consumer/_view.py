"""The view a batch is rated on (`View`, consumer/_batch.py): what Redis holds for the batch,
read past the players this instance already holds, under the write ahead of it.

**The read**: one pipelined round trip (consumer/_store.py sends it, alone or ahead of a write):
each player's hash (HMGET of the codec's READ_FIELDS, the key set into a command packed once),
then one command per section (event ids, cooldowns, the epoch, `pop`, offsets, watermarks, the
snapshot's version, the season schedule). The replies are taken by section name, and every value
that does not decode is handled here: a corrupt player or cooldown is left out and named in
`View.corrupt` (reported through the store), a corrupt `pop`, offsets, epoch or season schedule
raises CorruptState (`ViewRead`).

**The state cache**: the player states this instance last wrote or read, so a batch reads only
the others (`StateCache`). An entry may go stale (another instance wrote the player): the atomic
write checks every player's `ver`, so a stale entry costs a Conflict and a re-read, never a lost
update. A batch rated behind a write ahead reads its players through that write's states laid
over the cache (`Overlay`).

The cache's lookups and stores run once per player of every batch: this module is compiled with
mypyc (runtime/compiled.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

import hiredis

from consumer._errors import CorruptState
from engine import PlayerState, RatingModel
from redis_layout import CorruptValue
from redis_layout.player_codec import READ_FIELDS, decode_fields

if TYPE_CHECKING:
    from consumer._batch import View
    from consumer._store import Store

_PACK: Any = hiredis.pack_command
"""hiredis's command packer, typed Any: its stub types a one-element tuple (and the compiled
build's type check may have no stub at all)."""
_READ_TEMPLATE: Final[bytes] = _PACK(("HMGET", "", *READ_FIELDS))
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
        pack = _PACK
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
        # Imported here, not above: consumer/_batch.py imports this module (Entries).
        from consumer._batch import View

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


# -- the state cache ---------------------------------------------------------------------

Entry = tuple[Any, int]
"""(state, ver) as Redis holds it: the pool's model's state (engine.PlayerState for ADR; typed
Any so that the compiled cache holds any model's Struct)."""


class Entries(Mapping[str, Entry]):
    """player -> (state, ver), held as two dicts of objects the garbage collector does not track
    (PlayerState has gc=False), so that neither dict is tracked: a plan's thousands of changed
    players cost the young collections nothing, where (state, ver) tuples would. StateCache is
    one, bounded."""

    __slots__ = ("_states", "_vers")

    def __init__(self) -> None:
        self._states: dict[str, Any] = {}
        self._vers: dict[str, int] = {}

    def put(self, player: str, state: Any, ver: int) -> None:
        self._states[player] = state
        self._vers[player] = ver

    def __getitem__(self, player: str) -> Entry:
        return self._states[player], self._vers[player]

    def get(self, player: str, default: Entry | None = None) -> Entry | None:  # type: ignore[override]
        state = self._states.get(player)
        return default if state is None else (state, self._vers[player])

    def __contains__(self, player: object) -> bool:
        return player in self._states

    def __iter__(self) -> Iterator[str]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)

    def __bool__(self) -> bool:
        return bool(self._states)

    def clear(self) -> None:
        self._states.clear()
        self._vers.clear()


class StateCache(Entries):
    """player -> (state, ver), at most `capacity` players, in two generations.

    A store writes into the young generation in place. Once the young generation holds more
    than half the capacity, it becomes the old one and the old one is dropped: what was stored
    in the two latest generations is held: at least the most recently stored half of the
    capacity less the largest store (and the latest store always), like an LRU of that size,
    without an LRU's reordering on every store (a dict pop and re-insert per player: about three
    times an in-place store's cost; a player dropped too early costs one read, never a wrong
    state, since a held entry is always its latest store).

    States and vers are kept in dicts of objects the garbage collector does not track
    (PlayerState has gc=False; see Entries), so that no dict is ever tracked: a dict of
    (state, ver) tuples was re-tracked on every store and traversed whole by every young
    collection, pauses that grew with the cache.
    """

    __slots__ = ("_capacity", "_old")

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self._capacity = capacity
        self._old = Entries()
        """The previous generation: read after the young one, dropped at the next turn."""

    @property
    def entries(self) -> Mapping[str, Entry]:
        return self

    def store(self, entries: Mapping[str, Entry]) -> None:
        """Remember these (state, ver) in the young generation; turn generations when it is over
        half the capacity, then trim the old one to fit (never the players of this store)."""
        capacity = self._capacity
        if capacity <= 0:
            return
        states, vers = self._states, self._vers
        if isinstance(entries, Entries):  # a plan's: no (state, ver) tuple made per player
            states.update(entries._states)
            vers.update(entries._vers)
        else:
            for player, (state, ver) in entries.items():
                states[player] = state
                vers[player] = ver
        if len(states) > (capacity - 1) // 2:
            old = Entries()
            old._states, old._vers = states, vers
            self._old = old
            self._states, self._vers = {}, {}
        excess = len(self._states) + len(self._old._states) - capacity
        if excess > 0:
            self._trim(excess, entries)

    def _trim(self, excess: int, latest: Mapping[str, Entry]) -> None:
        """Drop `excess` players of the old generation: first those the young one shadows, then
        the earliest inserted, keeping `latest` (the store just made) as long as it fits."""
        old, young = self._old, self._states
        drop = dict.fromkeys(p for p in old._states if p in young)
        if len(drop) < excess:
            later = (p for p in old._states if p not in young and p not in latest)
            drop.update(dict.fromkeys(islice(later, excess - len(drop))))
        if len(drop) < excess:  # one store of more than `capacity` players: keep its last ones
            kept = set(list(latest)[-self._capacity :])
            drop.update(dict.fromkeys(p for p in old._states if p not in kept))
        for player in list(islice(drop, excess)):
            del old._states[player]
            del old._vers[player]

    def __getitem__(self, player: str) -> Entry:
        state = self._states.get(player)
        if state is None:
            return self._old[player]
        return state, self._vers[player]

    def get(self, player: str, default: Entry | None = None) -> Entry | None:  # type: ignore[override]
        state = self._states.get(player)
        if state is None:
            return self._old.get(player, default)
        return state, self._vers[player]

    def __contains__(self, player: object) -> bool:
        return player in self._states or player in self._old

    def __iter__(self) -> Iterator[str]:
        young = self._states
        yield from young
        yield from (player for player in self._old if player not in young)

    def __len__(self) -> int:
        young = self._states
        return len(young) + sum(1 for player in self._old if player not in young)

    def __bool__(self) -> bool:
        return bool(self._states) or bool(self._old)

    def clear(self) -> None:
        super().clear()
        self._old.clear()

    def forget(self, players: Iterable[str]) -> None:
        old = self._old
        for player in players:
            if self._states.pop(player, None) is not None:
                del self._vers[player]
            if old._states.pop(player, None) is not None:
                del old._vers[player]


class Overlay(Mapping[str, Entry]):
    """`newer` laid over `older` (e.g. what a write ahead leaves, over the cache): a lookup is
    two dict probes, where collections.ChainMap's runs a generator in Python. Both are Entries,
    so that compiled, a lookup calls their methods directly."""

    __slots__ = ("_newer", "_older")

    def __init__(self, newer: Entries, older: Entries) -> None:
        self._newer = newer
        self._older = older

    def __getitem__(self, player: str) -> Entry:
        hit = self._newer.get(player)
        return self._older[player] if hit is None else hit

    def get(self, player: str, default: Entry | None = None) -> Entry | None:  # type: ignore[override]
        hit = self._newer.get(player)
        return self._older.get(player, default) if hit is None else hit

    def __contains__(self, player: object) -> bool:
        return player in self._newer or player in self._older

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._older), **dict.fromkeys(self._newer)})

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __bool__(self) -> bool:  # not via __len__, which walks both
        return bool(self._newer) or bool(self._older)
