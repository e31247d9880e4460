"""`adr serve`'s HTTP API on a real redis-server, read as the shipped read-only user: the answers,
pages and their cursors, the tie policies, the caching headers, the limits on every input with a
4xx that says why (never a 500: hypothesis over the inputs), probes and metrics."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar.testing import TestClient

from serve import encode_cursor
from tests.http_api.conftest import BOUNDARIES, HISTORY, META, ORDER, PLAYERS

pytestmark = pytest.mark.integration

MU = {p: mu for p, mu, _ in PLAYERS}
TIER = {p: t or None for p, _, t in PLAYERS}


def _row(rank: int | None, player: str) -> dict[str, Any]:
    meta = META.get(player)
    return {"rank": rank, "player": player, "mu": MU[player], "tier": TIER[player], "meta": meta}


def test_top_walks_the_board_in_pages_with_cursors(api: TestClient) -> None:  # type: ignore[type-arg]
    rows: list[dict[str, Any]] = []
    cursor = None
    for _ in range(10):
        params: dict[str, Any] = {"limit": 3}
        if cursor:
            params["cursor"] = cursor
        page = api.get("/v1/top", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        rows += body["rows"]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert rows == [_row(i + 1, p) for i, p in enumerate(ORDER)]


def test_shared_ranks_tie_equal_ratings(api: TestClient) -> None:  # type: ignore[type-arg]
    body = api.get("/v1/top", params={"limit": 50, "ties": "shared"}).json()
    assert body["ties"] == "shared"
    assert [r["rank"] for r in body["rows"]] == [1, 2, 2, 4, 4, 6, 7]
    assert api.get("/v1/rank", params={"player": "bob", "ties": "shared"}).json()["rank"] == 2
    assert api.get("/v1/rank", params={"player": "bob"}).json() == _row(3, "bob")


def test_rank_around_friends_profile_and_tiers(api: TestClient) -> None:  # type: ignore[type-arg]
    assert api.get("/v1/rank", params={"player": "frank"}).json() == _row(None, "frank")
    around = api.get("/v1/around", params={"player": "bob", "k": 1}).json()
    assert around["rows"] == [_row(2, "carol"), _row(3, "bob"), _row(4, "dave")]
    friends = api.get("/v1/friends", params=[("id", "erin"), ("id", "alice"), ("id", "frank"),
                                             ("id", "nobody")]).json()  # fmt: skip
    assert friends["rows"] == [_row(1, "alice"), _row(2, "erin")]
    profile = api.get("/v1/profile", params={"player": "alice"}).json()
    assert profile | {"history": None} == {
        "ties": "unique", "player": "alice", "rank": 1, "mu": 1500.5, "sigma": 80.0,
        "tier": "1H", "events": 30, "last_seen_ms": 1700, "version": 30, "history": None,
        "meta": META["alice"],
    }  # fmt: skip
    assert [(p["seq"], p["mu"]) for p in profile["history"]] == [
        (h.seq, h.mu) for h in HISTORY[-5:]
    ]
    tiers = api.get("/v1/tiers").json()
    assert (tiers["placed"], tiers["tracked"], tiers["calibration_version"]) == (7, 8, 3)
    by_tier = {r["tier"]: r for r in tiers["rows"]}
    assert by_tier["1H"]["players"] == 1 and by_tier["5L"]["players"] == 4
    assert [r["lower_bound"] for r in tiers["rows"]] == [*BOUNDARIES, None]


@pytest.mark.parametrize(
    ("path", "params", "status", "why"),
    [
        ("/v1/rank", {"player": "nobody"}, 404, "no player"),
        ("/v1/around", {"player": "frank"}, 404, "not on the leaderboard"),
        ("/v1/profile", {"player": "nobody"}, 404, "no player"),
        ("/v1/top", {"cursor": "not-a-cursor!"}, 400, "bad cursor"),
        ("/v1/top", {"cursor": "x" * 500}, 400, "longer than"),
        ("/v1/top", {"limit": 0}, 400, ">= 1"),
        ("/v1/top", {"limit": 51}, 400, "<= 50"),
        ("/v1/top", {"limit": "ten"}, 400, "Expected `int`"),
        ("/v1/top", {"ties": "dense"}, 400, "ties"),
        ("/v1/rank", {}, 400, "player"),
        ("/v1/rank", {"player": "x" * 65}, 400, "1-64 bytes"),
        ("/v1/rank", {"player": "é" * 33}, 400, "1-64 bytes"),
        ("/v1/around", {"player": "bob", "k": -1}, 400, ">= 0"),
        ("/v1/friends", [("id", str(i)) for i in range(11)], 400, "length <= 10"),
        ("/v1/friends", [("id", "a"), ("id", "y" * 65)], 400, "1-64 bytes"),
        ("/v1/friends", {}, 400, "id"),
    ],
)
def test_bad_input_gets_a_4xx_that_says_why(
    api: TestClient,  # type: ignore[type-arg]
    path: str,
    params: Any,
    status: int,
    why: str,
) -> None:
    answer = api.get(path, params=params)
    assert answer.status_code == status, answer.text
    assert why in answer.text


def test_a_cursor_past_the_end_or_of_a_player_gone_still_continues_in_order(
    api: TestClient,  # type: ignore[type-arg]
) -> None:
    """A cursor names a position: after (1200.0, "bz") come bob (1200.0, "bob" < "bz") and on."""
    body = api.get("/v1/top", params={"cursor": encode_cursor(1200.0, "bz"), "limit": 50}).json()
    assert [r["player"] for r in body["rows"]] == ORDER[2:]
    body = api.get("/v1/top", params={"cursor": encode_cursor(-1.0, "z")}).json()
    assert body == {"ties": "unique", "rows": [], "next_cursor": None}


def test_etag_and_cache_control(api: TestClient) -> None:  # type: ignore[type-arg]
    first = api.get("/v1/top", params={"limit": 2})
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "public, max-age=2"
    again = api.get("/v1/top", params={"limit": 2}, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    other = api.get("/v1/top", params={"limit": 3}, headers={"If-None-Match": etag})
    assert other.status_code == 200 and other.headers["etag"] != etag
    missing = api.get("/v1/rank", params={"player": "nobody"})
    assert missing.headers["cache-control"] == "no-store"


def test_probes_metrics_and_the_openapi_document(api: TestClient) -> None:  # type: ignore[type-arg]
    assert api.get("/livez").text == "ok\n"
    ready = api.get("/readyz")
    assert ready.status_code == 200 and ready.text.startswith("ready")
    api.get("/v1/rank", params={"player": "alice"})
    metrics = api.get("/metrics").text
    assert 'adr_serve_requests_total{code="200",route="/v1/rank"}' in metrics
    assert "adr_serve_request_seconds_bucket" in metrics
    doc = api.get("/schema/openapi.json").json()
    assert api.get("/schema").json() == doc  # JSON only: no viewer page that loads a CDN
    assert {"/v1/top", "/v1/rank", "/v1/around", "/v1/friends", "/v1/profile", "/v1/tiers"} <= set(
        doc["paths"]
    )


def test_every_read_was_allowed_to_the_read_only_user(
    api: TestClient,  # type: ignore[type-arg]
    admin: redis.Redis,
) -> None:
    admin.acl_log_reset()  # other tests' refusals on purpose
    for path, params in [
        ("/v1/top", {"limit": 3}),
        ("/v1/rank", {"player": "bob"}),
        ("/v1/around", {"player": "bob"}),
        ("/v1/friends", {"id": "bob"}),
        ("/v1/profile", {"player": "alice"}),
        ("/v1/tiers", {}),
        ("/v1/seasons", {}),
    ]:
        assert api.get(path, params=params).status_code == 200
    assert admin.acl_log() == []


_TEXT = st.text(max_size=80)
_VALUE = st.one_of(_TEXT, st.integers().map(str), st.floats().map(str), st.just(""))
_PARAMS = st.lists(
    st.tuples(st.sampled_from(["player", "limit", "cursor", "k", "id", "ties", "x"]), _VALUE),
    max_size=6,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    path=st.one_of(
        st.sampled_from(["/v1/top", "/v1/rank", "/v1/around", "/v1/friends", "/v1/profile"]),
        st.builds(
            lambda season, end: f"/v1/seasons/{quote(season, safe='')}/{end}",
            st.text(min_size=1, max_size=40),
            st.sampled_from(["top", "rank"]),
        ),
    ),
    params=_PARAMS,
)
def test_no_input_gets_a_5xx(
    api: TestClient,  # type: ignore[type-arg]
    path: str,
    params: list[tuple[str, str]],
) -> None:
    answer = api.get(path, params=params)
    assert answer.status_code < 500, (answer.status_code, answer.text)
    if answer.status_code >= 400:
        assert answer.json()["detail"]


def test_an_unknown_layout_or_a_refused_read_is_a_503_with_the_reason(
    acl_server: Any, admin: redis.Redis, reader: redis.Redis
) -> None:
    from prometheus_client import CollectorRegistry

    from redis_layout import Keys
    from serve import Config, create_app
    from tests.http_api.conftest import seed

    keys = Keys("future")
    seed(admin, keys)
    admin.set(keys.layout, "99")
    with TestClient(create_app(Config(namespace="future"), admin, CollectorRegistry())) as c:
        answer = c.get("/v1/top")
        assert answer.status_code == 503 and "layout" in answer.json()["detail"]
        assert c.get("/readyz").status_code == 503
        assert 'adr_serve_read_failures_total{reason="layout"} 1.0' in c.get("/metrics").text
    # The reader user of pool adr may not read pool "future": NOPERM, reported as such.
    with TestClient(create_app(Config(namespace="future"), reader, CollectorRegistry())) as c:
        answer = c.get("/v1/rank", params={"player": "alice"})
        assert answer.status_code == 503 and answer.json()["detail"].startswith("denied")


def test_redis_down_is_a_503_and_not_ready() -> None:
    from prometheus_client import CollectorRegistry

    from serve import Config, create_app
    from stack._ports import free_port

    down = redis.Redis(port=free_port(), socket_connect_timeout=1)
    with TestClient(create_app(Config(), down, CollectorRegistry())) as c:
        answer = c.get("/v1/rank", params={"player": "alice"})
        assert answer.status_code == 503 and answer.json()["detail"].startswith("redis")
        assert c.get("/readyz").status_code == 503
        assert c.get("/livez").status_code == 200


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ({"ties": "dense"}, "--ties"),
        ({"page_size": 0}, "--page-size"),
        ({"page_size": 300}, "<= --max-page-size"),
        ({"threads": 100}, "<= --redis-connections"),
        ({"port": -1}, "--port"),
        ({"answer_cache_ttl": -1}, "--answer-cache-ttl"),
        ({"answer_cache_ttl": 61}, "--answer-cache-ttl"),
        ({"answer_cache_bytes": -1}, "--answer-cache-bytes"),
    ],
)
def test_settings_that_cannot_be_used_are_refused(settings: dict[str, Any], why: str) -> None:
    from serve import Config, ServeError

    with pytest.raises(ServeError, match=why):
        Config(**settings)


def test_tiers_is_one_read_of_one_state(
    api: TestClient,  # type: ignore[type-arg]
    admin: redis.Redis,
) -> None:
    """/v1/tiers sends Redis one command (a read-only script that reads the counts, the tracked
    count and the boundaries), not a script and then a read: MONITOR shows what the app sent."""
    import threading

    api.get("/v1/tiers")  # the layout check of the first read is behind us
    seen: list[dict[str, Any]] = []
    ready = threading.Event()

    def watch() -> None:
        with admin.monitor() as monitor:
            ready.set()
            for command in monitor.listen():
                if command["command"] == "ECHO end-of-tiers":
                    return
                seen.append(command)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert ready.wait(10)
    time.sleep(0.2)  # MONITOR is registered once its reply is read
    assert api.get("/v1/tiers").status_code == 200
    redis.Redis(connection_pool=admin.connection_pool).echo("end-of-tiers")
    watcher.join(10)
    handshake = {"HELLO", "CLIENT", "AUTH"}  # the ECHO's new connection
    sent = [c["command"].split()[0].upper() for c in seen if c.get("client_type") != "lua"]
    sent = [c for c in sent if c not in handshake]
    inside = {c["command"].split()[0].upper() for c in seen if c.get("client_type") == "lua"}
    assert sent in (["EVALSHA_RO"], ["EVALSHA_RO", "EVAL_RO"]), seen
    assert {"HGETALL", "HGET", "HMGET"} <= inside
