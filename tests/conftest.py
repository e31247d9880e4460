"""Fixtures shared by the whole suite: a real Kafka broker and a real redis-server.

- ``kafka_bootstrap`` (session): "host:port" of a real broker.
- ``redis_url`` (session): "redis://host:port/0" of a real redis-server.
- ``kafka_admin`` (session): ``kafka_admin.create(name, partitions=N)`` -> name, leaders ready.
- ``redis_client``: a ``redis.Redis`` on ``redis_url``, closed after the test.
- ``unique_name``: ``unique_name("kill-events")`` -> a fresh topic / namespace name per call.

Sources, in order: KAFKA_BOOTSTRAP_SERVERS / REDIS_URL; testcontainers when Docker answers;
the local stack (stack/), started on first use and stopped at session end. See stack/testing.py.
"""

from stack.testing import (
    adr_servers,
    kafka_admin,
    kafka_bootstrap,
    redis_client,
    redis_url,
    unique_name,
)

__all__ = [
    "adr_servers",
    "kafka_admin",
    "kafka_bootstrap",
    "redis_client",
    "redis_url",
    "unique_name",
]
