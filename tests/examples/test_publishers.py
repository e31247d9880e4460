"""The publisher examples against the real broker and the real consumer.

The same kill events are piped through every example (Go, TypeScript, C++). Each must write
the Python encoder's bytes, key each by its arena, and put every arena on the partition Java's
murmur2 partitioner picks, as `adr simulate` (librdkafka's murmur2_random) does for the same
arena names; then the consumer, reading what the example published, must leave Redis equal to
the engine's replay of those events.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from engine import Params
from schemas import KillEvent, decode_kill_event, encode_kill_event
from tests.consumer import consumer_support as S
from tests.examples._build import REPO

PARTITIONS = 6
EVENTS = S.one_arena_per_pair(S.events(400, players=40, arenas=12, seed=17))


def java_murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 (the Java client's key hash), as an unsigned 32-bit int."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (0x9747B28C ^ len(data)) & mask
    whole = len(data) & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    rest = data[whole:]
    if len(rest) == 3:
        h ^= rest[2] << 16
    if len(rest) >= 2:
        h ^= rest[1] << 8
    if rest:
        h = ((h ^ rest[0]) * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    return h ^ (h >> 15)


def java_partition(key: bytes, partitions: int) -> int:
    """The Java client's default partition of a keyed record: toPositive(murmur2) % n."""
    return (java_murmur2(key) & 0x7FFFFFFF) % partitions


def test_reference_murmur2_matches_kafkas_own_test_values() -> None:
    # From Kafka's UtilsTest.testMurmur2 (the Java ints, as unsigned 32-bit).
    for text, java_int in (("21", -973932308), ("foobar", -790332482),
                           ("a-little-bit-long-string", -985981536),
                           ("a-little-bit-longer-string", -1486304829),
                           ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
                           ("abc", 479470107)):  # fmt: skip
        assert java_murmur2(text.encode()) == java_int & 0xFFFFFFFF, text


def _lines(events: list[KillEvent]) -> str:
    return "".join(
        json.dumps({"id": e.id, "arena": e.arena, "attacker": e.attacker, "victim": e.victim,
                    "ts": e.ts}) + "\n"
        for e in events
    )  # fmt: skip


def _publish(cmd: list[str], bootstrap: str, topic: str) -> None:
    done = subprocess.run(
        cmd, input=_lines(EVENTS), capture_output=True, text=True, timeout=120,
        env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "ADR_TOPIC": topic},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == ""


def _arena_partitions(messages: list[Any]) -> dict[str, int]:
    where: dict[str, set[int]] = {}
    for m in messages:
        where.setdefault(m.key().decode(), set()).add(m.partition())
    assert all(len(p) == 1 for p in where.values()), where
    return {arena: p.pop() for arena, p in where.items()}


def test_publisher_lands_each_arena_on_the_java_partition_and_the_consumer_rates_it(
    publisher: tuple[str, list[str]],
    kafka_bootstrap: str,
    redis_url: str,
    kafka_admin: Any,
    unique_name: Callable[..., str],
) -> None:
    lang, cmd = publisher
    spread = kafka_admin.create(unique_name(f"kill-events-{lang}"), partitions=PARTITIONS)
    _publish(cmd, kafka_bootstrap, spread)
    got = S.read_topic(kafka_bootstrap, spread, expect=len(EVENTS))
    assert len(got) == len(EVENTS)
    by_id = {e.id: e for e in EVENTS}
    for m in got:
        event = decode_kill_event(m.value(), EVENTS[-1].ts)
        assert m.value() == encode_kill_event(by_id[event.id])  # the Python encoder's bytes
        assert m.key() == event.arena.encode()
    assert sorted(decode_kill_event(m.value(), EVENTS[-1].ts).id for m in got) == sorted(by_id)
    placed = _arena_partitions(got)
    assert placed == {a: java_partition(a.encode(), PARTITIONS) for a in placed}
    assert len(set(placed.values())) > 1  # the arenas really are spread

    # One partition: the consumer's order is the file's, so Redis must equal the replay exactly.
    topic = kafka_admin.create(unique_name(f"kill-events-{lang}-1p"), partitions=1)
    _publish(cmd, kafka_bootstrap, topic)
    params = Params()
    keys, client, _ = S.consume_all(
        kafka_bootstrap, redis_url, unique_name, topic, params, len(EVENTS), 120
    )
    book = S.replay(EVENTS, params, S.SNAPSHOT)
    assert book.counted > 0.8 * len(EVENTS)
    S.assert_redis_equals_replay(client, keys, book, params, exact=True)
    client.close()


@pytest.mark.parametrize("source", ["simulate", "docs-example"])
def test_python_publishers_land_each_arena_on_the_java_partition(
    source: str, kafka_bootstrap: str, kafka_admin: Any, unique_name: Callable[..., str]
) -> None:
    topic = kafka_admin.create(unique_name(f"kill-events-{source}"), partitions=PARTITIONS)
    if source == "simulate":
        done = subprocess.run(
            [sys.executable, "-m", "adr_cli", "simulate", "--bootstrap-servers",
             kafka_bootstrap, "--topic", topic, "--arenas", "12", "--players", "60",
             "--events", "600", "--rate", "0", "--malformed-rate", "0"],
            capture_output=True, text=True, timeout=120, cwd=REPO,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        expect = 600
    else:
        from tests.deploy.test_examples import _example

        example = _example("publish_kills")
        producer = example.make_producer(kafka_bootstrap)
        for i, e in enumerate(EVENTS):
            example.publish_kill(producer, e.arena, e.attacker, f"v{i}", topic=topic)
        assert producer.flush(30) == 0
        expect = len(EVENTS)
    placed = _arena_partitions(S.read_topic(kafka_bootstrap, topic, expect=expect))
    assert {f"arena-{k}" for k in range(12)} <= set(placed)  # the examples' arena names
    assert placed == {a: java_partition(a.encode(), PARTITIONS) for a in placed}
