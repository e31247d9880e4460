"""Seasons: `adr season close` archives the live board's final standings under a season id and
names the next season current (docs/api.md, "Seasons"); `adr serve` serves the archives.

The archive (season_close.lua, one atomic step between two consumer batches): `{ns}:seasons`
(a zset of closed season ids by closing time), per season `{ns}:season:<id>:lb` (the final
board, a copy of `{ns}:lb`), `{ns}:season:<id>:player:<player>` (the placed players' final mu,
sigma, tier, n, last_ts, ver) and `{ns}:season:<id>:meta`; `{ns}:season` names the running
season. An archive is never changed after it is written, so its answers may be cached long.

Not done here: restarting the live ladder for the new season and the soft reset of each player at
their first event of it (engine.soft_reset) are the consumer's part, which does not read
`{ns}:season` yet.
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Final

import redis

from redis_layout import Keys, scripts
from serve._errors import ServeError

SEASON_ID: Final = re.compile(r"[A-Za-z0-9._-]{1,32}")
"""A season id: 1-32 letters, digits, `.`, `_`, `-` (it is part of key names and URLs)."""


class SeasonError(ServeError):
    """A season id that is not one, or a season archived already."""


@dataclasses.dataclass(frozen=True, slots=True)
class ClosedSeason:
    id: str
    closed_at: int
    players: int


@dataclasses.dataclass(frozen=True, slots=True)
class CurrentSeason:
    id: str
    started_at: int


def check_season_id(season_id: str) -> str:
    if not SEASON_ID.fullmatch(season_id):
        shown = season_id if len(season_id) <= 40 else season_id[:40] + "…"
        raise SeasonError(f"bad season id {shown!r}: 1-32 of A-Z a-z 0-9 . _ -")
    return season_id


def close_season(
    client: redis.Redis, namespace: str, season_id: str, next_id: str, now_ms: int | None = None
) -> int:
    """Archive the live board as `season_id` and name `next_id` current; returns the number of
    placed players archived. SeasonError if `season_id` is archived already."""
    check_season_id(season_id)
    check_season_id(next_id)
    if season_id == next_id:
        raise SeasonError("the next season needs an id of its own")
    keys = Keys.of(namespace)
    closed_at = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        return int(
            client.eval(
                scripts.SEASON_CLOSE,
                3,
                keys.lb,
                keys.seasons,
                keys.current_season,
                season_id,
                closed_at,
                next_id,
                keys.player_prefix,
                keys.season_prefix(season_id),
            )
        )
    except redis.ResponseError as exc:
        if "is archived already" in str(exc):
            raise SeasonError(str(exc).removeprefix("EXISTS ")) from None
        raise


def closed_seasons(client: redis.Redis, namespace: str) -> list[ClosedSeason]:
    """The closed seasons, oldest first (one ZRANGE, then one pipelined HGET each)."""
    keys = Keys.of(namespace)
    ids = [_text(i) for i in client.zrange(keys.seasons, 0, -1)]
    pipe = client.pipeline(transaction=False)
    for season_id in ids:
        pipe.hmget(keys.season_prefix(season_id) + "meta", "closed_at", "players")
    return [
        ClosedSeason(season_id, int(closed_at or 0), int(players or 0))
        for season_id, (closed_at, players) in zip(ids, pipe.execute(), strict=True)
    ]


def is_closed(client: redis.Redis, namespace: str, season_id: str) -> bool:
    return client.zscore(Keys.of(namespace).seasons, season_id) is not None


def current_season(client: redis.Redis, namespace: str) -> CurrentSeason | None:
    season_id, started_at = client.hmget(Keys.of(namespace).current_season, "id", "started_at")
    if season_id is None:
        return None
    return CurrentSeason(_text(season_id), int(started_at or 0))


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
