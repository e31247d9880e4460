"""A pool served by `adr serve`'s app as the shipped read-only user: a redis-server loaded with
deploy/redis/acl-users.acl rendered as its README says, the board seeded by the default user,
the app reading as `adr-reader` (tests/examples/test_readers_acl.py renders the same file)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
import redis
from litestar.testing import TestClient
from prometheus_client import CollectorRegistry

from redis_layout import Keys, stamp_layout
from redis_layout.history_codec import HistoryPoint, encode_history_point
from redis_layout.meta_codec import encode_meta
from serve import Config, create_app
from stack import RedisServer
from stack._ports import free_port
from stack.secured import plain_redis
from tests.examples.test_readers_acl import PASSWORDS, _render_as_the_readme_says

NAMESPACE = "adr"
# (player, μ, tier or "" while unplaced); bob and carol tie, as do dave and dan.
PLAYERS = [
    ("alice", 1500.5, "1H"),
    ("bob", 1200.0, "2M"),
    ("carol", 1200.0, "2M"),
    ("dan", 900.25, "5L"),
    ("dave", 900.25, "5L"),
    ("erin", 850.0, "5L"),
    ("frank", 1000.0, ""),
    ("x\U0001f600", 700.0, "5L"),
]
ORDER = ["alice", "carol", "bob", "dave", "dan", "erin", "x\U0001f600"]
BOUNDARIES = [1400.0 - 25.0 * i for i in range(14)]
META = {
    "alice": {"display_name": "Alice \u2603", "country": "DE", "level": 40, "pro": True},
    "x\U0001f600": {"display_name": "\u00e9\U0001f600 <b>&amp;</b>", "avatar": None},
    "frank": {"display_name": "Frank"},
}
"""The studio's metadata (`adr meta`) of three players; the others have none."""
HISTORY = [
    HistoryPoint(0, s, 1_000 * s, 1000.0 + 40.0 * s, 350.0 - 20.0 * s, None) for s in range(1, 9)
]


@pytest.fixture(scope="package")
def acl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    work = tmp_path_factory.mktemp("serve-acl")
    acl = _render_as_the_readme_says(work / "rendered")
    srv = plain_redis(work / "redis", "--aclfile", str(acl))
    srv.start()
    try:
        seed(redis.Redis(port=srv.port), Keys(NAMESPACE))
        consumer = redis.Redis(
            port=srv.port, username="adr-consumer", password=PASSWORDS["CONSUMER_PW"]
        )
        stamp_layout(consumer, Keys(NAMESPACE))
        yield srv
    finally:
        srv.stop()


def seed(admin: redis.Redis, keys: Keys) -> None:
    counts: dict[str, int] = {}
    for pid, mu, tier in PLAYERS:
        admin.hset(
            keys.player(pid),
            mapping={"mu": repr(mu), "sigma": "80.0", "tier": tier, "n": "30", "last_ts": "1700",
                     "ver": "30"},
        )  # fmt: skip
        if tier:
            admin.zadd(keys.lb, {pid: mu})
            counts[tier] = counts.get(tier, 0) + 1
    admin.hset(keys.tier_counts, mapping=counts)
    admin.hset(keys.pop, mapping={"count": len(PLAYERS)})
    admin.hset(
        keys.snapshot,
        mapping={"version": "3", "computed_at": "1234", "boundaries": json.dumps(BOUNDARIES)},
    )
    admin.rpush(keys.history("alice"), *(encode_history_point(p) for p in HISTORY))
    admin.hset(keys.meta, mapping={p: encode_meta(m) for p, m in META.items()})


def reader_url(port: int) -> str:
    return f"redis://adr-reader:{PASSWORDS['READER_PW']}@127.0.0.1:{port}/0"


@pytest.fixture(scope="package")
def reader(acl_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(reader_url(acl_server.port))
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="package")
def api(reader: redis.Redis) -> Iterator[TestClient]:  # type: ignore[type-arg]
    # no answer cache: tests change the pool and read it back at once (test_answer_cache.py
    # tests the cache)
    config = Config(
        namespace=NAMESPACE, history_points=5, max_page_size=50, max_friends=10,
        answer_cache_ttl=0,
    )  # fmt: skip
    with TestClient(create_app(config, reader, CollectorRegistry())) as client:
        yield client


@pytest.fixture
def admin(acl_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis(port=acl_server.port)
    try:
        yield client
    finally:
        client.close()


@contextlib.contextmanager
def running_serve(redis_url: str, *flags: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`adr serve` as a process on a free port, ready (its /readyz answered 200): (base URL,
    process); stopped with SIGTERM on exit (the caller checks the status where it cares)."""
    port = free_port()
    env = {**os.environ, "REDIS_URL": redis_url, "ADR_SERVE_PORT": str(port)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "adr_cli.main", "serve", *flags],
        env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if http_get(base + "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "adr serve did not start"
            time.sleep(0.2)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)


def http_get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
