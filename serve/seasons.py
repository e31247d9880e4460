"""Seasons: `adr season close` archives the live board's final standings under a season id and
names the next season current (docs/api.md, "Seasons"); `adr serve` serves the archives.

The archive (season_close.lua, one atomic step between two consumer batches): `{ns}:seasons`
(a zset of closed season ids by closing time), per season `{ns}:season:<id>:lb` (the final
board, a copy of `{ns}:lb`), `{ns}:season:<id>:player:<player>` (the placed players' final mu,
sigma, tier, n, last_ts, ver) and `{ns}:season:<id>:meta`; `{ns}:season` names the running
season. An archive is never changed after it is written, so its answers may be cached long.

The same step schedules the next season's start at an event time T in `{ns}:season_schedule`
(redis_layout/season_schedule.py): by default just after every event time the pool's consumers
have accepted (the largest watermark + 1), or a later T the operator names. The consumer reads the
schedule with every batch: a player's first counted event at or after T takes the soft reset
(engine.season_step), and the first such event starts the new season's live board. The close is
refused when T is not after every accepted event time (an event already rated must not fall in
the new season) and when the season the last close scheduled has not started yet.

Every model has a soft reset, in its own scale (RatingModel.season_reset, docs/models.md,
"Seasons"). The pool mean the reset pulls toward, unless given: for ADR the tier job's published
μ̄_A (`{ns}:snapshot`), else μ0; for another model the mean of the `mu` field (its rating: Elo's
and Glicko-2's r, TrueSkill's and Weng–Lin's μ) of the players on the live board, the placed
players the close archives (the tier job's published mean is of the display rating, which for
TrueSkill is μ − 3σ: not the scale the reset moves μ in), else the model's initial rating. The
default `sigma_raise` is the model's (RatingModel.default_sigma_raise: the same share of its
initial uncertainty as ADR's 100 of 350; Elo, without one, refuses a raise). Both are written
into the schedule, so `adr replay --seasons` uses the same bits.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Sequence
from typing import Any, Final

import redis

from engine import (
    MODELS,
    EngineError,
    ParamError,
    Params,
    RatingModel,
    SeasonReset,
    SeasonSchedule,
    SeasonStart,
    check_seasons,
    model_named,
)
from redis_layout import CorruptValue, Keys, decode_snapshot, pool_model_parameters, scripts
from redis_layout.season_schedule import decode_schedule, encode_schedule
from serve._errors import ServeError

SEASON_ID: Final = re.compile(r"[A-Za-z0-9._-]{1,32}")
"""A season id: 1-32 letters, digits, `.`, `_`, `-` (it is part of key names and URLs)."""


class SeasonError(ServeError):
    """A season id that is not one, a season archived already, or a close refused (the start
    not after the accepted events, the last scheduled season not started, a raise of Elo's
    uncertainty, which it has none of)."""


_MEAN_CHUNK: Final = 10_000
"""Players per pipelined round trip when the close reads a model pool's ratings for its mean."""
_RETRIES: Final = 5
"""How often a close with the default start reads again when a consumer moved a watermark past
the start it computed (or the schedule changed) between its read and its script."""


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
    client: redis.Redis,
    namespace: str,
    season_id: str,
    next_id: str,
    now_ms: int | None = None,
    *,
    start_ms: int | None = None,
    reset: SeasonReset | None = None,
    pool_mean: float | None = None,
    topics: Sequence[str] = ("kill-events",),
    keep: float | None = None,
    sigma_raise: float | None = None,
) -> int:
    """Archive the live board as `season_id`, name `next_id` current and schedule its start at
    event time `start_ms` (None: just after every event time accepted on `topics`) with `reset`
    (None: `keep` and `sigma_raise`, each None for its default, the model's for sigma_raise)
    toward `pool_mean` (None: the model's pool mean, module docstring); returns the number of
    placed players archived. SeasonError if refused (module docstring)."""
    check_season_id(season_id)
    check_season_id(next_id)
    if season_id == next_id:
        raise SeasonError("the next season needs an id of its own")
    if start_ms is not None and not 0 <= start_ms < 2**53:
        raise SeasonError(f"the next season's start must be an event time in ms, got {start_ms}")
    keys = Keys.of(namespace)
    model = _pool_model(client, keys)
    if reset is None:
        try:
            reset = SeasonReset(
                SeasonReset().keep if keep is None else keep,
                model.default_sigma_raise() if sigma_raise is None else sigma_raise,
            )
        except EngineError as exc:
            raise SeasonError(str(exc)) from None
    try:  # what the model cannot apply (an uncertainty raise for Elo), as replay refuses it
        check_seasons(model, SeasonSchedule((SeasonStart(next_id, 0, 0.0, reset),)))
    except ParamError as exc:
        raise SeasonError(str(exc).replace("sigma_raise", "--sigma-raise")) from None
    closed_at = int(time.time() * 1000) if now_ms is None else now_ms
    watermark_keys = [keys.watermarks(t) for t in topics]
    if client.exists(keys.pop) and not client.exists(*watermark_keys):
        # a pool rated from another topic: its watermarks, not these, bound the start
        raise SeasonError(
            f"the pool has players but no watermarks for topic(s) {', '.join(topics)}: "
            "name the topic its consumers read (--topic, ADR_TOPIC)"
        )
    for attempt in range(_RETRIES):
        if is_closed(client, namespace, season_id):  # the script checks again, atomically
            raise SeasonError(f"season {season_id} is archived already")
        version, schedule, ladder = _read_schedule(client, keys)
        if ladder != len(schedule.starts):
            raise SeasonError(
                f"season {schedule.starts[-1].id} (scheduled by the last close) has had no "
                "counted event yet: close it once it has started"
            )
        start = start_ms
        if start is None:
            accepted = _largest_watermark(client, watermark_keys)
            start = 0 if accepted is None else accepted + 1
        mean = _pool_mean(client, keys, model) if pool_mean is None else pool_mean
        try:
            new = SeasonSchedule(
                (*schedule.starts, SeasonStart(next_id, start, mean, reset)),
                version=version + 1,
            )
        except EngineError as exc:
            raise SeasonError(str(exc)) from None
        try:
            return int(
                client.eval(
                    scripts.SEASON_CLOSE,
                    4 + len(watermark_keys),
                    keys.lb,
                    keys.seasons,
                    keys.current_season,
                    keys.season_schedule,
                    *watermark_keys,
                    season_id,
                    closed_at,
                    next_id,
                    keys.player_prefix,
                    keys.season_prefix(season_id),
                    version,
                    new.version,
                    encode_schedule(new),
                    start,
                    ladder,
                )
            )
        except redis.ResponseError as exc:
            text = str(exc)
            code = text.split(" ", 1)[0]
            retry = code == "STALE" or (code == "LATE" and start_ms is None)
            if retry and attempt + 1 < _RETRIES:
                continue
            if code in ("EXISTS", "STALE", "NOTSTARTED", "LATE"):
                raise SeasonError(text.removeprefix(code + " ")) from None
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def season_schedule(client: redis.Redis, namespace: str) -> SeasonSchedule:
    """The pool's season schedule (what `adr replay --seasons` reads)."""
    return _read_schedule(client, Keys.of(namespace))[1]


def _read_schedule(client: redis.Redis, keys: Keys) -> tuple[int, SeasonSchedule, int]:
    version, text, ladder = client.hmget(keys.season_schedule, "version", "seasons", "ladder")
    if text is None:
        return int(version or 0), SeasonSchedule(), int(ladder or 0)
    try:
        schedule = decode_schedule(text)
    except ValueError as exc:
        raise SeasonError(f"{keys.season_schedule}: {exc}") from None
    return int(version or 0), schedule, int(ladder or 0)


def _largest_watermark(client: redis.Redis, watermark_keys: list[str]) -> int | None:
    largest: int | None = None
    for key in watermark_keys:
        for value in client.hvals(key):
            try:
                ts = int(value)
            except ValueError:
                continue  # the consumer's write skips it too
            largest = ts if largest is None else max(largest, ts)
    return largest


def _pool_model(client: redis.Redis, keys: Keys) -> RatingModel[Any]:
    """The pool's model built from the parameters `{ns}:model` records (ADR: the default
    Params, of which only the default raise is read)."""
    name, parameters = pool_model_parameters(client, keys)
    if name == MODELS[0]:
        return model_named(name)
    try:
        return model_named(name, parameters)
    except EngineError as exc:
        raise SeasonError(f"{keys.model}: {exc}") from None


def _pool_mean(client: redis.Redis, keys: Keys, model: RatingModel[Any]) -> float:
    """ADR: μ̄_A as the tier job last published it, else μ0 (nothing published yet). Another
    model: the mean of the `mu` field of the players on the live board (module docstring),
    correctly rounded (math.fsum), else its initial rating (nobody placed yet)."""
    if model.name == MODELS[0]:
        try:
            decoded = decode_snapshot(client.hgetall(keys.snapshot), keys.snapshot)
        except CorruptValue:
            decoded = None
        return Params().mu0 if decoded is None else decoded[1].mean_mu_active
    ratings: list[float] = []
    members = client.zrange(keys.lb, 0, -1)
    for i in range(0, len(members), _MEAN_CHUNK):
        pipe = client.pipeline(transaction=False)
        for member in members[i : i + _MEAN_CHUNK]:
            pipe.hget(keys.player_prefix + _text(member), "mu")
        for value in pipe.execute():
            try:
                rating = float(value)
            except (TypeError, ValueError):
                continue  # a member without a readable hash: left out of the mean
            if math.isfinite(rating):
                ratings.append(rating)
    if not ratings:
        return float(model.to_fields(model.new_player())[0])
    return math.fsum(ratings) / len(ratings)


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
