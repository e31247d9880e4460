"""A stored offset outside the log (records deleted, topic recreated) holds the partition:
nothing is applied from wherever Kafka would reset to, the gauge says so, and once the stored
offset lies inside the log again (the documented recovery) the partition is read on."""

from __future__ import annotations

import time

import consumer_support as S
from confluent_kafka import TopicPartition
from prometheus_client import CollectorRegistry

from consumer.config import Config
from engine import Params

RECHECK_MS = 300


def _held(registry: CollectorRegistry, partition: int) -> float | None:
    return registry.get_sample_value("adr_partition_held", {"partition": str(partition)})


def _config(kafka_bootstrap: str, redis_url: str, ns: str, topic: str, group: str) -> Config:
    return Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=group, rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq", batch_size=50,
        held_recheck_ms=RECHECK_MS,
    )  # fmt: skip


def _run_until_applied(config: Config, params: Params, client, keys, topic: str, end: int) -> None:
    consumer = S.start_threaded(config, params)
    try:
        S.wait_applied(client, keys, topic, {0: end}, 60, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()


def test_stored_offset_before_the_log_start_holds_the_partition_until_set_inside(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    params = Params()
    events = S.events(200, players=50, arenas=5, seed=3)
    config = _config(kafka_bootstrap, redis_url, ns, topic, unique_name("g"))
    S.produce(kafka_bootstrap, topic, S.encoded(events[:100]))
    _run_until_applied(config, params, client, keys, topic, 100)

    S.produce(kafka_bootstrap, topic, S.encoded(events[100:]))
    deleted = kafka_admin.client.delete_records([TopicPartition(topic, 0, 150)])
    for future in deleted.values():
        future.result(timeout=30)  # log start 150: offsets 100..149 are gone, never applied

    consumer = S.start_threaded(config, params)
    try:
        registry = consumer.pipeline.metrics.registry
        S.wait_until(lambda: _held(registry, 0) == 1, 30, "partition 0 held")
        time.sleep(1.0)  # several rechecks: it stays held, and nothing is read from 150 on
        assert _held(registry, 0) == 1
        assert S.applied_offsets(client, keys, topic) == {0: 100}
        assert "before the log start 150" in consumer.pipeline.log_range.held[0]
        metrics = consumer.pipeline.metrics
        assert not metrics.ready() and metrics.ready_detail["held"] == "0"

        # The documented recovery when the gap is accepted: store the log start as next offset.
        client.hset(keys.offsets(topic), "0", "150")
        S.wait_applied(client, keys, topic, {0: 200}, 60, alive=consumer.thread.is_alive)
        assert _held(registry, 0) == 0
        assert metrics.ready_flags["offsets"] and "held" not in metrics.ready_detail
    finally:
        consumer.stop()
    book = S.replay(events[:100] + events[150:], params, S.SNAPSHOT)
    S.assert_redis_equals_replay(client, keys, book, params, exact=True)
    client.close()


def test_stored_offset_past_the_end_of_a_recreated_topic_holds_the_partition(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    params = Params()
    events = S.events(130, players=50, arenas=5, seed=4)
    config = _config(kafka_bootstrap, redis_url, ns, topic, unique_name("g"))
    S.produce(kafka_bootstrap, topic, S.encoded(events[:100]))
    _run_until_applied(config, params, client, keys, topic, 100)
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

    consumer = S.start_threaded(config, params)
    try:
        registry = consumer.pipeline.metrics.registry
        S.wait_until(lambda: _held(registry, 0) == 1, 30, "partition 0 held")
        time.sleep(1.0)
        assert "past the log end 30" in consumer.pipeline.log_range.held[0]
        assert S.applied_offsets(client, keys, topic) == {0: 100}
        assert S.redis_players(client, keys) == state  # nothing applied
    finally:
        consumer.stop()
    client.close()


def test_a_position_that_falls_outside_the_log_while_reading_holds_the_partition(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    """Retention overtaking a consumer that fell behind: librdkafka's fetch fails out of range
    (auto.offset.reset=error) and the partition is held instead of jumping to the log start.
    The test holds the consumer back by pausing its fetch, as a slow consumer would lag."""
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    params = Params()
    events = S.events(200, players=50, arenas=5, seed=5)
    config = _config(kafka_bootstrap, redis_url, ns, topic, unique_name("g"))
    S.produce(kafka_bootstrap, topic, S.encoded(events[:100]))
    consumer = S.start_threaded(config, params)
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
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    """Redis lost everything (restarted empty) while no consumer ran, and retention has moved
    the log start: reading from the log start would rebuild without offsets 0..49, silently.
    The group's committed offset (which follows Redis's) tells this from a first run."""
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    params = Params()
    events = S.events(150, players=50, arenas=5, seed=6)
    group = unique_name("g")
    config = _config(kafka_bootstrap, redis_url, ns, topic, group)
    S.produce(kafka_bootstrap, topic, S.encoded(events[:100]))
    _run_until_applied(config, params, client, keys, topic, 100)  # commits 100 for the group
    S.produce(kafka_bootstrap, topic, S.encoded(events[100:]))
    for future in kafka_admin.client.delete_records([TopicPartition(topic, 0, 50)]).values():
        future.result(timeout=30)
    # Redis comes back empty (what the consumer reads at assignment: no stored offset)
    client.delete(keys.offsets(topic), keys.watermarks(topic))

    consumer = S.start_threaded(config, params)
    try:
        registry = consumer.pipeline.metrics.registry
        S.wait_until(lambda: _held(registry, 0) == 1, 30, "partition 0 held")
        time.sleep(1.0)
        assert "log starts at 50" in consumer.pipeline.log_range.held[0]
        assert S.applied_offsets(client, keys, topic) == {}
    finally:
        consumer.stop()

    # A first run (a group that never committed) on the same truncated log reads from its start.
    fresh = _config(kafka_bootstrap, redis_url, ns, topic, unique_name("g"))
    _run_until_applied(fresh, params, client, keys, topic, 150)
    client.close()
