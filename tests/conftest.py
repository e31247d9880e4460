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
"""

from collections.abc import Callable

import pytest

from consumer import Config
from stack.testing import *  # noqa: F403  (the fixtures: pytest finds them in this module)
from stack.testing import SERVER_FIXTURES


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
