"""The broker refuses the consumer's paths while it runs, on a real broker with Kafka's
authorizer (StandardAuthorizer; every PLAINTEXT client is User:ANONYMOUS, so one DENY ACL
refuses one operation on one topic) and without topic auto-creation.

Under a running consumer: the rating-change topic denied and then allowed again, the
rating-change topic deleted and created again, the kill-event topic denied and allowed again.
Each time ratings go on (or resume), nothing crashes, every rating change reaches the topic once
the path is back (counted by id), and the operator is told: `adr_kafka_degraded` names the path,
the topic and the cause, `/readyz` says so, and the log says it in a few summary lines, not one
per message.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Iterator

import consumer_support as S
import msgspec
import pytest
import redis
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from consumer._degraded import RATING_CHANGES
from consumer._errors import KafkaUnrecoverable
from consumer._metrics import Metrics
from consumer._relay import Relay
from consumer.config import Config
from engine import Params
from redis_layout import Keys
from schemas import decode_rating_change
from stack import KafkaBroker

pytestmark = pytest.mark.integration  # starts a broker of its own

ANONYMOUS = "User:ANONYMOUS"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    kafka = KafkaBroker(
        tmp_path_factory.mktemp("acl-kafka"), authorizer=True, auto_create_topics=False
    )
    kafka.start()
    yield kafka.bootstrap
    kafka.stop()


@pytest.fixture
def lines() -> Iterator[S.LogLines]:
    with S.capture_logs() as captured:
        yield captured


def _create(admin: AdminClient, names: list[str]) -> None:
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=5)
        if all(n in md.topics and md.topics[n].error is None for n in names):
            return
        time.sleep(0.05)
    raise AssertionError(f"topics {names} not ready")


def _acl(topic: str, operation: AclOperation) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, ANONYMOUS, "*", operation,
        AclPermissionType.DENY,
    )  # fmt: skip


def _acl_on(
    admin: AdminClient, topic: str, operation: AclOperation, permission: AclPermissionType
) -> None:
    binding = AclBinding(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, ANONYMOUS, "*", operation,
        permission,
    )  # fmt: skip
    for future in admin.create_acls([binding]).values():
        future.result(timeout=30)


def _drop_acl(
    admin: AdminClient, topic: str, operation: AclOperation, permission: AclPermissionType
) -> None:
    pattern = AclBindingFilter(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, ANONYMOUS, "*", operation,
        permission,
    )  # fmt: skip
    for future in admin.delete_acls([pattern]).values():
        future.result(timeout=30)


def _deny(admin: AdminClient, topic: str, operation: AclOperation) -> None:
    for future in admin.create_acls([_acl(topic, operation)]).values():
        future.result(timeout=30)


def _allow_again(admin: AdminClient, topic: str, operation: AclOperation) -> None:
    pattern = AclBindingFilter(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, ANONYMOUS, "*", operation,
        AclPermissionType.DENY,
    )  # fmt: skip
    for future in admin.delete_acls([pattern]).values():
        future.result(timeout=30)


def _config(bootstrap: str, redis_url: str, ns: str, topic: str, group: str) -> Config:
    return Config(
        bootstrap_servers=bootstrap, redis_url=redis_url, namespace=ns, topic=topic, group=group,
        rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq", metrics_host="127.0.0.1",
        metrics_port=0, batch_size=200, backoff_max_s=1.0, outbox_claim_idle_ms=2_000,
    )  # fmt: skip


def _metric(base: str, name: str, **labels: str) -> float | None:
    """The value of one sample of /metrics (None: not there)."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in S.http_get(base + "/metrics")[1].splitlines():
        if not line.startswith(name + "{"):
            continue
        inside, value = line[len(name) + 1 :].rsplit("} ", 1)
        if ",".join(sorted(inside.split(","))) == want:
            return float(value)
    return None


class Run:
    """One consumer on fresh topics and a fresh rating pool, with its events published in
    parts; what every case checks at the end."""

    def __init__(
        self,
        bootstrap: str,
        redis_url: str,
        unique_name,
        n: int,
        seed: int,
        group: str = "",
        create_kill_topic: bool = True,
    ) -> None:
        self.bootstrap = bootstrap
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.topic = unique_name("kill-events")
        self.ratings = f"{self.topic}-ratings"
        made = [self.topic] if create_kill_topic else []
        _create(self.admin, [*made, self.ratings, f"{self.topic}-dlq"])
        self.ns, self.keys, self.client = S.rating_pool(redis_url, unique_name)
        # times end well before now: none beyond the consumer's 60 s future guard
        start_ms = time.time_ns() // 1_000_000 - 10 * 60 * 1000
        self.events = S.events(n, players=300, arenas=10, seed=seed, start_ms=start_ms)
        self.published = 0
        config = _config(bootstrap, redis_url, self.ns, self.topic, group or unique_name("g"))
        self.consumer = S.start_threaded(config, Params(), serve_metrics=True)
        self.consumer.wait_serving()
        self.base = f"http://127.0.0.1:{self.consumer.pipeline.http.server_address[1]}"

    def publish(self, count: int) -> None:
        part = self.events[self.published : self.published + count]
        S.produce(self.bootstrap, self.topic, S.encoded(part))
        self.published += len(part)

    def wait_rated(self, timeout: float = 60) -> None:
        """Until Redis holds every event published so far (the consumer alive throughout)."""
        S.wait_applied(
            self.client, self.keys, self.topic, {0: self.published}, timeout,
            alive=self.consumer.thread.is_alive,
        )  # fmt: skip

    def degraded(self, path: str, topic: str, cause: str) -> float | None:
        return _metric(self.base, "adr_kafka_degraded", path=path, topic=topic, cause=cause)

    def wait_degraded(self, path: str, topic: str, cause: str, timeout: float = 20) -> None:
        S.wait_until(lambda: self.degraded(path, topic, cause) == 1.0, timeout,
                     f"adr_kafka_degraded{{{path},{topic},{cause}}} = 1")  # fmt: skip
        text = S.http_get(self.base + "/readyz")[1]
        assert f"degraded={path}:{topic}:{cause}" in text, text

    def wait_back(self, path: str, topic: str, cause: str, timeout: float = 60) -> None:
        S.wait_until(lambda: self.degraded(path, topic, cause) == 0.0, timeout,
                     f"adr_kafka_degraded{{{path},{topic},{cause}}} = 0")  # fmt: skip
        assert "degraded=" not in S.http_get(self.base + "/readyz")[1]

    def assert_every_change_delivered(self) -> None:
        """Redis as the replay says, and every rating change on the topic (by id)."""
        S.wait_outbox_empty(self.client, self.keys, 60)
        assert self.consumer.thread.is_alive()
        params = Params()
        book = S.replay(self.events[: self.published], params, S.SNAPSHOT)
        S.assert_redis_equals_replay(self.client, self.keys, book, params, exact=True)
        expected = S.change_ids(book.counted_ids)
        received = [
            decode_rating_change(m.value()).id
            for m in S.read_topic(self.bootstrap, self.ratings, expect=len(expected), idle=3)
        ]
        assert set(received) == expected  # none lost (a re-sent entry may repeat some)
        assert self.client.xlen(self.keys.outbox_quarantine) == 0

    def stop(self) -> None:
        self.consumer.stop()
        self.client.close()


def _summary_lines(lines: S.LogLines, path: str, topic: str, cause: str) -> list[logging.LogRecord]:
    return lines.about("kafka path degraded", path=path, topic=topic, cause=cause)


def test_a_denied_rating_topic_keeps_rating_and_sends_every_change_once_allowed(
    broker: str, redis_url: str, unique_name, lines: S.LogLines
) -> None:
    run = Run(broker, redis_url, unique_name, 3_000, seed=301)
    try:
        run.publish(1_000)
        run.wait_rated()
        S.wait_outbox_empty(run.client, run.keys, 60)  # the path works
        _deny(run.admin, run.ratings, AclOperation.WRITE)
        run.publish(1_000)
        run.wait_degraded("rating_changes", run.ratings, "not_authorized")
        run.wait_rated()  # ratings go on while the changes wait in the outbox
        assert run.client.xlen(run.keys.outbox) > 0
        status, text = S.http_get(run.base + "/readyz")
        assert status == 200, text  # degraded, still rating: ready (docs/operations.md)
        failures = _metric(
            run.base, "adr_produce_failures_total", topic=run.ratings, cause="not_authorized"
        )
        assert failures is not None and failures >= 1
        run.publish(1_000)
        run.wait_rated()
        _allow_again(run.admin, run.ratings, AclOperation.WRITE)
        run.wait_back("rating_changes", run.ratings, "not_authorized")
        run.assert_every_change_delivered()
        said = _summary_lines(lines, "rating_changes", run.ratings, "not_authorized")
        assert 1 <= len(said) <= 4, [r.__dict__ for r in said]  # one line per 30 s at most
        loud = [r.getMessage() for r in lines.records if r.levelno >= logging.WARNING]
        assert len(loud) < 10, loud
        assert lines.about("kafka path back", path="rating_changes", topic=run.ratings)
    finally:
        run.stop()


def test_a_deleted_rating_topic_keeps_rating_and_sends_every_change_once_recreated(
    broker: str, redis_url: str, unique_name, lines: S.LogLines
) -> None:
    run = Run(broker, redis_url, unique_name, 3_000, seed=302)
    try:
        run.publish(1_000)
        run.wait_rated()
        S.wait_outbox_empty(run.client, run.keys, 60)
        for future in run.admin.delete_topics([run.ratings]).values():
            future.result(timeout=30)
        run.publish(1_000)
        run.wait_rated()
        run.wait_degraded("rating_changes", run.ratings, "topic_missing")
        run.publish(1_000)
        run.wait_rated()
        assert run.client.xlen(run.keys.outbox) > 0
        assert S.http_get(run.base + "/readyz")[0] == 200
        _create(run.admin, [run.ratings])  # the operator's fix (the broker creates nothing)
        run.wait_back("rating_changes", run.ratings, "topic_missing")
        # The first 1,000 events' changes went with the deleted topic: the rest must all be on
        # the new one.
        S.wait_outbox_empty(run.client, run.keys, 60)
        params = Params()
        before = S.change_ids(S.replay(run.events[:1_000], params, S.SNAPSHOT).counted_ids)
        book = S.replay(run.events, params, S.SNAPSHOT)
        S.assert_redis_equals_replay(run.client, run.keys, book, params, exact=True)
        expected = S.change_ids(book.counted_ids) - before
        received = {
            decode_rating_change(m.value()).id
            for m in S.read_topic(run.bootstrap, run.ratings, expect=len(expected), idle=3)
        }
        assert received == expected
        said = _summary_lines(lines, "rating_changes", run.ratings, "topic_missing")
        assert 1 <= len(said) <= 4, [r.__dict__ for r in said]
        assert not lines.about("rating change not delivered")  # the old per-message line
        loud = [r.getMessage() for r in lines.records if r.levelno >= logging.WARNING]
        assert len(loud) < 10, loud  # a few lines, not one per undelivered change
        assert lines.about("kafka path back", path="rating_changes", topic=run.ratings)
    finally:
        run.stop()


def _wait_not_ready(run: Run, path: str, topic: str, cause: str) -> None:
    run.wait_degraded(path, topic, cause)
    status, text = S.http_get(run.base + "/readyz")
    assert status == 503 and "consume=0" in text, text  # it rates nothing meanwhile
    failures = _metric(run.base, "adr_consume_failures_total", topic=topic, cause=cause)
    assert failures is not None and failures >= 1


def test_a_denied_kill_topic_is_not_ready_and_resumes_once_allowed(
    broker: str, redis_url: str, unique_name, lines: S.LogLines
) -> None:
    run = Run(broker, redis_url, unique_name, 2_000, seed=303)
    try:
        run.publish(1_000)
        run.wait_rated()
        # A resource with an ACL loses allow.everyone.if.no.acl.found: the test's publisher
        # (ANONYMOUS too) keeps its WRITE by an ALLOW of its own.
        _acl_on(run.admin, run.topic, AclOperation.WRITE, AclPermissionType.ALLOW)
        _deny(run.admin, run.topic, AclOperation.READ)
        run.publish(1_000)
        _wait_not_ready(run, "kill_events", run.topic, "not_authorized")
        assert run.consumer.thread.is_alive()
        _allow_again(run.admin, run.topic, AclOperation.READ)
        _drop_acl(run.admin, run.topic, AclOperation.WRITE, AclPermissionType.ALLOW)  # no ACL left
        run.wait_rated()
        run.wait_back("kill_events", run.topic, "not_authorized")
        assert S.http_get(run.base + "/readyz")[0] == 200
        run.assert_every_change_delivered()
        said = _summary_lines(lines, "kill_events", run.topic, "not_authorized")
        assert 1 <= len(said) <= 4, [r.__dict__ for r in said]
    finally:
        run.stop()


def _deny_group(admin: AdminClient, group: str, deny: bool) -> None:
    args = (ResourceType.GROUP, group, ResourcePatternType.LITERAL, ANONYMOUS, "*",
            AclOperation.READ, AclPermissionType.DENY)  # fmt: skip
    if deny:
        futures = admin.create_acls([AclBinding(*args)])
    else:
        futures = admin.delete_acls([AclBindingFilter(*args)])
    for future in futures.values():
        future.result(timeout=30)


def test_a_denied_group_is_not_ready_and_joins_once_allowed(
    broker: str, redis_url: str, unique_name, lines: S.LogLines
) -> None:
    group = unique_name("g")
    admin = AdminClient({"bootstrap.servers": broker})
    _deny_group(admin, group, deny=True)
    run = Run(broker, redis_url, unique_name, 1_000, seed=304, group=group)
    try:
        run.publish(1_000)
        _wait_not_ready(run, "kill_events", run.topic, "not_authorized")
        assert run.consumer.thread.is_alive()
        _deny_group(admin, group, deny=False)
        run.wait_rated()
        run.wait_back("kill_events", run.topic, "not_authorized")
        run.assert_every_change_delivered()
        said = _summary_lines(lines, "kill_events", run.topic, "not_authorized")
        assert said and said[0].code == "GROUP_AUTHORIZATION_FAILED"
    finally:
        run.stop()


def test_a_missing_kill_topic_is_not_ready_and_rates_once_created(
    broker: str, redis_url: str, unique_name, lines: S.LogLines
) -> None:
    run = Run(broker, redis_url, unique_name, 1_000, seed=305, create_kill_topic=False)
    try:
        _wait_not_ready(run, "kill_events", run.topic, "topic_missing")
        assert run.consumer.thread.is_alive()
        _create(run.admin, [run.topic])
        run.publish(1_000)
        run.wait_rated()
        run.wait_back("kill_events", run.topic, "topic_missing")
        run.assert_every_change_delivered()
    finally:
        run.stop()


class _RefusingProducer:
    """A producer whose every produce() raises `code` (what librdkafka raises when the broker
    does not support a request the client needs): a stand-in, as no local broker refuses so."""

    def __init__(self, code: int) -> None:
        self.code = code

    def produce(self, *_args: object, **_kwargs: object) -> None:
        raise KafkaException(KafkaError(self.code))

    def poll(self, _timeout: float = 0) -> int:
        return 0

    def __len__(self) -> int:
        return 0

    def list_topics(self, *_args: object, **_kwargs: object) -> None:
        """The metadata asked for before producing again after a refusal of the topic (once
        the backoff has passed: on a loaded machine, between two of the test's pumps)."""
        raise KafkaException(KafkaError(self.code))


def test_what_no_retry_can_change_exits_3_with_the_cause(
    redis_url: str, unique_name, monkeypatch: pytest.MonkeyPatch, lines: S.LogLines
) -> None:
    """The relay raises KafkaUnrecoverable for an EXIT fault (here UNSUPPORTED_VERSION), and
    `adr consume` turns it into exit status 3 with one error line naming it; a topic refusal
    (TOPIC_AUTHORIZATION_FAILED) in the same place waits instead."""
    client = redis.Redis.from_url(redis_url)
    keys = Keys(unique_name("ns"))
    client.xadd(keys.outbox, {"m": msgspec.msgpack.encode([("p1", b"change")])})
    config = Config(rating_topic="ratings", instance_id="r1", backoff_initial_s=0.01)
    unsupported = Relay(
        client, _RefusingProducer(KafkaError.UNSUPPORTED_VERSION), keys, config, Metrics()
    )
    with pytest.raises(KafkaUnrecoverable, match="UNSUPPORTED_VERSION") as caught:
        unsupported.pump()
    assert caught.value.fault.cause.value == "unsupported"
    metrics = Metrics()
    denied = Relay(
        client, _RefusingProducer(KafkaError.TOPIC_AUTHORIZATION_FAILED), keys, config, metrics
    )
    denied.use_producer(denied._producer)  # forget the entry the first relay took
    client.xgroup_destroy(keys.outbox, "relay")
    for _ in range(3):
        denied.pump()  # waits: no exception
    assert metrics.degraded.cause(RATING_CHANGES, "ratings") == "not_authorized"
    assert client.xlen(keys.outbox) == 1  # the change waits in the outbox
    client.close()

    class _Pipeline:
        def __init__(self, *_args: object, **_kwargs: object) -> None:
            pass

        def run(self) -> None:
            raise caught.value

    monkeypatch.setattr("consumer.pipeline.Pipeline", _Pipeline)
    from consumer import cli

    args = argparse.ArgumentParser()
    cli.add_arguments(args)
    assert cli.run(args.parse_args([])) == cli.EXIT_KAFKA == 3
    said = lines.about("kafka refuses what this process cannot change, exiting")
    assert [(r.cause, r.code, r.exit_code) for r in said] == [
        ("unsupported", "UNSUPPORTED_VERSION", 3)
    ]


def test_a_kill_topic_deleted_under_the_consumer_is_reported_then_held_when_recreated(
    broker: str, redis_url: str, unique_name, lines: S.LogLines
) -> None:
    """The topic goes (the consume error says so: `topic_missing`, not ready, no crash); created
    again it is empty, so the offset Redis stored lies past its end: the partition is held
    (AdrPartitionHeld) instead of reading the new log from a wrong place."""
    run = Run(broker, redis_url, unique_name, 600, seed=307)
    try:
        run.publish(600)
        run.wait_rated()
        for future in run.admin.delete_topics([run.topic]).values():
            future.result(timeout=30)
        # librdkafka says nothing for minutes; the consumer asks the broker every 5 s
        _wait_not_ready(run, "kill_events", run.topic, "topic_missing")
        assert run.consumer.thread.is_alive()
        _create(run.admin, [run.topic])
        run.wait_back("kill_events", run.topic, "topic_missing")
        S.wait_until(
            lambda: _metric(run.base, "adr_partition_held", partition="0") == 1.0,
            60,
            "the partition held: its stored offset lies past the new log's end",
        )
        status, text = S.http_get(run.base + "/readyz")
        assert status == 503 and "offsets=0" in text, text
        assert run.consumer.thread.is_alive()
        assert S.applied_offsets(run.client, run.keys, run.topic) == {0: 600}  # nothing re-read
    finally:
        run.stop()
