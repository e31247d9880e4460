"""The write held back and sent behind the next batch's read: the batch behind is rated on top of
it, and when it does not apply (a concurrent change), both are redone and nothing is lost."""

from __future__ import annotations

import time

import consumer_support as S
import pytest
import redis
from confluent_kafka import Message

from consumer._batch import rate_batch
from consumer._intake import Accepted
from consumer._store import Store
from consumer.config import Config
from consumer.pipeline import Pipeline
from engine import Params, RatingBook
from redis_layout import Keys
from schemas import encode_kill_event, kill_event

TOPIC = "kill-events"


def _message(offset: int, i: int, a: str, b: str, ts: int) -> Message:
    event = kill_event(id=f"e{i}", arena="x", attacker=a, victim=b, ts=ts)
    return Message(
        topic=TOPIC, partition=0, offset=offset, key=b"x", value=encode_kill_event(event)
    )


@pytest.fixture
def pipeline(kafka_bootstrap: str, redis_url: str, unique_name):
    config = Config(
        bootstrap_servers=kafka_bootstrap,
        redis_url=redis_url,
        namespace=unique_name("pl"),
        topic=TOPIC,
        group=unique_name("g"),
        rating_topic=unique_name("ratings"),
        dlq_topic=unique_name("dlq"),
        metrics_port=0,
    )
    made = Pipeline(config, Params())
    S.publish_snapshot(made.redis, made.keys, S.SNAPSHOT)
    yield made
    made.kafka.close()
    made.redis.close()


def _replay(events: list[tuple[str, str, str, int]], params: Params) -> RatingBook:
    book = RatingBook(params, fixed_snapshot=S.SNAPSHOT)
    for event_id, a, b, ts in events:
        book.apply(event_id, a, b, ts)
    return book


def _stored(client: redis.Redis, keys: Keys) -> dict[str, tuple[float, int, int]]:
    return {p: (s.mu, s.n, ver) for p, (s, ver) in S.redis_players(client, keys).items()}


def test_the_batch_behind_is_rated_on_top_of_the_write_ahead(pipeline: Pipeline) -> None:
    client, keys = pipeline.redis, pipeline.keys
    now = time.time_ns() // 1_000_000 - 120_000  # the last event is 70 s later, still in the past
    pipeline.lifecycle.process([_message(0, 1, "a", "b", now), _message(1, 2, "c", "a", now + 1)])
    assert client.exists(keys.player("a")) == 0  # held back, not written yet
    pipeline.lifecycle.process(
        [_message(2, 3, "a", "b", now + 2), _message(3, 4, "a", "d", now + 70_000)]
    )
    # The first batch is written and confirmed; the second (a duplicate a→b inside the cooldown,
    # then a→d on top of the first batch's a) is held back until flushed.
    assert S.applied_offsets(client, keys, TOPIC) == {0: 2}
    pipeline.flush()
    assert S.applied_offsets(client, keys, TOPIC) == {0: 4}
    book = _replay(
        [("e1", "a", "b", now), ("e2", "c", "a", now + 1), ("e3", "a", "b", now + 2),
         ("e4", "a", "d", now + 70_000)],
        pipeline.params,
    )  # fmt: skip
    assert book.duplicates == 1
    want = {p: (s.mu, s.n) for p, s in book.players().items()}
    assert {p: (mu, n) for p, (mu, n, _v) in _stored(client, keys).items()} == want
    assert pipeline.metrics.conflicts._value.get() == 0


def test_a_write_ahead_that_conflicts_is_redone_and_the_batch_behind_rated_again(
    pipeline: Pipeline,
) -> None:
    client, keys, params = pipeline.redis, pipeline.keys, pipeline.params
    now = time.time_ns() // 1_000_000
    pipeline.lifecycle.process([_message(0, 1, "a", "b", now)])  # held back, computed on a fresh a
    # Meanwhile another instance (another partition of another topic) moves a on.
    theirs = Store(client, keys, "other-topic", params)
    other = Accepted(0, 0, kill_event(id="o1", arena="y", attacker="c", victim="a", ts=now - 5))
    view = theirs.read_view(["c", "a"], [keys.cooldown("c", "a")], [0])
    theirs.write(rate_batch([other], {0: 1}, view, keys, params))
    # The next batch sends the held write (it conflicts on a's ver) and rates itself on top of it.
    pipeline.lifecycle.process([_message(1, 2, "a", "d", now + 1)])
    assert pipeline.metrics.conflicts._value.get() == 1
    assert S.applied_offsets(client, keys, TOPIC) == {0: 1}  # the first batch, redone
    pipeline.flush()
    assert S.applied_offsets(client, keys, TOPIC) == {0: 2}
    book = _replay(
        [("o1", "c", "a", now - 5), ("e1", "a", "b", now), ("e2", "a", "d", now + 1)], params
    )
    stored = _stored(client, keys)
    assert {p: (mu, n) for p, (mu, n, _v) in stored.items()} == {
        p: (s.mu, s.n) for p, s in book.players().items()
    }
    assert stored["a"][1:] == (3, 3)  # three counted events, three writes: none lost
