"""Fixtures shared by the whole suite: a real Kafka broker and a real redis-server.

- ``kafka_bootstrap`` (session): "host:port" of a real broker.
- ``redis_url`` (session): "redis://host:port/0" of a real redis-server.
- ``kafka_admin`` (session): ``kafka_admin.create(name, partitions=N)`` -> name, leaders ready.
- ``redis_client``: a ``redis.Redis`` on ``redis_url``, closed after the test.
- ``unique_name``: ``unique_name("kill-events")`` -> a fresh topic / namespace name per call.
- ``consumer_config``: ``consumer_config(redis_url, ns, topic, **settings)`` -> a consumer Config
  on the session's broker, a fresh group, rating and dead-letter topics `{topic}-ratings`/`-dlq`.

Sources, in order: KAFKA_BOOTSTRAP_SERVERS / REDIS_URL; testcontainers when Docker answers;
the local stack (stack/), started on first use and stopped at session end. See stack/testing.py.

Test lanes: a test that asks for one of the server fixtures, or whose module sets
`pytestmark = pytest.mark.integration` (it starts servers of its own), is marked `integration`.
`./scripts/test -m "not integration"` runs the rest in well under a minute; CI runs both.

After a test that named things with ``unique_name`` on the session's redis-server, the keys
with its names go (``_drop_the_tests_keys``): the server then holds about one test's keys at a
time, not the whole session's, so every SCAN (the tests' pool comparisons, the tier job's
fallback, the namespace clean-ups) reads a small keyspace instead of a growing one.
"""

from collections.abc import Callable, Iterator

import pytest
import redis

from consumer import Config
from stack.testing import *  # noqa: F403  (the fixtures: pytest finds them in this module)
from stack.testing import SERVER_FIXTURES, name_tag


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that reaches a real server `integration`."""
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def consumer_config(kafka_bootstrap: str, unique_name) -> Callable[..., Config]:  # type: ignore[no-untyped-def]
    """`(redis_url, ns, topic, **settings) -> Config` of a consumer of `topic` into pool `ns`:
    the session's broker, a fresh group, rating changes to `{topic}-ratings`, dead letters to
    `{topic}-dlq`; `settings` override any of them (another broker, a named group, ...)."""

    def make(redis_url: str, ns: str, topic: str, **settings: object) -> Config:
        base: dict[str, object] = {
            "bootstrap_servers": kafka_bootstrap,
            "redis_url": redis_url,
            "namespace": ns,
            "topic": topic,
            "group": unique_name("g"),
            "rating_topic": f"{topic}-ratings",
            "dlq_topic": f"{topic}-dlq",
        }
        return Config(**(base | settings))  # type: ignore[arg-type]

    return make


@pytest.fixture(autouse=True)
def _drop_the_tests_keys(request: pytest.FixtureRequest) -> Iterator[None]:
    """Delete, after the test, the Redis keys named with its ``unique_name``s (each holds
    ``-<test>-``; nothing else does): no later test reads them, and a SCAN of the shared
    server costs in proportion to every key it holds."""
    names = set(request.fixturenames)
    if not {"redis_url", "unique_name"} <= names:
        yield
        return
    url = request.getfixturevalue("redis_url")
    yield
    client = redis.Redis.from_url(url)
    try:
        doomed = list(client.scan_iter(match=f"*-{name_tag(request.node)}-*", count=5000))
        for i in range(0, len(doomed), 5000):
            client.unlink(*doomed[i : i + 5000])
    finally:
        client.close()
