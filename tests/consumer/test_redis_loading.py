"""Redis loading its dataset (LOADING: after a restart with a big AOF, a restore, a replica's full
resync) on a real redis-server held in LOADING for a few seconds (stack/loading.py): the consumer
started meanwhile, the consumer whose Redis restarts mid-run, and the outbox relay with entries in
flight wait (not ready, counted, logged, backing off) and go on once it has loaded; every event
is applied once, every rating change and dead letter sent once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import consumer_support as S
import msgspec
import pytest
import redis
from confluent_kafka import Producer

from consumer._kafka import producer_settings
from consumer._metrics import Metrics
from consumer._relay import Relay
from consumer._retry import RedisRetry
from consumer.config import Config
from engine import Params
from redis_layout import Keys
from runtime.kafka_produce import produce_waiting
from schemas import KillEvent, decode_rating_change, encode_kill_event
from stack.loading import LoadingRedis

pytestmark = pytest.mark.integration  # starts servers of its own

PARAMS = Params()
FILLER_KEYS = 10_000
"""At the server's 2 ms a key, a restart would load for about 20 s: longer than any hold here."""
HOLD_S = 3.0
"""How long each test keeps Redis loading once the component has met LOADING."""
BACKOFF_INITIAL_S = 0.1
BACKOFF_MAX_S = 1.0
REFUSED = "redis refused the command, retrying"


@pytest.fixture
def loading_redis(tmp_path: Path):  # type: ignore[no-untyped-def]
    server = LoadingRedis(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


def _stream(
    n: int, seed: int, bad_every: int
) -> tuple[list[KillEvent], list[tuple[bytes, bytes]], list[bytes]]:
    """(good events, the messages to publish, the malformed ones among them in order): a
    malformed message (dead letter `undecodable`) after every `bad_every` good ones."""
    events = S.events(n, players=300, arenas=20, seed=seed)
    stream: list[tuple[bytes, bytes]] = []
    bad: list[bytes] = []
    for i, event in enumerate(events):
        stream.append((event.arena.encode(), encode_kill_event(event)))
        if i % bad_every == bad_every // 2:
            bad.append(b"\xc1\x00\xff not msgpack #%d" % i)
            stream.append((b"arena-0", bad[-1]))
    return events, stream, bad


def _config(consumer_config: Any, server: LoadingRedis, ns: str, topic: str) -> Config:
    config: Config = consumer_config(
        server.url, ns, topic, metrics_host="127.0.0.1", metrics_port=0, batch_size=200,
        backoff_initial_s=BACKOFF_INITIAL_S, backoff_max_s=BACKOFF_MAX_S,
    )  # fmt: skip
    return config


def _refused_loading(metrics: Metrics) -> float:
    value = metrics.registry.get_sample_value("adr_redis_refused_total", {"code": "LOADING"})
    return value or 0.0


def _probe(consumer: S.ThreadedConsumer, path: str) -> tuple[int, str]:
    assert consumer.pipeline.http is not None
    return S.http_get(f"http://127.0.0.1:{consumer.pipeline.http.server_address[1]}{path}")


def _loading_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.getMessage() == REFUSED and getattr(r, "code", None) == "LOADING"
    ]


def _waits_through_loading(
    server: LoadingRedis, consumer: S.ThreadedConsumer, caplog: pytest.LogCaptureFixture
) -> None:
    """While Redis loads, the consumer is alive and live but not ready, and retries with
    backoff, each try counted and logged; then the test ends the loading."""
    metrics = consumer.pipeline.metrics
    S.wait_until(lambda: _refused_loading(metrics) >= 1, 30, "a LOADING refusal counted")
    first = _refused_loading(metrics)
    time.sleep(HOLD_S)
    assert server.loading()  # held all along: what follows was seen during LOADING
    assert consumer.thread.is_alive()
    status, text = _probe(consumer, "/readyz")
    assert status == 503 and "redis=0" in text, (status, text)
    assert _probe(consumer, "/healthz")[0] == 200  # waiting, not stalled: no restart by a probe
    tries = _refused_loading(metrics) - first
    # Backing off (0.1 s doubling up to 1 s): a handful of tries, not a busy loop (which makes
    # thousands in HOLD_S: Redis answers LOADING at once).
    assert 1 <= tries <= HOLD_S / BACKOFF_INITIAL_S, tries
    lines = _loading_lines(caplog)
    assert lines and all(getattr(r, "meaning", "") == "loading its dataset" for r in lines)
    server.end_loading()


def _assert_each_applied_and_sent_once(
    bootstrap: str, pool: _Pool, events: list[KillEvent], bad: list[bytes]
) -> None:
    """Redis equals the replay bit for bit; every rating change and dead letter was sent once."""
    book = S.assert_as_replayed(pool.client, pool.keys, events, PARAMS)
    topic = pool.topic
    ratings = S.read_topic(bootstrap, f"{topic}-ratings", idle=3)
    received = [decode_rating_change(m.value()).id for m in ratings]
    assert len(received) == len(set(received))  # nothing sent twice
    assert set(received) == S.change_ids(book.counted_ids)  # nothing lost
    dead = S.read_topic(bootstrap, f"{topic}-dlq", idle=3)
    assert [m.value() for m in dead] == bad  # each once, in order
    assert {dict(m.headers())["reason"] for m in dead} == {b"undecodable"}


@dataclass
class _Pool:
    """A rating pool (SNAPSHOT published) on the loading server, and a consumer's config."""

    server: LoadingRedis
    topic: str
    keys: Keys
    client: redis.Redis
    config: Config


@pytest.fixture
def pool(  # type: ignore[no-untyped-def]
    loading_redis: LoadingRedis, kafka_admin, unique_name, consumer_config, caplog
) -> Iterator[_Pool]:
    """The pool, the server's filler written after it; log records captured from INFO."""
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, loading_redis.url, unique_name)
    loading_redis.fill(FILLER_KEYS)
    caplog.set_level(logging.INFO)
    yield _Pool(
        loading_redis, topic, keys, client, _config(consumer_config, loading_redis, ns, topic)
    )
    client.close()


def _finishes(pool: _Pool, consumer: S.ThreadedConsumer, messages: int) -> None:
    """After the loading: every message applied, the outbox relayed, the consumer ready."""
    alive = consumer.thread.is_alive
    S.wait_applied(pool.client, pool.keys, pool.topic, {0: messages}, 60, alive=alive)
    S.wait_outbox_empty(pool.client, pool.keys, 30)
    S.wait_until(lambda: _probe(consumer, "/readyz")[0] == 200, 10, "ready again")


def _started_while_loading(
    pool: _Pool, bootstrap: str, stream: list[tuple[bytes, bytes]]
) -> S.ThreadedConsumer:
    """`stream` published, Redis restarted and held loading, a consumer started and serving."""
    S.produce(bootstrap, pool.topic, stream)
    pool.server.restart_loading()
    consumer = S.start_threaded(pool.config, PARAMS, serve_metrics=True)
    consumer.wait_serving()
    return consumer


def test_a_consumer_started_while_redis_loads_waits_then_applies_every_event_once(
    pool: _Pool, kafka_bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    events, stream, bad = _stream(3_000, seed=71, bad_every=500)
    consumer = _started_while_loading(pool, kafka_bootstrap, stream)
    try:
        _waits_through_loading(pool.server, consumer, caplog)
        _finishes(pool, consumer, len(stream))
    finally:
        consumer.stop()
    _assert_each_applied_and_sent_once(kafka_bootstrap, pool, events, bad)


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_stop_while_redis_loads_ends_the_consumer_at_once_and_loses_nothing(
    pool: _Pool, kafka_bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    """SIGTERM's request_stop() while Redis loads: the consumer gives up waiting for Redis and
    ends well within a pod's grace period (not when the loading ends); the next consumer
    applies every event once."""
    events, stream, bad = _stream(2_000, seed=79, bad_every=500)
    consumer = _started_while_loading(pool, kafka_bootstrap, stream)
    try:
        S.wait_until(lambda: _refused_loading(consumer.pipeline.metrics) >= 1, 30, "LOADING met")
        asked = time.monotonic()
        consumer.stop(timeout=15)
        took = time.monotonic() - asked
        assert pool.server.loading()  # it ended while Redis was still loading
        assert took < 10, took
        assert any(
            r.getMessage().startswith("stopping while redis does not answer")
            for r in caplog.records
        )
    finally:
        pool.server.end_loading()
    successor = S.start_threaded(pool.config, PARAMS, serve_metrics=True)
    try:
        _finishes(pool, successor, len(stream))
    finally:
        successor.stop()
    _assert_each_applied_and_sent_once(kafka_bootstrap, pool, events, bad)


def test_redis_restarted_mid_run_is_waited_through_loading_and_nothing_is_lost_or_doubled(
    pool: _Pool, kafka_bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    events, stream, bad = _stream(8_000, seed=73, bad_every=400)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    restarted, done = threading.Event(), threading.Event()

    def publish() -> None:
        """A steady load (~1,000 a second); its second half from Redis's restart on, so that
        events and dead letters arrive while it loads and after."""
        for i, (key, value) in enumerate(stream):
            if i == len(stream) // 2:
                assert restarted.wait(60)
            produce_waiting(producer, pool.topic, value, key)
            if i % 100 == 99:
                producer.poll(0)
                time.sleep(0.1)
        assert producer.flush(60) == 0
        done.set()

    def applied() -> int:
        return S.applied_offsets(pool.client, pool.keys, pool.topic).get(0, 0)

    threading.Thread(target=publish, daemon=True).start()
    consumer = S.start_threaded(pool.config, PARAMS, serve_metrics=True)
    try:
        consumer.wait_serving()
        S.wait_until(lambda: applied() >= len(stream) // 5, 60, "a fifth applied")
        pool.server.restart_loading()  # SIGTERM: Redis fsyncs its AOF and exits; then it loads
        restarted.set()
        _waits_through_loading(pool.server, consumer, caplog)
        assert done.wait(60), "the publisher did not finish"
        _finishes(pool, consumer, len(stream))
    finally:
        restarted.set()
        consumer.stop()
    _assert_each_applied_and_sent_once(kafka_bootstrap, pool, events, bad)


def _add_entry(client: redis.Redis, keys: Keys, tag: str, size: int) -> list[bytes]:
    """One outbox entry of `size` rating changes (their bytes: `<tag>-<i>`); their values."""
    values = [f"{tag}-{i}".encode() for i in range(size)]
    pairs = [(f"p{i}", value) for i, value in enumerate(values)]
    client.xadd(keys.outbox, {"m": msgspec.msgpack.encode(pairs)})
    return values


def test_the_relay_acknowledges_entries_in_flight_across_a_loading_restart_once(
    loading_redis: LoadingRedis,
    kafka_bootstrap: str,
    kafka_admin,  # type: ignore[no-untyped-def]
    unique_name,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Entries the relay has produced, but not yet acknowledged, when Redis restarts: the
    acknowledgements wait through LOADING (retried with backoff like the pipeline's relay stage)
    and land once; the relay then takes new entries. No rating change is sent twice."""
    server = loading_redis
    topic = kafka_admin.create(unique_name("ratings"), partitions=1)
    keys = Keys(unique_name("ns"))
    client = redis.Redis.from_url(server.url)
    server.fill(FILLER_KEYS)
    config = Config(
        bootstrap_servers=kafka_bootstrap, rating_topic=topic, instance_id="r1",
        outbox_claim_idle_ms=300, relay_pump_ms=200,
    )  # fmt: skip
    metrics = Metrics()
    producer = Producer(producer_settings(config, lambda _err: None))
    relay = Relay(client, producer, keys, config, metrics)
    retry = RedisRetry(metrics, BACKOFF_INITIAL_S, BACKOFF_MAX_S)
    metrics.health.watch(redis=retry)  # as the pipeline wires it
    sent = [v for i in range(10) for v in _add_entry(client, keys, f"a{i}", 5)]
    assert relay.pump() == 10  # all taken and produced, none acknowledged yet
    assert client.xpending(keys.outbox, "relay")["pending"] == 10
    server.restart_loading()

    stop = threading.Event()
    caplog.set_level(logging.INFO)

    def pump() -> None:  # the pipeline's relay stage, between batches
        while not stop.is_set():
            retry(relay.pump, "relay")
            time.sleep(0.02)

    pumping = threading.Thread(target=pump, daemon=True)
    pumping.start()
    try:
        S.wait_until(lambda: _refused_loading(metrics) >= 1, 30, "a LOADING refusal counted")
        time.sleep(HOLD_S)
        assert server.loading() and pumping.is_alive()
        assert not metrics.health.up("redis")
        assert _refused_loading(metrics) <= 1 + HOLD_S / BACKOFF_INITIAL_S
        assert metrics.registry.get_sample_value(
            "adr_errors_swallowed_total", {"where": "redis_relay"}
        )
        assert _loading_lines(caplog)
        server.end_loading()
        sent += [v for i in range(3) for v in _add_entry(client, keys, f"b{i}", 5)]
        S.wait_until(
            lambda: client.xlen(keys.outbox) == 0 and relay.in_flight == 0, 30, "all acknowledged"
        )
        assert metrics.health.up("redis")
    finally:
        stop.set()
        pumping.join(30)
    assert client.xpending(keys.outbox, "relay")["pending"] == 0
    got = [m.value() for m in S.read_topic(kafka_bootstrap, topic, idle=3)]
    assert sorted(got) == sorted(sent)  # each once
    producer.flush(5)
    client.close()
