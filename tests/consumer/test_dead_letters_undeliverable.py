"""A dead letter counts only once the broker acknowledged it. One it cannot take stops the
partition at that message (nothing after it applied, its offset not stored past it), `/readyz`
and the metrics say why; once the cause is fixed the partition resumes and nothing is lost or
applied twice. Dead-letter copies keep the original headers."""

from __future__ import annotations

import dataclasses
import time

import consumer_support as S
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from consumer.config import Config
from engine import Params
from schemas import decode_rating_change, encode_kill_event

HEADERS = [("trace-id", b"t-123"), ("origin", b"game-server-7")]


def _publish(bootstrap: str, topic: str, items: list[tuple[bytes, bytes, list | None]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for key, value, headers in items:
        producer.produce(topic, value=value, key=key, partition=0, headers=headers)
    assert producer.flush(60) == 0


def _stream(n: int, seed: int, bad: list[tuple[int, bytes]]):
    """(events, messages, offsets of the bad ones): `bad` = (index among the good, bytes)."""
    events = S.events(n, players=200, arenas=10, seed=seed)
    messages: list[tuple[bytes, bytes, list | None]] = []
    bad_at: list[int] = []
    pending = sorted(bad)
    for i, event in enumerate(events):
        while pending and pending[0][0] == i:
            bad_at.append(len(messages))
            messages.append((b"arena-0", pending.pop(0)[1], HEADERS))
        messages.append((event.arena.encode(), encode_kill_event(event), None))
    return events, messages, bad_at


def _config(bootstrap: str, redis_url: str, ns: str, topic: str, group: str) -> Config:
    return Config(
        bootstrap_servers=bootstrap, redis_url=redis_url, namespace=ns, topic=topic, group=group,
        rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq", metrics_host="127.0.0.1",
        metrics_port=0, batch_size=100, dead_letter_timeout_ms=2_000, backoff_max_s=1.0,
    )  # fmt: skip


def _assert_stopped_at(base: str, client, keys, topic: str, offset: int, reason: str) -> None:
    """The partition stays at `offset`: /readyz and the metrics say why."""

    def said() -> bool:
        status, text = S.http_get(base + "/readyz")
        return status == 503 and f"stopped=0@{offset}:{reason}" in text

    S.wait_until(said, 60, f"/readyz naming the stop at {offset} ({reason})")
    S.wait_until(
        lambda: S.applied_offsets(client, keys, topic).get(0) == offset, 30, "the good prefix"
    )
    time.sleep(3)  # several retries later, still there
    assert S.applied_offsets(client, keys, topic).get(0) == offset
    metrics = S.http_get(base + "/metrics")[1]
    assert f'adr_dead_letter_blocked_partitions{{reason="{reason}"}} 1.0' in metrics
    assert f'adr_dead_letters_undeliverable_total{{reason="{reason}"}}' in metrics


def _assert_resumed_and_exact(base, client, keys, topic, bootstrap, events, n_messages) -> None:
    S.wait_applied(client, keys, topic, {0: n_messages}, 120)
    S.wait_outbox_empty(client, keys, 60)
    status, text = S.http_get(base + "/readyz")
    assert status == 200, text
    gauges = [
        line
        for line in S.http_get(base + "/metrics")[1].splitlines()
        if line.startswith("adr_dead_letter_blocked_partitions{")
    ]
    assert gauges and all(line.endswith(" 0.0") for line in gauges), gauges
    params = Params()
    book = S.replay(events, params, S.SNAPSHOT)
    S.assert_redis_equals_replay(client, keys, book, params, exact=True)
    received = [
        decode_rating_change(m.value()).id for m in S.read_topic(bootstrap, f"{topic}-ratings")
    ]
    assert len(received) == len(set(received))  # nothing applied twice
    assert set(received) == S.change_ids(book.counted_ids)  # nothing lost


def _assert_dead_letters(
    bootstrap: str, topic: str, messages, bad_at: list[int], reasons: list[bytes]
) -> None:
    dead = S.read_topic(bootstrap, f"{topic}-dlq")
    assert [m.value() for m in dead] == [messages[i][1] for i in bad_at]
    for m, offset, reason in zip(dead, bad_at, reasons, strict=True):
        headers = m.headers()
        assert headers[: len(HEADERS)] == HEADERS  # the original headers, first, untouched
        extra = dict(headers[len(HEADERS) :])
        assert extra["source_offset"] == str(offset).encode()
        assert extra["reason"] == reason


def test_a_missing_dead_letter_topic_stops_the_partition_until_it_exists(
    strict_broker: str, redis_url: str, unique_name
) -> None:
    bootstrap = strict_broker
    topic = unique_name("kill-events")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _create(admin, [NewTopic(topic, 1, 1), NewTopic(f"{topic}-ratings", 1, 1)])
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    events, messages, bad_at = _stream(2_000, 71, [(700, b"\xc1 not msgpack")])
    _publish(bootstrap, topic, messages)

    consumer = S.start_threaded(
        _config(bootstrap, redis_url, ns, topic, unique_name("g")), Params(), serve_metrics=True
    )
    try:
        consumer.wait_serving()
        base = f"http://127.0.0.1:{consumer.pipeline.http.server_address[1]}"
        _assert_stopped_at(base, client, keys, topic, bad_at[0], "topic_missing")
        assert consumer.thread.is_alive()
        _create(admin, [NewTopic(f"{topic}-dlq", 1, 1)])  # the operator's fix
        _assert_resumed_and_exact(base, client, keys, topic, bootstrap, events, len(messages))
    finally:
        consumer.stop()
    _assert_dead_letters(bootstrap, topic, messages, bad_at, [b"undecodable"])
    client.close()


def test_a_dead_letter_over_the_topics_size_limit_stops_the_partition_until_it_is_raised(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    dlq = f"{topic}-dlq"
    _create(admin, [NewTopic(dlq, 1, 1, config={"max.message.bytes": "2000"})])
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    # A small bad message and, a few messages later, one over the DLQ topic's 2000 bytes: the
    # broker refuses a whole request for one copy, so the small one must still get through.
    events, messages, bad_at = _stream(
        1_500, 73, [(600, b"\xc1 small"), (603, b"\xc1" + b"x" * 5_000)]
    )
    _publish(kafka_bootstrap, topic, messages)

    consumer = S.start_threaded(
        _config(kafka_bootstrap, redis_url, ns, topic, unique_name("g")), Params(), True
    )
    try:
        consumer.wait_serving()
        base = f"http://127.0.0.1:{consumer.pipeline.http.server_address[1]}"
        _assert_stopped_at(base, client, keys, topic, bad_at[1], "too_large")
        raised = ConfigEntry(
            "max.message.bytes", "100000", incremental_operation=AlterConfigOpType.SET
        )
        resource = ConfigResource(ConfigResource.Type.TOPIC, dlq, incremental_configs=[raised])
        for f in admin.incremental_alter_configs([resource]).values():
            f.result()
        _assert_resumed_and_exact(base, client, keys, topic, kafka_bootstrap, events, len(messages))
    finally:
        consumer.stop()
    _assert_dead_letters(kafka_bootstrap, topic, messages, bad_at, [b"undecodable", b"too_large"])
    client.close()


def _create(admin: AdminClient, topics: list[NewTopic]) -> None:
    for f in admin.create_topics(topics).values():
        f.result()
    deadline = time.monotonic() + 30
    names = {t.topic for t in topics}
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=5)
        if all(n in md.topics and not md.topics[n].error for n in names):
            return
        time.sleep(0.1)
    raise AssertionError(f"topics {names} not ready")


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory):
    """A broker with Kafka's authorizer: the consumer logs in over SASL_SSL as a SCRAM user that
    may do only what ACLs grant; the test itself uses the PLAINTEXT listener (a super user)."""
    from stack.secured import SecuredBroker, make_certificates

    folder = tmp_path_factory.mktemp("acl-kafka")
    broker = SecuredBroker(folder, make_certificates(folder / "certs"), authorizer=True)
    broker.start()
    broker.add_scram_user("adr-consumer", "acl-pw-3310")
    yield broker
    broker.stop()


def _allow(admin: AdminClient, principal: str, resources: list[tuple[object, str]]) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
    )

    bindings = [
        AclBinding(
            kind,
            name,
            ResourcePatternType.LITERAL,
            principal,
            "*",
            AclOperation.ALL,
            AclPermissionType.ALLOW,
        )
        for kind, name in resources
    ]
    for future in admin.create_acls(bindings).values():
        future.result(timeout=30)


def test_a_dead_letter_topic_the_consumer_may_not_write_stops_the_partition_until_allowed(
    acl_broker, redis_url: str, unique_name
) -> None:
    from confluent_kafka.admin import ResourceType

    from runtime import KafkaSettings

    bootstrap = acl_broker.plaintext
    topic, group = unique_name("kill-events"), unique_name("g")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _create(admin, [NewTopic(t, 1, 1) for t in (topic, f"{topic}-ratings", f"{topic}-dlq")])
    principal = "User:adr-consumer"
    _allow(admin, principal, [(ResourceType.TOPIC, topic), (ResourceType.TOPIC, f"{topic}-ratings"),
                              (ResourceType.GROUP, group)])  # fmt: skip  # not the DLQ topic
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    events, messages, bad_at = _stream(1_500, 73, [(500, b"\xc1 not msgpack")])
    _publish(bootstrap, topic, messages)

    config = dataclasses.replace(
        _config(acl_broker.sasl_bootstrap, redis_url, ns, topic, group),
        kafka=KafkaSettings(acl_broker.sasl_settings("adr-consumer", "acl-pw-3310")),
    )
    consumer = S.start_threaded(config, Params(), serve_metrics=True)
    try:
        consumer.wait_serving()
        base = f"http://127.0.0.1:{consumer.pipeline.http.server_address[1]}"
        _assert_stopped_at(base, client, keys, topic, bad_at[0], "not_authorized")
        assert consumer.thread.is_alive()
        _allow(admin, principal, [(ResourceType.TOPIC, f"{topic}-dlq")])  # the operator's fix
        _assert_resumed_and_exact(base, client, keys, topic, bootstrap, events, len(messages))
    finally:
        consumer.stop()
    _assert_dead_letters(bootstrap, topic, messages, bad_at, [b"undecodable"])
    client.close()
