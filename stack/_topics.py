"""Create topics and wait until every partition has a leader (what tests and the demo need)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from runtime.logs import kafka_logger
from stack._errors import StackError

KAFKA_LOG = kafka_logger("adr.stack.kafka")
"""librdkafka's own lines of the stack's clients, as JSON log lines."""


class TopicAdmin:
    """A thin AdminClient wrapper: ``create(name, partitions)`` returns once the topic is usable."""

    def __init__(self, bootstrap: str, settings: Mapping[str, str] | None = None) -> None:
        self.bootstrap = bootstrap
        conf: dict[str, Any] = {**(settings or {}), "bootstrap.servers": bootstrap}
        conf["logger"] = KAFKA_LOG
        self.client = AdminClient(conf)

    def create(
        self,
        name: str,
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
        *,
        exist_ok: bool = False,
        timeout: float = 30.0,
    ) -> str:
        """Create ``name`` with ``partitions`` partitions (replication 1); return ``name``."""
        topic = NewTopic(name, num_partitions=partitions, replication_factor=1,
                         config=dict(config or {}))  # fmt: skip
        future = self.client.create_topics([topic], operation_timeout=timeout)[name]
        try:
            future.result(timeout=timeout)
        except KafkaException as e:
            if not (exist_ok and e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS):
                raise StackError(f"creating topic {name!r} failed: {e}") from e
        self.wait_ready([name], timeout=timeout)
        return name

    def wait_ready(self, names: Iterable[str], timeout: float = 30.0) -> None:
        """Block until each topic's metadata lists leaders for all partitions."""
        deadline = time.monotonic() + timeout
        pending = set(names)
        while pending:
            metadata = self.client.list_topics(timeout=max(0.1, deadline - time.monotonic()))
            for name in list(pending):
                t = metadata.topics.get(name)
                if (
                    t is not None
                    and t.error is None
                    and t.partitions
                    and all(p.leader >= 0 for p in t.partitions.values())
                ):
                    pending.discard(name)
            if pending:
                if time.monotonic() > deadline:
                    raise StackError(f"topics not ready within {timeout:.0f} s: {sorted(pending)}")
                time.sleep(0.05)

    def delete(self, names: Iterable[str], timeout: float = 30.0) -> None:
        """Delete topics, ignoring ones that do not exist."""
        futures = self.client.delete_topics(list(names), operation_timeout=timeout)
        for name, future in futures.items():
            try:
                future.result(timeout=timeout)
            except KafkaException as e:
                if e.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise StackError(f"deleting topic {name!r} failed: {e}") from e
