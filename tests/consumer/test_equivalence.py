"""Kafka → consumer → Redis gives the same state as the engine's replay of the same events."""

from __future__ import annotations

import consumer_support as S
from confluent_kafka import Consumer, TopicPartition

from consumer.config import Config
from engine import Params
from schemas import decode_rating_change

EVENTS = 50_000


def test_50k_events_through_kafka_equal_the_replay(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    # One partition: the replay's order is then the consumer's order, so σ̄ (a mean over every
    # tracked player, changed by every event) matches bit for bit, not just within tolerance.
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    params = Params()
    events = S.events(EVENTS, players=5_000, arenas=50, seed=11)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    config = Config(
        bootstrap_servers=kafka_bootstrap,
        redis_url=redis_url,
        namespace=ns,
        topic=topic,
        group=unique_name("g"),
        rating_topic=f"{topic}-ratings",
        dlq_topic=f"{topic}-dlq",
    )
    consumer = S.start_threaded(config, params)
    try:
        S.wait_applied(client, keys, topic, {0: EVENTS}, 240, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()

    book = S.replay(events, params, S.SNAPSHOT)
    assert book.counted > 0.8 * EVENTS and book.duplicates > 0.05 * EVENTS
    S.assert_redis_equals_replay(client, keys, book, params, exact=True)
    assert client.xlen(keys.outbox) == 0  # everything relayed at SIGTERM-like stop
    # Kafka's group offsets (lag dashboards only) caught up at stop.
    assert _group_offsets(kafka_bootstrap, config.group, topic) == {0: EVENTS}

    changes = [
        decode_rating_change(m.value())
        for m in S.read_topic(kafka_bootstrap, f"{topic}-ratings", expect=2 * book.counted)
    ]
    ids = [c.id for c in changes]
    assert len(ids) == len(set(ids)) == 2 * book.counted  # no crash: no duplicate either
    assert set(ids) == S.change_ids(book.counted_ids)
    # mu_before is the stored (pre-decay) μ: the first change of a player starts at mu0.
    first = {}
    for c in changes:
        first.setdefault(c.player, c)
    assert all(c.mu_before == params.mu0 for c in first.values())
    # the last change of each player ends at its stored μ
    last = {c.player: c for c in changes}
    players = book.players()
    assert all(last[p].mu_after == players[p].mu for p in last)
    client.close()


def _group_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return {
            tp.partition: tp.offset
            for tp in probe.committed([TopicPartition(topic, 0)], timeout=30)
        }
    finally:
        probe.close()


def test_opt_in_extensions_through_kafka_equal_the_replay(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    # Every engine switch on (docs/evaluation.md, "Opt-in extensions"): the consumer's rate_kill
    # gets each pair's last counted time from Redis (repeat_window), the replay from its pair
    # table; both must keep it as long as the window and give the same state bit for bit.
    # 40 players in 4 arenas repeat pairs within the 600 s window; μ_min = 950 brings the soft
    # floor into play.
    events_n = 6_000
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    params = Params.from_overrides(
        {"bound_return_decay": 1, "zero_sum_update": 1, "floor_margin": 120,
         "repeat_window": 600, "mu_min": 950}
    )  # fmt: skip
    events = S.events(events_n, players=40, arenas=4, seed=12)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    config = Config(
        bootstrap_servers=kafka_bootstrap,
        redis_url=redis_url,
        namespace=ns,
        topic=topic,
        group=unique_name("g"),
        rating_topic=f"{topic}-ratings",
        dlq_topic=f"{topic}-dlq",
    )
    consumer = S.start_threaded(config, params)
    try:
        S.wait_applied(client, keys, topic, {0: events_n}, 240, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()
    book = S.replay(events, params, S.SNAPSHOT)
    paper = S.replay(events, Params(), S.SNAPSHOT)
    assert book.counted == paper.counted  # the switches weigh events, they drop none
    assert book.players() != paper.players()
    assert min(s.mu for s in book.players().values()) > params.mu_min
    S.assert_redis_equals_replay(client, keys, book, params, exact=True)
    client.close()
