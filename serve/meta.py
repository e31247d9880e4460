"""Per-player metadata: the studio's small JSON object per player (display name, country, avatar,
...), kept in the pool's `{ns}:meta` hash (redis_layout/meta_codec.py: layout and limits).

`MetaStore` writes and reads it: `adr meta set/get/delete` (meta_cli.py) as the ACL user
`adr-meta`, which may touch that one key and nothing else (deploy/redis/acl-users.acl). `adr serve`
reads it with `read_many`, one HMGET for the rows of an answer, as its read-only user. The
consumer never reads or writes it: metadata costs the rating path nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
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
        self._key = Keys.of(namespace).meta

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
