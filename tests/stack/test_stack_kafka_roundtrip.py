"""A produce/consume round trip through the real broker, with a consumer group and commits."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, Producer, TopicPartition

from stack import TopicAdmin

PARTITIONS = 3
MESSAGES = 60


def _drain(consumer: Consumer, want: int, timeout: float = 30.0) -> list[tuple[int, bytes, bytes]]:
    got: list[tuple[int, bytes, bytes]] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        partition, key, value = msg.partition(), msg.key(), msg.value()
        assert partition is not None and key is not None and value is not None
        got.append((partition, key, value))
    return got


def _consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )


def test_keyed_messages_round_trip_and_group_resumes_from_committed_offsets(
    kafka_bootstrap: str, kafka_admin: TopicAdmin, unique_name: Callable[..., str]
) -> None:
    topic = kafka_admin.create(unique_name("roundtrip"), partitions=PARTITIONS)
    group = unique_name("group")
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    sent = [(f"arena-{i % 20}".encode(), f"event-{i}".encode()) for i in range(MESSAGES)]
    for key, value in sent:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0

    first = _consumer(kafka_bootstrap, group)
    first.subscribe([topic])
    half = _drain(first, MESSAGES // 2)
    assert len(half) == MESSAGES // 2
    first.commit(asynchronous=False)  # commits exactly what this member has consumed so far
    committed = first.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    assert sum(max(tp.offset, 0) for tp in committed) == MESSAGES // 2
    first.close()

    # A new member of the same group starts where the group committed: no repeats, no gaps.
    second = _consumer(kafka_bootstrap, group)
    second.subscribe([topic])
    rest = _drain(second, MESSAGES - len(half))
    second.commit(asynchronous=False)
    assert second.poll(1.0) is None
    second.close()

    received = half + rest
    assert sorted((k, v) for _, k, v in received) == sorted(sent)
    # Same key, same partition; per key the order of production is kept.
    partition_of: dict[bytes, set[int]] = {}
    for partition, key, _ in received:
        partition_of.setdefault(key, set()).add(partition)
    assert all(len(parts) == 1 for parts in partition_of.values())
    assert len({p for parts in partition_of.values() for p in parts}) > 1
    for key in partition_of:
        mine = [v for _, k, v in received if k == key]
        assert mine == [v for k, v in sent if k == key]

    # Committed offsets now sit at the end of every partition.
    check = _consumer(kafka_bootstrap, group)
    offsets = check.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    ends = [check.get_watermark_offsets(tp, timeout=10)[1] for tp in offsets]
    check.close()
    assert [tp.offset for tp in offsets] == ends
    assert sum(ends) == MESSAGES
