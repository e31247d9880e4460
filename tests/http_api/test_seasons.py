"""Seasons on a real redis-server: `adr season close` archives the board in one atomic step
(even while the board is written: every archived player's fields agree with the archived board),
refuses an id archived already, names the next season; `adr serve` serves the archive."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
import redis
from litestar.testing import TestClient
from prometheus_client import CollectorRegistry

from engine import (
    TIER_LABELS,
    SeasonReset,
    SeasonSchedule,
    SeasonStart,
    Snapshot,
    model_named,
    model_parameters,
)
from leaderboard import Board
from redis_layout import Keys, model_stamp, stamp_layout, stamp_model
from redis_layout.player_codec import FIELDS, model_values
from redis_layout.season_schedule import decode_schedule
from serve import Config, create_app
from serve.seasons import (
    CurrentSeason,
    SeasonError,
    close_season,
    closed_seasons,
    current_season,
    season_schedule,
)

pytestmark = pytest.mark.integration


def _seed(client: redis.Redis, keys: Keys, n: int) -> None:
    pipe = client.pipeline()
    for i in range(n):
        pid, mu = f"p{i:04d}", 1000.0 + i
        pipe.hset(keys.player(pid), mapping={"mu": repr(mu), "sigma": "80.0", "tier": "3M",
                                             "n": "20", "last_ts": "5", "ver": "20"})  # fmt: skip
        pipe.zadd(keys.lb, {pid: mu})
    pipe.execute()
    stamp_layout(client, keys)


def test_close_archives_one_state_while_the_board_is_written(
    redis_client: redis.Redis, redis_url: str, unique_name: Callable[[str], str]
) -> None:
    keys = Keys(unique_name("season"))
    _seed(redis_client, keys, 2000)
    stop = threading.Event()

    def write() -> None:  # a stand-in for the consumer's batches: μ moves in board and hash
        writer = redis.Redis.from_url(redis_url)
        i = 0
        while not stop.is_set():
            pid, mu = f"p{i % 2000:04d}", 3000.0 + i
            pipe = writer.pipeline(transaction=True)
            pipe.hset(keys.player(pid), "mu", repr(mu))
            pipe.zadd(keys.lb, {pid: mu})
            pipe.execute()
            i += 1
        writer.close()

    thread = threading.Thread(target=write)
    thread.start()
    try:
        players = close_season(redis_client, keys.namespace, "s1", "s2", now_ms=1234)
    finally:
        stop.set()
        thread.join()
    assert players == 2000
    archive = keys.archive("s1")
    board = {m.decode(): s for m, s in redis_client.zrange(archive.lb, 0, -1, withscores=True)}
    assert len(board) == 2000
    pipe = redis_client.pipeline(transaction=False)
    for pid in board:
        pipe.hget(archive.player(pid), "mu")
    assert [float(mu) for mu in pipe.execute()] == list(board.values())
    assert closed_seasons(redis_client, keys.namespace)[0].players == 2000
    assert current_season(redis_client, keys.namespace).id == "s2"  # type: ignore[union-attr]
    with pytest.raises(SeasonError, match="archived already"):
        close_season(redis_client, keys.namespace, "s1", "s3")
    with pytest.raises(SeasonError, match="bad season id"):
        close_season(redis_client, keys.namespace, "s:1", "s3")
    top = Board(redis_client, keys.namespace, season="s1").top(3)
    assert [e.mu for e in top] == sorted(board.values(), reverse=True)[:3]


def test_the_api_serves_a_closed_season_and_the_cli_closes_one(
    redis_client: redis.Redis, redis_url: str, unique_name: Callable[[str], str]
) -> None:
    keys = Keys(unique_name("season"))
    _seed(redis_client, keys, 30)
    env_argv = [sys.executable, "-m", "adr_cli.main", "season", "--redis-url", redis_url,
                "--namespace", keys.namespace]  # fmt: skip
    done = subprocess.run([*env_argv, "close", "--season", "2026-s1", "--next", "2026-s2"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "closed": "2026-s1",
        "players": 30,
        "current": "2026-s2",
        "starts_at_ms": 0,
        "pool_mean": 1000.0,
        "keep": 0.5,
        "sigma_raise": 100.0,
    }  # fmt: skip  (nothing counted yet: the next season starts at event time 0; μ0)
    again = subprocess.run([*env_argv, "close", "--season", "2026-s1", "--next", "x"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert again.returncode == 1 and "archived already" in again.stderr
    redis_client.zadd(keys.lb, {"p0000": 9999.0})  # the live board moves on; the archive not
    config = Config(namespace=keys.namespace, max_page_size=50)
    with TestClient(create_app(config, redis_client, CollectorRegistry())) as api:
        listed = api.get("/v1/seasons").json()
        assert listed["current"]["id"] == "2026-s2"
        assert [s["id"] for s in listed["closed"]] == ["2026-s1"]
        top = api.get("/v1/seasons/2026-s1/top", params={"limit": 2})
        assert top.headers["cache-control"] == "public, max-age=86400"
        assert [r["player"] for r in top.json()["rows"]] == ["p0029", "p0028"]
        nxt = api.get("/v1/seasons/2026-s1/top", params={"cursor": top.json()["next_cursor"]})
        assert nxt.json()["rows"][0]["player"] == "p0027"
        rank = api.get("/v1/seasons/2026-s1/rank", params={"player": "p0000"}).json()
        assert (rank["rank"], rank["mu"]) == (30, 1000.0)
        assert api.get("/v1/rank", params={"player": "p0000"}).json()["rank"] == 1
        assert api.get("/v1/seasons/nope/top").status_code == 404
        assert api.get("/v1/seasons/a:b/top").status_code == 400
        long = api.get("/v1/seasons/" + "a" * 5000 + "/top")
        assert long.status_code == 400 and len(long.text) < 300  # the id is not echoed whole
        assert api.get("/v1/seasons/2026-s1/rank", params={"player": "zz"}).status_code == 404


def test_the_close_schedules_the_next_start_and_refuses_what_would_be_inexact(
    redis_client: redis.Redis, redis_url: str, unique_name: Callable[[str], str]
) -> None:
    keys = Keys(unique_name("season"))
    _seed(redis_client, keys, 5)
    redis_client.hset(keys.watermarks("kills"), mapping={"0": "5000", "1": "7000"})
    argv = [sys.executable, "-m", "adr_cli.main", "season", "--redis-url", redis_url,
            "--namespace", keys.namespace, "--topic", "kills"]  # fmt: skip

    def season(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*argv, *args], capture_output=True, text=True, timeout=60)

    late = season("close", "--season", "a", "--next", "b", "--next-start-ms", "7000")
    assert late.returncode == 1 and "after every accepted event time" in late.stderr
    assert redis_client.zcard(keys.seasons) == 0  # nothing written
    for bad in (["--keep", "1.5"], ["--sigma-raise", "-1"], ["--pool-mean", "nan"],
                ["--next-start-ms", "x"]):  # fmt: skip
        usage = season("close", "--season", "a", "--next", "b", *bad)
        assert usage.returncode == 2, (bad, usage.stderr)
    done = season("close", "--season", "a", "--next", "b", "--keep", "0.25", "--pool-mean", "990.5")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["starts_at_ms"] == 7001  # just after the largest watermark
    printed = season("schedule")
    assert printed.returncode == 0
    schedule = decode_schedule(printed.stdout)
    assert schedule == SeasonSchedule(
        (SeasonStart("b", 7001, 990.5, SeasonReset(0.25, SeasonReset().sigma_raise)),), version=1
    )
    assert current_season(redis_client, keys.namespace) == CurrentSeason("b", 7001)
    again = season("close", "--season", "b", "--next", "c")
    assert again.returncode == 1 and "no counted event yet" in again.stderr
    redis_client.hset(keys.season_schedule, "ladder", "1")  # a consumer counted b's first event
    redis_client.hset(keys.watermarks("kills"), "0", "9000")
    later = season("close", "--season", "b", "--next", "c", "--next-start-in", "0")
    assert later.returncode == 0, later.stderr  # now (wall clock) is after 9000 ms
    assert [s.id for s in season_schedule(redis_client, keys.namespace).starts] == ["b", "c"]


def _seed_model(client: redis.Redis, keys: Keys, name: str, n: int) -> list[Any]:
    """A pool of model `name`: n placed players with real states of that model (rated against
    each other), on the board by their display rating as the consumer writes it."""
    model = model_named(name)
    stamp_model(client, keys, model_stamp(name, model_parameters(model)))
    snapshot = Snapshot(taken_at=None, mean_mu_active=0.0, boundaries=None, active_count=0)
    states = [model.new_player() for _ in range(n)]
    for k in range(3 * n):  # a round robin: different ratings and uncertainties
        i, j = k % n, (k * 7 + 3) % n
        if i != j:
            out = model.rate(states[i], states[j], 1_000 + k, 0, n, snapshot)
            states[i], states[j] = out.attacker, out.victim
    pipe = client.pipeline()
    for i, state in enumerate(states):
        state = msgspec.structs.replace(state, tier=3 + i % 5)
        states[i] = state
        pid = f"p{i:04d}"
        values = model_values(model.to_fields(state))
        pipe.hset(keys.player(pid), mapping={**dict(zip(FIELDS, values, strict=False)), "ver": "1"})
        pipe.zadd(keys.lb, {pid: model.display(state)})
    pipe.execute()
    stamp_layout(client, keys)
    return states


@pytest.mark.parametrize("name", ["glicko2", "trueskill"])
def test_a_model_pool_closes_toward_its_mean_rating_and_serves_the_archive(
    redis_client: redis.Redis, unique_name: Callable[[str], str], name: str
) -> None:
    keys = Keys(unique_name("season"))
    states = _seed_model(redis_client, keys, name, 12)
    model = model_named(name)
    assert close_season(redis_client, keys.namespace, "s1", "s2", now_ms=5) == 12
    (start,) = season_schedule(redis_client, keys.namespace).starts
    ratings = [model.to_fields(s)[0] for s in states]  # the `mu` field: r or μ, not the display
    assert start.pool_mean == math.fsum(ratings) / 12
    assert start.pool_mean != math.fsum(model.display(s) for s in states) / 12 or name == "glicko2"
    assert start.reset == SeasonReset(0.5, model.default_sigma_raise())
    redis_client.delete(keys.lb)  # the live board moves on; the archive not
    config = Config(namespace=keys.namespace, max_page_size=50)
    # best first, ties by id descending (the board's unique ranks)
    by_display = sorted(range(12), key=lambda i: (model.display(states[i]), i), reverse=True)
    with TestClient(create_app(config, redis_client, CollectorRegistry())) as api:
        rows = api.get("/v1/seasons/s1/top", params={"limit": 50}).json()["rows"]
        assert [r["player"] for r in rows] == [f"p{i:04d}" for i in by_display]
        assert [r["mu"] for r in rows] == [model.display(states[i]) for i in by_display]
        assert [r["tier"] for r in rows] == [TIER_LABELS[states[i].tier - 1] for i in by_display]
        worst = by_display[-1]
        rank = api.get("/v1/seasons/s1/rank", params={"player": f"p{worst:04d}"})
        assert rank.status_code == 200, rank.text
        assert (rank.json()["rank"], rank.json()["mu"]) == (12, model.display(states[worst]))


def test_an_elo_pool_takes_no_uncertainty_raise(
    redis_client: redis.Redis, redis_url: str, unique_name: Callable[[str], str]
) -> None:
    keys = Keys(unique_name("season"))
    _seed_model(redis_client, keys, "elo", 4)
    argv = [sys.executable, "-m", "adr_cli.main", "season", "--redis-url", redis_url,
            "--namespace", keys.namespace, "close", "--season", "a", "--next", "b"]  # fmt: skip
    raised = subprocess.run([*argv, "--sigma-raise", "5"], capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    assert raised.returncode == 1 and "no uncertainty to raise" in raised.stderr
    assert redis_client.zcard(keys.seasons) == 0
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sigma_raise"] == 0.0


def test_a_close_naming_a_topic_the_pool_was_not_rated_from_is_refused(
    redis_client: redis.Redis, unique_name: Callable[[str], str]
) -> None:
    keys = Keys(unique_name("season"))
    _seed(redis_client, keys, 3)
    redis_client.hset(keys.pop, mapping={"count": "3"})
    redis_client.hset(keys.watermarks("kills"), "0", "9000")
    with pytest.raises(SeasonError, match="name the topic"):  # its watermarks would not bound T
        close_season(redis_client, keys.namespace, "s1", "s2", topics=("kill-events",))
    assert redis_client.zcard(keys.seasons) == 0
    close_season(redis_client, keys.namespace, "s1", "s2", topics=("kills",))
    assert season_schedule(redis_client, keys.namespace).starts[0].start_ms == 9001
