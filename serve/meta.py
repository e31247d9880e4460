"""Per-player metadata: the studio's small JSON object per player (display name, country, avatar,
...), kept in the pool's `{ns}:meta` hash (redis_layout/meta_codec.py: layout and limits).

`MetaStore` writes and reads it: `adr meta set/get/delete/prune` (meta_cli.py) as the ACL user
`adr-meta`, which may touch that one key and nothing else but see whether a player hash exists,
for `prune` (deploy/redis/acl-users.acl). `adr serve`
reads it with `read_many`, one HMGET for the rows of an answer, as its read-only user. The
consumer never reads or writes it: metadata costs the rating path nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Final

import redis

from redis_layout import CorruptValue, Keys
from redis_layout.meta_codec import (
    BadMeta,
    Meta,
    UnknownMetaVersion,
    decode_meta,
    encode_meta,
)
from runtime.logs import RepeatThrottle
from schemas import MAX_ID_BYTES

_log = logging.getLogger("adr.serve.meta")
_log.addFilter(RepeatThrottle())

PRUNE_PAGE: Final = 500
"""Entries of `{ns}:meta` per HSCAN page of `MetaStore.prune` (each up to 1 KiB with its value):
one round trip reads ~0.5 MB at most and one transaction removes at most that many fields."""
UNREADABLE: Final = ("corrupt", "version")
"""The reasons a stored value is left out of an answer (`read_many`'s `on_unreadable`)."""


def check_player_id(player: str) -> str:
    """`player` if it is 1-MAX_ID_BYTES bytes of UTF-8, else BadMeta."""
    try:
        size = len(player.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadMeta("player id: not valid Unicode") from None
    if not 1 <= size <= MAX_ID_BYTES:
        raise BadMeta(f"player id: must be 1-{MAX_ID_BYTES} bytes of UTF-8")
    return player


class MetaStore:
    """The metadata of one pool."""

    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self._r = client
        keys = Keys.of(namespace)
        self._key = keys.meta
        self._players_at = keys.players_at.encode()

    def set(self, player: str, meta: Mapping[str, object]) -> bool:
        """Replace the player's metadata with `meta` (BadMeta if it breaks a limit; nothing is
        written then). True if the player had none before."""
        value = encode_meta(meta)
        return bool(self._r.hset(self._key, check_player_id(player), value))

    def get(self, player: str) -> Meta | None:
        """The player's metadata, None if none (CorruptValue, UnknownMetaVersion as decoded)."""
        raw: bytes | None = self._r.hget(self._key, check_player_id(player))  # type: ignore[assignment]
        return None if raw is None else decode_meta(raw, self._key)

    def delete(self, player: str) -> bool:
        """Remove the player's metadata; False if there was none."""
        return bool(self._r.hdel(self._key, check_player_id(player)))

    def prune(self, page: int = PRUNE_PAGE, *, dry_run: bool = False) -> Iterator[bytes]:
        """Remove the metadata of every id that has no player hash (`{ns}:player:<id>`): a
        player the pool no longer holds, or an id that never played. Yields each id removed
        (with `dry_run`, each that would be; nothing is written), raw as stored.

        Paged: HSCAN of `page` entries at a time, then one EXISTS per id (pipelined), so the
        hash is never read whole and Redis is never held for long; an entry present for the
        whole run is seen (HSCAN's guarantee), one seen twice is checked twice (removed once).
        Per page the removal is one transaction under WATCH of the ids' player hashes: a
        player whose first counted kill creates the hash between the check and the removal
        aborts it, and the page is checked again, so an id with a player hash at the moment of
        the removal keeps its metadata. Idempotent: a second run finds nothing to remove.
        What it needs of Redis is `adr-meta`'s rules (deploy/redis/acl-users.acl): HSCAN and
        HDEL on `{ns}:meta`, MULTI/EXEC, and EXISTS/WATCH (read only) on the player hashes."""
        if page < 1:
            raise BadMeta("prune: the page size must be >= 1")
        cursor = 0
        while True:
            cursor, found = self._r.hscan(self._key, cursor, count=page)
            ids = [k if isinstance(k, bytes) else k.encode() for k in found]
            gone = self._without_hash(ids)
            if gone and not dry_run:
                gone = self._remove(gone)
            yield from gone
            if cursor == 0:
                return

    def _without_hash(self, ids: list[bytes]) -> list[bytes]:
        """Those of `ids` with no player hash now (one pipelined EXISTS each)."""
        if not ids:
            return []
        with self._r.pipeline(transaction=False) as pipe:
            for player in ids:
                pipe.exists(self._players_at + player)
            exists = pipe.execute()
        return [player for player, n in zip(ids, exists, strict=True) if not n]

    def _remove(self, ids: list[bytes]) -> list[bytes]:
        """HDEL of those of `ids` still without a player hash, atomically with that check
        (WATCH; a watched hash created meanwhile aborts the EXEC and the check is made again,
        without it: only hashes that do not exist are watched, so a live player's writes never
        abort it, and it ends after at most len(ids) + 1 tries). The ids this call removed (one
        another writer removed meanwhile is not among them)."""
        with self._r.pipeline(transaction=True) as pipe:
            while ids:
                try:
                    watched = [self._players_at + player for player in ids]
                    pipe.watch(*watched)  # type: ignore[no-untyped-call]
                    still = self._without_hash(ids)
                    if len(still) < len(ids):  # one appeared before the WATCH: watch the rest
                        ids = still
                        pipe.unwatch()
                        continue
                    pipe.multi()
                    for player in still:
                        pipe.hdel(self._key, player)
                    removed = pipe.execute()
                    return [p for p, n in zip(still, removed, strict=True) if n]
                except redis.WatchError:
                    ids = self._without_hash(ids)
        return []


def read_many(
    client: redis.Redis,
    keys: Keys,
    players: Sequence[str],
    on_unreadable: Callable[[str], object] | None = None,
) -> list[Meta | None]:
    """The metadata of each of `players` (None where it has none), one HMGET. A stored value
    that does not decode (written past the codec, or by a newer release) is left out (None):
    one player's bad value must not fail a page of fifty; `on_unreadable(reason)` counts it and
    it is logged, rate-limited."""
    if not players:
        return []
    raws: list[bytes | None] = client.hmget(keys.meta, list(players))  # type: ignore[assignment]
    out: list[Meta | None] = []
    for player, raw in zip(players, raws, strict=True):
        if raw is None:
            out.append(None)
            continue
        try:
            out.append(decode_meta(raw, keys.meta))
        except (CorruptValue, UnknownMetaVersion) as exc:
            reason = "version" if isinstance(exc, UnknownMetaVersion) else "corrupt"
            if on_unreadable is not None:
                on_unreadable(reason)
            _log.warning(
                "metadata left out", extra={"reason": reason, "player": player, "detail": str(exc)}
            )
            out.append(None)
    return out


class MetaReader:
    """`read_many` behind a short-lived per-player cache (the answer cache's ttl): the rows of
    a miss of the answer cache whose players' metadata was read within the ttl need no HMGET.
    Metadata changes when the studio sets it, not with every batch, so this adds no staleness
    beyond the answer cache's own. At most `max_entries` players are kept (all dropped when full:
    the next reads refill it). Thread-safe for the API's worker threads (dict operations)."""

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        ttl_s: float,
        on_unreadable: Callable[[str], object] | None = None,
        max_entries: int = 100_000,
    ) -> None:
        self._r = client
        self._keys = keys
        self._ttl_s = ttl_s
        self._on_unreadable = on_unreadable
        self._max = max_entries
        self._kept: dict[str, tuple[float, Meta | None]] = {}

    def read(self, players: Sequence[str]) -> list[Meta | None]:
        if self._ttl_s <= 0:
            return read_many(self._r, self._keys, players, self._on_unreadable)
        now = time.monotonic()
        found: dict[str, Meta | None] = {}
        for player in players:
            kept = self._kept.get(player)
            if kept is not None and now - kept[0] < self._ttl_s:
                found[player] = kept[1]
        missing = [p for p in dict.fromkeys(players) if p not in found]
        if missing:
            if len(self._kept) + len(missing) > self._max:
                self._kept.clear()
            for player, meta in zip(
                missing, read_many(self._r, self._keys, missing, self._on_unreadable), strict=True
            ):
                found[player] = meta
                self._kept[player] = (now, meta)
        return [found[p] for p in players]
