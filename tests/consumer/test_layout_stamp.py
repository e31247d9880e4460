"""The consumer stamps the pool's layout version `{ns}:layout` when partitions are assigned to
it, before it applies anything, and stops on a pool another layout version wrote (readers check
the key: docs/leaderboards.md, "Compatibility")."""

from __future__ import annotations

from typing import Any

import consumer_support as S

from consumer.config import Config
from consumer.pipeline import Pipeline
from engine import Params
from redis_layout import LAYOUT_VERSION, UnknownLayout


def _config(kafka_bootstrap: str, redis_url: str, ns: str, topic: str, unique_name: Any) -> Config:
    return Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=unique_name("g"), rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
    )  # fmt: skip


def test_the_consumer_stamps_the_layout_before_its_first_write(
    kafka_bootstrap: str, redis_url: str, kafka_admin: Any, unique_name: Any
) -> None:
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    events = S.events(200, players=20, arenas=3, seed=11)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    consumer = S.start_threaded(
        _config(kafka_bootstrap, redis_url, ns, topic, unique_name), Params()
    )
    try:
        S.wait_applied(client, keys, topic, {0: len(events)}, 120, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()
    assert client.get(keys.layout) == str(LAYOUT_VERSION).encode()


def test_the_consumer_stops_on_a_pool_of_another_layout_and_writes_nothing(
    kafka_bootstrap: str, redis_url: str, kafka_admin: Any, unique_name: Any
) -> None:
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    client.set(keys.layout, str(LAYOUT_VERSION + 1))  # a later release's pool
    S.produce(kafka_bootstrap, topic, S.encoded(S.events(50, players=10, arenas=2, seed=3)))
    pipeline = Pipeline(_config(kafka_bootstrap, redis_url, ns, topic, unique_name), Params())
    raised = S.raised_at_start(pipeline, "the consumer ran on a pool of another layout")
    assert len(raised) == 1 and isinstance(raised[0], UnknownLayout), raised
    assert client.get(keys.layout) == str(LAYOUT_VERSION + 1).encode()  # left as it was
    assert client.exists(keys.lb, keys.pop, keys.offsets(topic)) == 0  # nothing applied
