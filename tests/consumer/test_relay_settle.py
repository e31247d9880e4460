"""How the outbox relay confirms an entry (consumer/_relay.py): the producer reports failures only,
and entries produced in full settle when its queue is empty. Against the real broker: every
entry is acknowledged exactly once and only after all its rating changes are in the topic; an
entry whose delivery failed stays in the outbox and is sent again."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import consumer_support as S
import msgspec
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consumer._kafka import producer_settings
from consumer._metrics import Metrics
from consumer._relay import Relay
from consumer.config import Config
from redis_layout import Keys
from stack import TopicAdmin

CLAIM_IDLE_MS = 300
SMALL_LIMIT = 2_000
"""The failure test's topic refuses record batches above this (max.message.bytes)."""


class _SpyRelay(Relay):
    """The relay, recording every entry id it acknowledges (XACK + XDEL)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.acked: list[bytes] = []

    def _queue_acknowledge(self, pipe: Any, ids: list[bytes]) -> None:
        self.acked += ids
        super()._queue_acknowledge(pipe, ids)


def _relay(client: redis.Redis, bootstrap: str, keys: Keys, topic: str, **over: Any) -> _SpyRelay:
    config = Config(
        bootstrap_servers=bootstrap, rating_topic=topic, instance_id="r1",
        outbox_claim_idle_ms=CLAIM_IDLE_MS, relay_pump_ms=200, **over,
    )  # fmt: skip
    metrics = Metrics()
    # The consumer's producer settings, delivery.report.only.error among them.
    producer = Producer(producer_settings(config, lambda _err: None))
    return _SpyRelay(client, producer, keys, config, metrics)


def _add(client: redis.Redis, keys: Keys, tag: str, sizes: list[int]) -> tuple[bytes, list[str]]:
    """One outbox entry of messages of `sizes` bytes (value = its id, padded); returns
    (entry id, the message ids)."""
    ids = [f"{tag}-{i}" for i in range(len(sizes))]
    pairs = [(f"p{i % 7}", i_d.encode().ljust(size, b".")) for i, (i_d, size) in
             enumerate(zip(ids, sizes, strict=True))]  # fmt: skip
    entry_id = client.xadd(keys.outbox, {"m": msgspec.msgpack.encode(pairs)})
    return entry_id, ids


def _ids_in(bootstrap: str, topic: str) -> Counter[str]:
    """How often each message id is on `topic` (read to its end)."""
    got = S.read_topic(bootstrap, topic)
    return Counter(m.value().split(b".", 1)[0].decode() for m in got)


def _pump_until_empty(relay: Relay, client: redis.Redis, keys: Keys, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while client.xlen(keys.outbox) > 0 or relay.in_flight:
        assert time.monotonic() < deadline, "the outbox did not drain"
        relay.pump()
        time.sleep(0.02)


def test_a_failed_delivery_leaves_the_entry_unacked_and_it_is_sent_again(
    kafka_bootstrap: str, kafka_admin: TopicAdmin, redis_url: str, unique_name
) -> None:
    topic = kafka_admin.create(
        unique_name("ratings"), partitions=1, config={"max.message.bytes": str(SMALL_LIMIT)}
    )
    keys = Keys(unique_name("ns"))
    client = redis.Redis.from_url(redis_url)
    relay = _relay(client, kafka_bootstrap, keys, topic)
    try:
        small = [_add(client, keys, f"s{i}", [100] * 5) for i in range(3)]
        _pump_until_empty(relay, client, keys, 30)
        assert sorted(relay.acked) == sorted(e for e, _ in small)

        big, big_ids = _add(client, keys, "big", [100, 4 * SMALL_LIMIT, 100])
        failures = relay._metrics.registry.get_sample_value
        reports: list[float] = []
        until = time.monotonic() + 8 * CLAIM_IDLE_MS / 1000
        while time.monotonic() < until:
            relay.pump()
            reports.append(failures("adr_errors_swallowed_total", {"where": "relay_delivery"}) or 0)
            time.sleep(0.02)
        assert big not in relay.acked  # never acknowledged while it fails
        assert client.xlen(keys.outbox) == 1
        # Sent again after each claim: more failures than the entry's first sending gave.
        assert reports[-1] > len(big_ids), reports[-1]

        kafka_admin.client.incremental_alter_configs([
            ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[ConfigEntry(
                "max.message.bytes", str(10 * SMALL_LIMIT),
                incremental_operation=AlterConfigOpType.SET,
            )]),
        ])[ConfigResource(ResourceType.TOPIC, topic)].result(timeout=30)  # fmt: skip
        _pump_until_empty(relay, client, keys, 30)
        assert Counter(relay.acked) == Counter([*(e for e, _ in small), big])  # once each
        got = _ids_in(kafka_bootstrap, topic)
        assert all(got[i] == 1 for _, ids in small for i in ids)  # sent before the failure
        assert all(got[i] >= 1 for i in big_ids)  # at least once
        assert client.xpending(keys.outbox, "relay")["pending"] == 0
    finally:
        relay._producer.flush(5)
        client.close()


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    waves=st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=6), min_size=1, max_size=4),
    relay_batch=st.integers(1, 4),
    max_in_flight=st.integers(1, 60),
)
def test_every_entry_is_acknowledged_once_after_all_its_messages_are_delivered(
    kafka_bootstrap: str, kafka_admin: TopicAdmin, redis_url: str, unique_name,
    waves: list[list[int]], relay_batch: int, max_in_flight: int,
) -> None:  # fmt: skip
    """Entries added in waves between pumps; whatever the batch and in-flight bounds, each is
    acknowledged exactly once, and by then every message of it is in the topic (read at the
    end: a message sent twice would show twice)."""
    topic = kafka_admin.create(unique_name("ratings"), partitions=3)
    keys = Keys(unique_name("ns"))
    client = redis.Redis.from_url(redis_url)
    relay = _relay(client, kafka_bootstrap, keys, topic, relay_batch=relay_batch,
                   relay_max_in_flight=max_in_flight)  # fmt: skip
    messages: dict[bytes, list[str]] = {}
    try:
        for w, wave in enumerate(waves):
            for e, count in enumerate(wave):
                entry, ids = _add(client, keys, f"w{w}e{e}", [60] * count)
                messages[entry] = ids
            relay.pump()
        _pump_until_empty(relay, client, keys, 60)
        relay.drain(5)
        assert Counter(relay.acked) == Counter(list(messages))  # each exactly once
        got = _ids_in(kafka_bootstrap, topic)
        assert got == Counter(i for ids in messages.values() for i in ids)
    finally:
        relay._producer.flush(5)
        client.close()


def test_a_message_the_producer_refuses_is_quarantined_and_the_entry_goes_on(
    kafka_bootstrap: str, kafka_admin: TopicAdmin, redis_url: str, unique_name
) -> None:
    """A rating change above the producer's message.max.bytes (1 MB) makes produce() raise: it is
    moved alone to the quarantine stream, the others of its entry are sent once and the entry
    is acknowledged, so no relay stops on it (the write script never makes such a change)."""
    topic = kafka_admin.create(unique_name("ratings"), partitions=2)
    keys = Keys(unique_name("ns"))
    client = redis.Redis.from_url(redis_url)
    relay = _relay(client, kafka_bootstrap, keys, topic)
    try:
        entry, ids = _add(client, keys, "e", [100, 100, 2_000_000, 100])
        deadline = time.monotonic() + 30
        while entry not in relay.acked and time.monotonic() < deadline:
            relay.pump()
            time.sleep(0.05)
        assert entry in relay.acked and client.xlen(keys.outbox) == 0
        assert _ids_in(kafka_bootstrap, topic) == Counter([*ids[:2], ids[3]])
        [(_id, fields)] = client.xrange(keys.outbox_quarantine)
        assert fields[b"entry"] == entry and b"MSG_SIZE_TOO_LARGE" in fields[b"error"]
        [(player, value)] = msgspec.msgpack.decode(fields[b"m"])
        assert player == "p2" and len(value) > 1_000_000 and value.startswith(ids[2].encode())
        registry = relay._metrics.registry
        assert registry.get_sample_value("adr_corrupt_state_total", {"what": "outbox"}) == 1
    finally:
        relay._producer.flush(5)
        client.close()
