"""A stored offset outside the log (records deleted, topic recreated) holds the partition:
nothing is applied from wherever Kafka would reset to, the gauge says so, and once the stored
offset lies inside the log again (the documented recovery) the partition is read on."""

from __future__ import annotations

import dataclasses
import time

import consumer_support as S
import pytest
from confluent_kafka import TopicPartition
from prometheus_client import CollectorRegistry

from consumer.config import Config
from engine import Params

RECHECK_MS = 300
PARAMS = Params()


def _held(registry: CollectorRegistry, partition: int) -> float | None:
    return registry.get_sample_value("adr_partition_held", {"partition": str(partition)})


@pytest.fixture
def pool(kafka_admin, redis_url: str, unique_name, consumer_config):  # type: ignore[no-untyped-def]
    """`pool(n, seed, applied=0)`: a one-partition topic, a rating pool, `n` events and the
    consumer's Config, the first `applied` events produced and consumed into the pool:
    (topic, keys, client, events, config)."""

    def make(n: int, seed: int, applied: int = 0):  # type: ignore[no-untyped-def]
        topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
        events = S.events(n, players=50, arenas=5, seed=seed)
        config = consumer_config(redis_url, ns, topic, batch_size=50, held_recheck_ms=RECHECK_MS)
        if applied:
            S.produce(config.bootstrap_servers, topic, S.encoded(events[:applied]))
            _run_until_applied(config, client, keys, topic, applied)
        return topic, keys, client, events, config

    return make


def _run_until_applied(config: Config, client, keys, topic: str, end: int) -> None:  # type: ignore[no-untyped-def]
    consumer = S.start_threaded(config, PARAMS)
    try:
        S.wait_applied(client, keys, topic, {0: end}, 60, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()


def _held_consumer(config: Config) -> S.ThreadedConsumer:
    """A consumer on `config` whose partition 0 is held, and still held a second later."""
    consumer = S.start_threaded(config, PARAMS)
    try:
        registry = consumer.pipeline.metrics.registry
        S.wait_until(lambda: _held(registry, 0) == 1, 30, "partition 0 held")
        time.sleep(1.0)  # several rechecks
        assert _held(registry, 0) == 1
    except BaseException:
        consumer.stop()
        raise
    return consumer


def test_stored_offset_before_the_log_start_holds_the_partition_until_set_inside(
    kafka_bootstrap: str, kafka_admin, pool
) -> None:
    topic, keys, client, events, config = pool(200, seed=3, applied=100)

    S.produce(kafka_bootstrap, topic, S.encoded(events[100:]))
    deleted = kafka_admin.client.delete_records([TopicPartition(topic, 0, 150)])
    for future in deleted.values():
        future.result(timeout=30)  # log start 150: offsets 100..149 are gone, never applied

    consumer = _held_consumer(config)  # after several rechecks: nothing read from 150 on
    try:
        registry = consumer.pipeline.metrics.registry
        assert S.applied_offsets(client, keys, topic) == {0: 100}
        assert "before the log start 150" in consumer.pipeline.log_range.held[0]
        metrics = consumer.pipeline.metrics
        assert not metrics.ready() and metrics.health.detail("held") == "0"

        # The documented recovery when the gap is accepted: store the log start as next offset.
        client.hset(keys.offsets(topic), "0", "150")
        S.wait_applied(client, keys, topic, {0: 200}, 60, alive=consumer.thread.is_alive)
        assert _held(registry, 0) == 0
        assert metrics.health.up("offsets") and metrics.health.detail("held") is None
    finally:
        consumer.stop()
    S.assert_as_replayed(client, keys, events[:100] + events[150:], PARAMS)
    client.close()


def test_stored_offset_past_the_end_of_a_recreated_topic_holds_the_partition(
    kafka_bootstrap: str, kafka_admin, pool
) -> None:
    topic, keys, client, events, config = pool(130, seed=4, applied=100)
    state = S.redis_players(client, keys)

    kafka_admin.delete([topic])
    deadline = time.monotonic() + 60
    while True:  # the broker deletes asynchronously
        try:
            kafka_admin.create(topic, partitions=1)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    S.produce(kafka_bootstrap, topic, S.encoded(events[100:]))  # a new log of 30: 0..29

    consumer = _held_consumer(config)
    try:
        assert "past the log end 30" in consumer.pipeline.log_range.held[0]
        assert S.applied_offsets(client, keys, topic) == {0: 100}
        assert S.redis_players(client, keys) == state  # nothing applied
    finally:
        consumer.stop()
    client.close()


def test_a_position_that_falls_outside_the_log_while_reading_holds_the_partition(
    kafka_bootstrap: str, kafka_admin, pool
) -> None:
    """Retention overtaking a consumer that fell behind: librdkafka's fetch fails out of range
    (auto.offset.reset=error) and the partition is held instead of jumping to the log start.
    The test holds the consumer back by pausing its fetch, as a slow consumer would lag."""
    topic, keys, client, events, config = pool(200, seed=5)
    S.produce(kafka_bootstrap, topic, S.encoded(events[:100]))
    consumer = S.start_threaded(config, PARAMS)
    try:
        S.wait_applied(client, keys, topic, {0: 100}, 60, alive=consumer.thread.is_alive)
        kafka = consumer.pipeline.kafka
        kafka.pause([TopicPartition(topic, 0)])  # the consumer falls behind at offset 100 ...
        S.produce(kafka_bootstrap, topic, S.encoded(events[100:]))
        for future in kafka_admin.client.delete_records([TopicPartition(topic, 0, 150)]).values():
            future.result(timeout=30)  # ... and retention deletes 100..149 before it reads them
        kafka.resume([TopicPartition(topic, 0)])
        registry = consumer.pipeline.metrics.registry
        S.wait_until(lambda: _held(registry, 0) == 1, 30, "partition 0 held")
        time.sleep(1.0)
        assert S.applied_offsets(client, keys, topic) == {0: 100}
        assert _held(registry, 0) == 1
    finally:
        consumer.stop()
    client.close()


def test_no_stored_offset_with_a_committed_group_and_a_truncated_log_holds_the_partition(
    kafka_bootstrap: str, kafka_admin, pool, unique_name
) -> None:
    """Redis lost everything (restarted empty) while no consumer ran, and retention has moved
    the log start: reading from the log start would rebuild without offsets 0..49, silently.
    The group's committed offset (which follows Redis's) tells this from a first run."""
    topic, keys, client, events, config = pool(150, seed=6, applied=100)  # group commits 100
    S.produce(kafka_bootstrap, topic, S.encoded(events[100:]))
    for future in kafka_admin.client.delete_records([TopicPartition(topic, 0, 50)]).values():
        future.result(timeout=30)
    # Redis comes back empty (what the consumer reads at assignment: no stored offset)
    client.delete(keys.offsets(topic), keys.watermarks(topic))

    consumer = _held_consumer(config)
    try:
        assert "log starts at 50" in consumer.pipeline.log_range.held[0]
        assert S.applied_offsets(client, keys, topic) == {}
    finally:
        consumer.stop()

    # A first run (a group that never committed) on the same truncated log reads from its start.
    fresh = dataclasses.replace(config, group=unique_name("g"))
    _run_until_applied(fresh, client, keys, topic, 150)
    client.close()
