"""The HTTP API of `adr serve` (docs/api.md): Litestar routes over leaderboard.Board, one Board
per tie policy, every read as the pool's read-only user. Handlers are plain functions run in worker
threads (Board is redis-py's blocking client); the event loop only parses and answers."""

# No `from __future__ import annotations`: the handlers' parameter types are built per app
# (limits from the config), and Litestar reads them from the live annotations.

import hashlib
import logging
from collections.abc import Callable
from importlib import resources
from typing import Annotated, Any

import msgspec
import redis
from litestar import Litestar, MediaType, Request, Response, get
from litestar.exceptions import ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.params import Parameter, PathParameter
from litestar.static_files import create_static_files_router
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from leaderboard import Board, Entry, PlayerNotFound
from redis_layout import CorruptValue, LayoutError, UnknownLayout, check_layout
from redis_layout.keys import Keys
from runtime import redact_text
from runtime.logs import RepeatThrottle
from serve._answer_cache import AnswerCache
from serve._config import Config
from serve._cursor import decode_cursor, encode_cursor
from serve._errors import BadCursor
from serve._metrics import Metrics
from serve._models import (
    CurrentSeason,
    PlayerProfile,
    Point,
    Problem,
    Row,
    Rows,
    Season,
    Seasons,
    TierRow,
    Tiers,
    TiesName,
    TopPage,
)
from serve._tiers import read_tiers
from serve.meta import MetaReader
from serve.seasons import (
    SeasonError,
    check_season_id,
    closed_seasons,
    current_season,
    is_closed,
)

_log = logging.getLogger("adr.serve")
_log.addFilter(RepeatThrottle())

_Ties = Annotated[
    TiesName | None,
    Parameter(description="tie policy of the ranks: unique or shared (default: the server's)"),
]


def create_app(config: Config, client: redis.Redis, registry: CollectorRegistry) -> Litestar:
    """The API over the pool `config.namespace`, reading through `client`."""
    boards = {ties: Board(client, config.namespace, ties) for ties in ("unique", "shared")}
    keys = Keys.of(config.namespace)
    metrics = Metrics(registry)
    meta_reader = MetaReader(
        client, keys, config.answer_cache_ttl, metrics.meta_unreadable.labels_inc
    )
    answer_cache = AnswerCache(config.answer_cache_ttl, config.answer_cache_bytes, registry)
    live_cache = f"public, max-age={config.cache_max_age}"
    id_help = f"a player id, 1-{config.max_id_bytes} bytes of UTF-8"
    Player = Annotated[str, Parameter(description=id_help, min_length=1)]
    Size = Annotated[
        int,
        Parameter(ge=1, le=config.max_page_size, description="rows (at most the server's limit)"),
    ]

    def with_meta(entries: list[Entry]) -> list[Row]:
        """The rows with each player's metadata (one HMGET; none when there are no rows)."""
        metas = meta_reader.read([e.player for e in entries])
        return [Row(e.rank, e.player, e.mu, e.tier, m) for e, m in zip(entries, metas, strict=True)]

    def board(ties: str | None) -> tuple[TiesName, Board]:
        name: TiesName = ties or config.ties  # type: ignore[assignment]
        return name, boards[name]

    def player_id(value: str, what: str = "player") -> str:
        if not value or len(value.encode("utf-8", "surrogatepass")) > config.max_id_bytes:
            raise ValidationException(f"{what}: must be {id_help}")
        return value

    @get("/v1/top", sync_to_thread=True, summary="A page of the leaderboard, best first")
    def top(
        request: Request[Any, Any, Any],
        limit: Size = config.page_size,
        cursor: Annotated[
            str | None, Parameter(description="next_cursor of the previous page")
        ] = None,
        ties: _Ties = None,
    ) -> Response[TopPage]:
        name, b = board(ties)
        after = None if cursor is None else decode_cursor(cursor, config.max_id_bytes)
        page = b.page(after, limit)
        nxt = None if page.next_after is None else encode_cursor(*page.next_after)
        return _cached(request, TopPage(name, with_meta(page.entries), nxt), live_cache)

    @get("/v1/rank", sync_to_thread=True, summary="One player's rank, μ and tier")
    def rank(request: Request[Any, Any, Any], player: Player, ties: _Ties = None) -> Response[Row]:
        _, b = board(ties)
        return _cached(request, with_meta([b.rank(player_id(player))])[0], live_cache)

    @get("/v1/around", sync_to_thread=True, summary="The placed players within k ranks of one")
    def around(
        request: Request[Any, Any, Any],
        player: Player,
        k: Annotated[int, Parameter(ge=0, le=config.max_page_size // 2)] = 5,
        ties: _Ties = None,
    ) -> Response[Rows]:
        name, b = board(ties)
        return _cached(request, Rows(name, with_meta(b.around(player_id(player), k))), live_cache)

    @get("/v1/friends", sync_to_thread=True, summary="The placed players among the ids, best first")
    def friends(
        request: Request[Any, Any, Any],
        id: Annotated[
            list[str],
            Parameter(
                min_items=1,
                max_items=config.max_friends,
                description=f"player ids, repeated (?id=a&id=b), at most {config.max_friends}",
            ),
        ],
        ties: _Ties = None,
    ) -> Response[Rows]:
        name, b = board(ties)
        ids = [player_id(i, "id") for i in id]
        return _cached(request, Rows(name, with_meta(b.friends(ids))), live_cache)

    @get("/v1/profile", sync_to_thread=True, summary="A player's standing, state and history")
    def profile(
        request: Request[Any, Any, Any], player: Player, ties: _Ties = None
    ) -> Response[PlayerProfile]:
        name, b = board(ties)
        p = b.profile(player_id(player), config.history_points)
        points = [Point(h.epoch, h.seq, h.ts, h.mu, h.sigma, h.tier) for h in p.history]
        (meta,) = meta_reader.read([p.player])
        answer = PlayerProfile(
            name, p.player, p.rank, p.mu, p.sigma, p.tier, p.events, p.last_ts, p.version, points,
            meta,
        )  # fmt: skip
        return _cached(request, answer, live_cache)

    layout_checked: list[bool] = []

    @get("/v1/tiers", sync_to_thread=True, summary="Players per tier and the tier boundaries")
    def tiers(request: Request[Any, Any, Any]) -> Response[Tiers]:
        if not layout_checked:  # as a Board checks it, once: an unknown layout is a 503
            check_layout(client, keys)
            layout_checked.append(True)
        state = read_tiers(client, keys, config.params.tier_shares)
        rows = [TierRow(*row) for row in state.counts]
        answer = Tiers(state.placed, state.tracked, state.version, state.computed_at, rows)
        return _cached(request, answer, live_cache)

    archive_cache = "public, max-age=86400"
    archives: dict[tuple[str, str], Board] = {}

    def archived(season: str, ties: str | None) -> tuple[TiesName, Board]:
        try:
            check_season_id(season)
        except SeasonError as exc:
            raise ValidationException(str(exc)) from None
        name: TiesName = ties or config.ties  # type: ignore[assignment]
        found = archives.get((season, name))
        if found is None:
            if not is_closed(client, config.namespace, season):
                raise PlayerNotFound(f"no closed season {season!r}")
            found = archives[(season, name)] = Board(client, config.namespace, name, season)
        return name, found

    @get("/v1/seasons", sync_to_thread=True, summary="The closed seasons and the current one")
    def seasons(request: Request[Any, Any, Any]) -> Response[Seasons]:
        current = current_season(client, config.namespace)
        answer = Seasons(
            None if current is None else CurrentSeason(current.id, current.started_at),
            [
                Season(s.id, s.closed_at, s.players)
                for s in closed_seasons(client, config.namespace)
            ],
        )
        return _cached(request, answer, live_cache)

    @get(
        "/v1/seasons/{season:str}/top", sync_to_thread=True, summary="A closed season's final board"
    )
    def season_top(
        request: Request[Any, Any, Any],
        season: Annotated[str, PathParameter(description="a closed season's id")],
        limit: Size = config.page_size,
        cursor: Annotated[
            str | None, Parameter(description="next_cursor of the previous page")
        ] = None,
        ties: _Ties = None,
    ) -> Response[TopPage]:
        name, b = archived(season, ties)
        after = None if cursor is None else decode_cursor(cursor, config.max_id_bytes)
        page = b.page(after, limit)
        nxt = None if page.next_after is None else encode_cursor(*page.next_after)
        return _cached(request, TopPage(name, with_meta(page.entries), nxt), archive_cache)

    @get("/v1/seasons/{season:str}/rank", sync_to_thread=True, summary="A player's final standing")
    def season_rank(
        request: Request[Any, Any, Any],
        season: Annotated[str, PathParameter(description="a closed season's id")],
        player: Player,
        ties: _Ties = None,
    ) -> Response[Row]:
        _, b = archived(season, ties)
        return _cached(request, with_meta([b.rank(player_id(player))])[0], archive_cache)

    @get("/livez", sync_to_thread=False, include_in_schema=False)
    def livez() -> str:
        return "ok\n"

    @get("/readyz", sync_to_thread=True, include_in_schema=False)
    def readyz() -> Response[str]:
        ok, detail = readiness(client, keys)
        return Response(
            f"{'ready' if ok else 'not ready'} {detail}\n", status_code=200 if ok else 503
        )

    @get("/metrics", sync_to_thread=False, include_in_schema=False)
    def scrape() -> Response[bytes]:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    handlers: dict[type[Exception], Callable[..., Response[Any]]] = {
        PlayerNotFound: lambda _, exc: _problem(404, str(exc)),
        BadCursor: lambda _, exc: _problem(400, str(exc)),
        UnknownLayout: _unavailable(metrics, "layout"),
        redis.exceptions.NoPermissionError: _unavailable(metrics, "denied"),
        redis.exceptions.AuthenticationError: _unavailable(metrics, "denied"),
        redis.RedisError: _unavailable(metrics, "redis"),
        CorruptValue: _unavailable(metrics, "corrupt", 500),
    }
    static = create_static_files_router(
        path="/",
        directories=[resources.files("serve") / "static"],  # type: ignore[list-item]
        html_mode=True,
        include_in_schema=False,
    )
    return Litestar(
        [
            top,
            rank,
            around,
            friends,
            profile,
            tiers,
            seasons,
            season_top,
            season_rank,
            livez,
            readyz,
            scrape,
            static,
        ],
        exception_handlers=handlers,  # type: ignore[arg-type]
        middleware=[metrics.middleware, answer_cache.middleware],
        openapi_config=OpenAPIConfig(
            title="adr-stream leaderboard API",
            version="1",
            description="Read-only leaderboards of one rating pool (docs/api.md).",
            # The document as JSON only, at /schema and /schema/openapi.json: the HTML viewers
            # Litestar offers (ReDoc by default) load their scripts from a CDN, which a page of
            # this server must not make a browser fetch.
            render_plugins=[JsonRenderPlugin(path=["/", "/openapi.json"])],
        ),
        logging_config=None,
    )


def readiness(client: redis.Redis, keys: Keys) -> tuple[bool, str]:
    """Whether the pool answers and holds a layout this release reads, and a one-line detail."""
    try:
        client.ping()
        check_layout(client, keys)
    except (redis.RedisError, LayoutError) as exc:
        return False, redact_text(str(exc))
    return True, f"pool {keys.namespace}"


def _cached(request: Request[Any, Any, Any], answer: object, cache_control: str) -> Response[Any]:
    """The answer as JSON with a strong ETag of its bytes; 304 when the client has them."""
    body = msgspec.json.encode(answer)
    etag = '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'
    headers = {"ETag": etag, "Cache-Control": cache_control}
    match = request.headers.get("if-none-match")
    if match is not None and (match.strip() == "*" or etag in _etags(match)):
        return Response(b"", status_code=304, headers=headers)
    return Response(body, media_type=MediaType.JSON, headers=headers)


def _etags(header: str) -> set[str]:
    return {t.strip().removeprefix("W/") for t in header.split(",")}


def _problem(status: int, detail: str) -> Response[Problem]:
    return Response(
        Problem(status, detail), status_code=status, headers={"Cache-Control": "no-store"}
    )


def _unavailable(
    metrics: Metrics, reason: str, status: int = 503
) -> Callable[[Request[Any, Any, Any], Exception], Response[Problem]]:
    """A handler for a failure of the pool (not of the request): counted, logged rate-limited,
    answered with the reason (redacted) and no data."""

    def handle(_: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
        metrics.failures.labels(reason).inc()
        detail = redact_text(str(exc))
        _log.warning("read failed: %s", reason, extra={"reason": reason, "detail": detail})
        return _problem(status, f"{reason}: {detail}")

    return handle
