"""The docs' examples and tables against the real thing: a broker, a redis-server, `adr consume`.

docs/examples/publish_kills.py publishes; adr-stream's decoder must accept what it sent. Then a
real `adr consume` rates those kills into Redis, and docs/examples/read_leaderboard.py must read
the same answers as `adr leaderboard`; the keys and hash fields the consumer wrote must be the
ones docs/leaderboards.md lists.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from itertools import permutations
from types import ModuleType

import pytest
import redis
from confluent_kafka import Consumer

from redis_layout import Keys
from schemas import Limits, Reason, decode_kill_event
from tests.deploy._metrics import REPO

DOCS = REPO / "docs"
PLAYERS = [f"doc-player-{i}" for i in range(10)]
BOUNDARIES = [1400.0 - 25.0 * k for k in range(14)]


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, DOCS / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _adr(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adr_cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def _read_back(bootstrap: str, topic: str, count: int) -> list[tuple[int, bytes, bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-check",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    out: list[tuple[int, bytes, bytes]] = []
    deadline = time.monotonic() + 30
    try:
        while len(out) < count and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                out.append((m.partition(), m.key(), m.value()))
    finally:
        consumer.close()
    return out


def _doc_table_column(path: str, heading: str) -> set[str]:
    """Every code span in the first column of the first table after `heading` in a docs page."""
    text = (DOCS / path).read_text().split(heading, 1)[1]
    table = text.split("\n\n|", 1)[1].split("\n\n", 1)[0]
    cells = [line.split("|")[1] for line in ("|" + table).splitlines()[2:]]
    return {span for cell in cells for span in re.findall(r"`([^`]+)`", cell)}


@pytest.fixture
def published(
    kafka_bootstrap: str, kafka_admin, unique_name: Callable[..., str]
) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
    """Every ordered pair of 10 players kills once, in 2 arenas, via the publisher example."""
    example = _example("publish_kills")
    topic = kafka_admin.create(unique_name("kill-events"), partitions=2)
    producer = example.make_producer(kafka_bootstrap)
    ids = [
        example.publish_kill(producer, f"doc-arena-{i % 2}", a, b, topic=topic)
        for i, (a, b) in enumerate(permutations(PLAYERS, 2))
    ]
    assert producer.flush(30) == 0
    return topic, ids


def test_publisher_example_sends_valid_kill_events_keyed_by_arena(
    kafka_bootstrap: str, published: tuple[str, list[str]]
) -> None:
    topic, ids = published
    got = _read_back(kafka_bootstrap, topic, len(ids))
    assert len(got) == len(ids)
    now = time.time_ns() // 1_000_000
    partition_of: dict[str, int] = {}
    for partition, key, value in got:
        event = decode_kill_event(value, now, Limits())
        assert key == event.arena.encode()
        assert partition_of.setdefault(event.arena, partition) == partition
    assert sorted(e for e in ids) == sorted(decode_kill_event(v, now, Limits()).id for *_, v in got)


def test_reader_example_matches_adr_leaderboard_on_consumer_state(
    kafka_bootstrap: str,
    redis_url: str,
    redis_client: redis.Redis,
    published: tuple[str, list[str]],
    unique_name: Callable[..., str],
) -> None:
    topic, _ = published
    ns = unique_name("docs")
    keys = Keys(ns)
    # What the tier job publishes: with boundaries, players can be placed.
    redis_client.hset(
        keys.snapshot,
        mapping={
            "version": "1",
            "computed_at": str(time.time_ns() // 1_000_000),
            "active_count": "500",
            "mean_mu_active": "1000.0",
            "boundaries": json.dumps(BOUNDARIES),
        },
    )
    consume = subprocess.Popen(
        [sys.executable, "-m", "adr_cli", "consume", "--bootstrap-servers", kafka_bootstrap,
         "--redis-url", redis_url, "--namespace", ns, "--topic", topic,
         "--group", unique_name("g"), "--rating-topic", unique_name("rc"),
         "--dlq-topic", unique_name("dlq"), "--metrics-port", "0"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and redis_client.zcard(keys.lb) < len(PLAYERS):
            assert consume.poll() is None, consume.stderr.read() if consume.stderr else ""
            time.sleep(0.2)
    finally:
        consume.send_signal(signal.SIGTERM)
        _, err = consume.communicate(timeout=60)
    assert redis_client.zcard(keys.lb) == len(PLAYERS), err[-2000:]

    reader = _example("read_leaderboard")
    r = redis.Redis.from_url(redis_url)
    cli_top = json.loads(_adr("leaderboard", "--redis-url", redis_url, "--namespace", ns,
                              "--json", "top", "10").stdout)  # fmt: skip
    assert [(e["rank"], e["player"], e["mu"]) for e in cli_top] == reader.top(r, ns, 10)
    who = cli_top[4]["player"]
    cli_rank = json.loads(_adr("leaderboard", "--redis-url", redis_url, "--namespace", ns,
                               "--json", "rank", who).stdout)  # fmt: skip
    assert reader.rank(r, ns, who) == (cli_rank["rank"], cli_rank["mu"], cli_rank["tier"])
    cli_around = json.loads(_adr("leaderboard", "--redis-url", redis_url, "--namespace", ns,
                                 "--json", "around", who, "2").stdout)  # fmt: skip
    assert reader.around(r, ns, who, 2) == [(e["rank"], e["player"], e["mu"]) for e in cli_around]
    assert sum(reader.tiers(r, ns).values()) == len(PLAYERS)
    assert reader.rank(r, ns, "nobody") is None

    # The doc's key table covers every key the consumer wrote, and its field table every field.
    patterns = _doc_table_column("leaderboards.md", "## Keys")
    as_regex = [
        re.compile("^" + re.escape(p).replace(r"\{NS\}", re.escape(keys.tag))
                   .replace("<id>", ".+").replace("<topic>", ".+")
                   .replace("<n>", "[0-9]+").replace("<end>", "[0-9]+")
                   .replace("<a><b>", ".+") + "$")
        for p in patterns
    ]  # fmt: skip
    written = {k.decode() for k in redis_client.scan_iter(match=keys.match_all, count=1000)}
    assert written, "the consumer wrote nothing"
    for key in written:
        assert any(rx.match(key) for rx in as_regex), f"{key} is not in docs/leaderboards.md"
    fields = _doc_table_column("leaderboards.md", "### Player hash")
    stored = {f.decode() for f in redis_client.hkeys(keys.player(who))}
    assert stored == fields


def test_game_server_doc_lists_every_dead_letter_reason() -> None:
    text = (DOCS / "game-servers.md").read_text().split("## When an event is dead-lettered", 1)[1]
    listed = set(re.findall(r"`([a-z_]+)`", text.split("\n\n|", 1)[1].split("\n\n", 1)[0]))
    assert {r.value for r in Reason} <= listed
