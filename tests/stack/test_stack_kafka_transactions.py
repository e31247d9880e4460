"""Transactions on the real broker: read_committed hides an aborted transaction's records."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, Producer

from stack import TopicAdmin


def _read_all(bootstrap: str, topic: str, isolation: str, want: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{isolation}-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    eof = False
    while time.monotonic() < deadline and not (eof and len(values) >= want):
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        error = msg.error()
        if error is not None:
            eof = error.code() == KafkaError._PARTITION_EOF
            continue
        value = msg.value()
        assert value is not None
        values.append(value)
    consumer.close()
    return values


def test_committed_transactions_are_visible_and_aborted_ones_are_not(
    kafka_bootstrap: str, kafka_admin: TopicAdmin, unique_name: Callable[..., str]
) -> None:
    topic = kafka_admin.create(unique_name("txn"), partitions=1)
    producer = Producer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "transactional.id": unique_name("txn-producer"),
            "enable.idempotence": True,
        }
    )
    producer.init_transactions(60)

    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, key=b"k", value=f"committed-1-{i}".encode())
    producer.commit_transaction(30)

    producer.begin_transaction()
    for i in range(4):
        producer.produce(topic, key=b"k", value=f"aborted-{i}".encode())
    producer.flush(30)  # the aborted records really reach the log before the abort marker
    producer.abort_transaction(30)

    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"committed-2-0")
    producer.commit_transaction(30)

    committed = [b"committed-1-0", b"committed-1-1", b"committed-1-2", b"committed-2-0"]
    assert _read_all(kafka_bootstrap, topic, "read_committed", len(committed)) == committed
    # read_uncommitted sees the aborted records too: the broker really wrote, then filtered them.
    everything = _read_all(kafka_bootstrap, topic, "read_uncommitted", 8)
    assert everything == [
        *committed[:3],
        *(f"aborted-{i}".encode() for i in range(4)),
        committed[3],
    ]
