"""Fixtures of the consumer tests beyond the session's shared servers (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stack import KafkaBroker


@pytest.fixture(scope="session")
def strict_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`host:port` of a broker as most production clusters run: no topic auto-creation (a
    produce to a missing topic fails), and Kafka's authorizer (StandardAuthorizer; every
    PLAINTEXT client is User:ANONYMOUS, allowed what no ACL denies, so one DENY ACL refuses one
    operation on one topic or group). Started once, on first use, for the tests that need
    either (test_kafka_refusals.py, test_dead_letters_undeliverable.py): they use topics,
    groups and ACLs of their own names, so they share it as they share the session's broker."""
    kafka = KafkaBroker(
        tmp_path_factory.mktemp("strict-kafka"), authorizer=True, auto_create_topics=False
    )
    kafka.start()
    try:
        yield kafka.bootstrap
    finally:
        kafka.stop()
