"""The answer cache of `adr serve` (serve/_answer_cache.py) on the real redis-server of the
package: an answer is served again for its ttl (with its Age, ETag and 304), then read anew; a
change of the pool shows after at most the ttl; errors are never kept; concurrent misses of one
key read Redis once; the bytes kept stay under the bound."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
import redis
from litestar.testing import AsyncTestClient, TestClient
from prometheus_client import CollectorRegistry

from redis_layout import Keys
from serve import Config, create_app
from serve._answer_cache import AnswerCache
from tests.http_api.conftest import NAMESPACE

pytestmark = pytest.mark.integration

KEYS = Keys(NAMESPACE)
TTL = 3.0  # long enough for a loaded machine between two requests


def _lookups(text: str) -> dict[str, float]:
    prefix = "adr_serve_answer_cache_lookups_total{outcome="
    return {
        line[len(prefix) + 1 : line.index('"}')]: float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith(prefix)
    }


@pytest.fixture
def cached(reader: redis.Redis) -> Iterator[TestClient]:  # type: ignore[type-arg]
    config = Config(namespace=NAMESPACE, answer_cache_ttl=TTL)
    with TestClient(create_app(config, reader, CollectorRegistry())) as client:
        yield client


def test_an_answer_is_served_again_for_its_ttl_then_read_anew(
    cached: TestClient,
    admin: redis.Redis,  # type: ignore[type-arg]
) -> None:
    first = cached.get("/v1/rank", params={"player": "erin"})
    assert first.status_code == 200 and first.json()["mu"] == 850.0
    admin.zadd(KEYS.lb, {"erin": 851.0})
    admin.hset(KEYS.player("erin"), "mu", "851.0")
    try:
        again = cached.get("/v1/rank", params={"player": "erin"})
        assert again.content == first.content  # from memory: the old answer
        assert again.headers["etag"] == first.headers["etag"]
        assert again.headers["cache-control"] == first.headers["cache-control"]
        assert int(again.headers["age"]) <= TTL
        assert int(again.headers["content-length"]) == len(again.content)
        same = cached.get(
            "/v1/rank", params={"player": "erin"}, headers={"If-None-Match": first.headers["etag"]}
        )
        assert same.status_code == 304 and same.content == b""
        time.sleep(TTL + 0.1)
        fresh = cached.get("/v1/rank", params={"player": "erin"})
        assert fresh.json()["mu"] == 851.0  # at most the ttl late
        assert _lookups(cached.get("/metrics").text) == {"hit": 2.0, "miss": 2.0, "waited": 0.0}
    finally:
        admin.zadd(KEYS.lb, {"erin": 850.0})
        admin.hset(KEYS.player("erin"), "mu", "850.0")


def test_errors_are_never_kept(cached: TestClient, admin: redis.Redis) -> None:  # type: ignore[type-arg]
    assert cached.get("/v1/rank", params={"player": "newcomer"}).status_code == 404
    assert cached.get("/v1/top", params={"limit": 0}).status_code == 400
    admin.hset(KEYS.player("newcomer"), mapping={"mu": "1000.0", "tier": ""})
    try:
        answer = cached.get("/v1/rank", params={"player": "newcomer"})
        assert answer.status_code == 200 and answer.json()["rank"] is None  # at once
    finally:
        admin.delete(KEYS.player("newcomer"))
    assert "age" not in cached.get("/livez").headers  # nor anything outside /v1/


def test_concurrent_misses_of_one_key_read_once(reader: redis.Redis) -> None:
    async def run() -> tuple[list[bytes], dict[str, float]]:
        app = create_app(Config(namespace=NAMESPACE, answer_cache_ttl=30), reader,
                         CollectorRegistry())  # fmt: skip
        async with AsyncTestClient(app) as client:
            answers = await asyncio.gather(
                *(client.get("/v1/top", params={"limit": 5}) for _ in range(20))
            )
            metrics = (await client.get("/metrics")).text
        return [a.content for a in answers], _lookups(metrics)

    bodies, counts = asyncio.run(run())
    assert len(set(bodies)) == 1
    assert counts["miss"] == 1 and counts["waited"] + counts["hit"] == 19


def test_the_bytes_kept_stay_under_the_bound() -> None:
    cache = AnswerCache(60, 1000, CollectorRegistry())
    start = {"type": "http.response.start", "status": 200, "headers": [(b"etag", b'"x"')]}
    for i in range(50):
        cache._keep((f"/v1/rank{i}", b""), time.monotonic(), start, b"x" * 300)
        assert cache._bytes <= 1000
    assert len(cache._answers) == 3  # the newest three
    cache._keep(("/v1/big", b""), time.monotonic(), start, b"x" * 1001)  # larger than all: not kept
    assert ("/v1/big", b"") not in cache._answers
    with pytest.raises(ValueError):
        AnswerCache(-1, 10, CollectorRegistry())
