"""Kafka → consumer → Redis gives the same state as the engine's replay of the same events."""

from __future__ import annotations

import consumer_support as S
import redis
from confluent_kafka import Consumer, TopicPartition

from consumer.config import Config
from engine import Params, profile_overrides
from redis_layout import Keys
from schemas import decode_rating_change

EVENTS = 50_000


def test_50k_events_through_kafka_equal_the_replay(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    # One partition: the replay's order is then the consumer's order, so σ̄ (a mean over every
    # tracked player, changed by every event) matches bit for bit, not just within tolerance.
    params = Params()
    events = S.events(EVENTS, players=5_000, arenas=50, seed=11)
    keys, client, config = _consume(
        kafka_bootstrap, redis_url, kafka_admin, unique_name, params, events
    )
    topic = config.topic

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
    # --profile recommended, every engine switch on (docs/evaluation.md): the consumer's rate_kill
    # gets each pair's last counted time from Redis (repeat_window), the replay from its pair
    # table; both must keep it as long as the window and give the same state bit for bit.
    # 40 players in 4 arenas repeat pairs within the 600 s repeat_window; μ_min = 950 brings the
    # soft floor into play.
    params = Params.from_overrides({**profile_overrides("recommended"), "mu_min": 950})
    events = S.events(6_000, players=40, arenas=4, seed=12)
    keys, client, _ = _consume(kafka_bootstrap, redis_url, kafka_admin, unique_name, params, events)
    book = S.replay(events, params, S.SNAPSHOT)
    paper = S.replay(events, Params(), S.SNAPSHOT)
    assert book.counted == paper.counted  # the switches weigh events, they drop none
    assert book.players() != paper.players()
    assert min(s.mu for s in book.players().values()) > params.mu_min
    S.assert_redis_equals_replay(client, keys, book, params, exact=True)
    client.close()


def _consume(  # type: ignore[no-untyped-def]
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, params: Params, events
) -> tuple[Keys, redis.Redis, Config]:
    """Produce `events` to a new one-partition topic and consume all of them into a new pool."""
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    return S.consume_all(kafka_bootstrap, redis_url, unique_name, topic, params, len(events))
