"""pytest fixtures for a real Kafka broker and a real redis-server (no mocks, no fakes).

Import them into a ``conftest.py`` (tests/conftest.py does)::

    from stack.testing import *  # noqa: F403

``kafka_bootstrap`` and ``redis_url`` are session-scoped and lazy: a session that never asks for
Kafka never starts a JVM. Where they come from: ``KAFKA_BOOTSTRAP_SERVERS`` / ``REDIS_URL``;
else testcontainers when a Docker engine answers; else the local stack (``stack.LocalStack``),
stopped at the end of the session (and on SIGTERM, and with this process if it is killed).
Isolate tests by :func:`unique_name` (topics, Redis namespaces), never by FLUSHALL.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

from stack._endpoints import SessionServers
from stack._topics import TopicAdmin

__all__ = [
    "TopicAdmin",
    "adr_servers",
    "kafka_admin",
    "kafka_bootstrap",
    "redis_client",
    "redis_url",
    "unique_name",
]

SERVER_FIXTURES = frozenset(
    {"adr_servers", "kafka_bootstrap", "kafka_admin", "redis_client", "redis_url"}
)
"""The fixtures that reach a real server (a test using one is an integration test)."""


@pytest.fixture(scope="session")
def adr_servers() -> Iterator[SessionServers]:
    """The session's servers; started lazily by the fixtures below, stopped at session end."""
    servers = SessionServers()
    try:
        yield servers
    finally:
        servers.close()


@pytest.fixture(scope="session")
def kafka_bootstrap(adr_servers: SessionServers) -> str:
    """``host:port`` of a real Kafka broker, shared by the whole session."""
    return adr_servers.kafka_bootstrap()


@pytest.fixture(scope="session")
def redis_url(adr_servers: SessionServers) -> str:
    """``redis://host:port/0`` of a real redis-server, shared by the whole session."""
    return adr_servers.redis_url()


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap: str) -> TopicAdmin:
    """``kafka_admin.create(name, partitions=N)`` creates a topic and waits for its leaders."""
    return TopicAdmin(kafka_bootstrap)


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A ``redis.Redis`` on the session's server (bytes responses), closed after the test."""
    client = redis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        client.close()


def name_tag(node: pytest.Item) -> str:
    """The ``<test>`` part of the names :func:`unique_name` makes for the test `node`
    (letters, digits and ``-``: safe in a Redis SCAN pattern)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", node.name).strip("-")[:40] or "test"


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[..., str]:
    """``unique_name("kill-events")`` -> ``"kill-events-<test>-<8 hex>"``, new on every call."""
    test = name_tag(request.node)

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{test}-{uuid.uuid4().hex[:8]}"

    return make
