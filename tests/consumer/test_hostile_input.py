"""Hostile messages on the real broker: each ends in the dead-letter topic with its reason, the
consumer stays up, the partition moves on, and the good events around them all apply.

The messages: a tombstone (null value), an empty value, every file of the decoders' fuzz corpus
(deep nesting, ext types, NaN, 64-bit extremes, ...), a value just under the broker's message
limit, a half-megabyte key, and the meaning check on keys (a null key, a key that is not the
event's arena).
"""

from __future__ import annotations

import time
from pathlib import Path

import consumer_support as S
from confluent_kafka import Producer
from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

from consumer.config import Config
from engine import Params
from schemas import SchemaError, decode_kill_event, encode_kill_event, kill_event

CORPUS = Path(__file__).parents[1] / "schemas" / "fuzz_corpus"
_HEADROOM = 1000
"""Bytes under the topic's max.message.bytes left for the record batch's overhead and, in the
dead-letter copy (whose topic has the same limit here), the added headers."""


def _topic_max_bytes(admin, topic: str) -> int:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.client.describe_configs([resource])[resource].result(timeout=30)
    return int(configs["max.message.bytes"].value)


def _expected_reason(raw: bytes, now: int) -> str:
    try:
        decode_kill_event(raw, now)
    except SchemaError as exc:
        return exc.reason.value
    return "key_mismatch"  # the test sends decodable ones under a key that is not their arena


def _produce_big(bootstrap: str, topic: str, items: list[tuple[bytes | None, bytes | None]]):
    producer = Producer(
        {"bootstrap.servers": bootstrap, "message.max.bytes": 4_000_000, "linger.ms": 5}
    )
    failures = []

    def report(err, _msg) -> None:
        if err is not None:
            failures.append(err)

    for key, value in items:
        producer.produce(topic, key=key, value=value, on_delivery=report)
        producer.flush(30)  # one at a time: the broker limit is per record batch
    assert not failures, failures


def test_hostile_messages_are_dead_lettered_and_the_partition_moves_on(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name
) -> None:
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    limit = _topic_max_bytes(kafka_admin, topic)
    ns, keys, client = S.rating_pool(redis_url, unique_name)
    params = Params()
    now = time.time_ns() // 1_000_000
    valid = kill_event(id="v-1", arena="arena-0", attacker="q1", victim="q2", ts=now - 1000)
    big_key = b"k" * 500_000
    near_max = b"\xc1" + b"\x00" * (limit - _HEADROOM - 1 - len(b"arena-0"))
    bad: list[tuple[bytes | None, bytes | None, str]] = [
        (b"arena-0", None, "undecodable"),  # tombstone
        (b"arena-0", b"", "undecodable"),
        (b"arena-0", near_max, "too_large"),
        (big_key, encode_kill_event(valid), "key_mismatch"),
        (None, encode_kill_event(valid), "key_mismatch"),
        (b"arena-1", encode_kill_event(valid), "key_mismatch"),
    ]
    for path in sorted(CORPUS.glob("*.msgpack")):
        raw = path.read_bytes()
        bad.append((b"arena-0", raw, _expected_reason(raw, now)))
    good = S.events(600, players=60, arenas=4, seed=11)
    stream: list[tuple[bytes | None, bytes | None]] = []
    expected: list[tuple[str, bytes | None, bytes | None]] = []
    pending = list(bad)
    for i, event in enumerate(good):
        stream.append((event.arena.encode(), encode_kill_event(event)))
        if i % 8 == 4 and pending:
            key, value, reason = pending.pop(0)
            stream.append((key, value))
            expected.append((reason, key, value))
    assert not pending
    _produce_big(kafka_bootstrap, topic, stream)

    config = Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=unique_name("g"), rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
        metrics_host="127.0.0.1", metrics_port=0, batch_size=50,
    )  # fmt: skip
    consumer = S.start_threaded(config, params)
    try:
        S.wait_applied(client, keys, topic, {0: len(stream)}, 180, alive=consumer.thread.is_alive)
        S.wait_outbox_empty(client, keys, 30)
        assert consumer.thread.is_alive()
    finally:
        consumer.stop()

    dead = S.read_topic(kafka_bootstrap, f"{topic}-dlq", expect=len(expected))
    assert [dict(m.headers())["reason"].decode() for m in dead] == [r for r, _, _ in expected]
    for m, (_reason, key, value) in zip(dead, expected, strict=True):
        assert (m.key(), m.value()) == (key, value)  # bytes untouched, the near-limit one too
    book = S.replay(good, params, S.SNAPSHOT)
    S.assert_redis_equals_replay(client, keys, book, params, exact=True)
    client.close()


class _Message:
    """The part of confluent_kafka.Message that the decode stage reads."""

    def __init__(self, key: bytes | None, value: bytes | None) -> None:
        self._key, self._value = key, value

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 7


def test_a_decoder_bug_is_dead_lettered_as_undecodable_and_counted(
    monkeypatch, kafka_bootstrap: str, redis_url: str
) -> None:
    """The guard behind the fuzz property: were a decoder ever to raise something else, the
    message is rejected (and counted), not the consumer."""
    import consumer._intake as intake_module
    from consumer.pipeline import Pipeline

    def broken(raw: bytes, now_ms: int, limits: object) -> None:
        raise ValueError("a decoder bug")

    pipeline = Pipeline(
        Config(bootstrap_servers=kafka_bootstrap, redis_url=redis_url, metrics_port=0), Params()
    )
    try:
        monkeypatch.setattr(intake_module, "decode_kill_event", broken)
        message = _Message(b"arena-0", b"\x80")
        accepted, rejected = pipeline.lifecycle._intake._decode([message])  # type: ignore[list-item]
        assert accepted == [] and rejected == [(message, "undecodable")]
        swallowed = pipeline.metrics.registry.get_sample_value(
            "adr_errors_swallowed_total", {"where": "decode"}
        )
        assert swallowed == 1.0
    finally:
        pipeline.kafka.close()
        pipeline.redis.close()
