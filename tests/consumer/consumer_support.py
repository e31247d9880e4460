"""Helpers of the consumer tests: a seeded event stream, Kafka I/O, Redis state, the replay."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import redis
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from consumer._store import Store
from consumer.config import Config
from consumer.pipeline import Pipeline
from engine import Params, PlayerState, RatingBook, RatingModel, Snapshot, sigma_units
from redis_layout import Keys, encode_snapshot
from redis_layout.player_codec import READ_FIELDS, decode_player
from runtime.kafka_produce import produce_waiting
from schemas import KillEvent, encode_kill_event, kill_event
from stack.testing import TopicAdmin

REL_TOL = 1e-9
SNAPSHOT = Snapshot(
    taken_at=None,
    mean_mu_active=1012.5,
    boundaries=tuple(1400.0 - 25.0 * k for k in range(14)),
    active_count=500,
)
"""A fixed published snapshot (boundaries let players get placed, μ̄_A ≠ μ0 exercises decay)."""


def events(
    n: int, players: int, arenas: int, seed: int, start_ms: int | None = None
) -> list[KillEvent]:
    """A seeded stream: time advances 0–40 s per event per arena, ~10% repeat kills in cooldown,
    some players idle for days (decay), ids unique."""
    rng = random.Random(seed)
    now = time.time_ns() // 1_000_000 if start_ms is None else start_ms
    t = now - 50 * 60 * 1000  # within the consumer's accepted age window (1 h)
    step = max(1, (50 * 60 * 1000) // max(1, n))
    out: list[KillEvent] = []
    last: dict[str, tuple[str, str]] = {}
    for i in range(n):
        arena = f"arena-{rng.randrange(arenas)}"
        t += rng.randrange(0, 2 * step + 1)
        if arena in last and rng.random() < 0.1:
            a, b = last[arena]  # a repeat kill, often inside the cooldown
        else:
            a = f"p{rng.randrange(players)}"
            b = f"p{rng.randrange(players)}"
            while b == a:
                b = f"p{rng.randrange(players)}"
        last[arena] = (a, b)
        out.append(kill_event(id=f"e{seed}-{i}", arena=arena, attacker=a, victim=b, ts=t))
    return out


def produce(bootstrap: str, topic: str, items: Iterable[tuple[bytes, bytes]]) -> int:
    """Publish (key, value) pairs in order; returns how many."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True}
    )
    failed: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            failed.append(str(err))

    n = 0
    for key, value in items:
        produce_waiting(producer, topic, value, key, on_delivery=report)
        n += 1
        if n % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert not failed, f"{len(failed)} events not delivered, e.g. {failed[0]}"  # none lost unseen
    return n


def encoded(evs: Iterable[KillEvent]) -> Iterator[tuple[bytes, bytes]]:
    for e in evs:
        yield e.arena.encode(), encode_kill_event(e)


def publish_snapshot(client: redis.Redis, keys: Keys, snapshot: Snapshot, version: int = 1) -> None:
    client.hset(keys.snapshot, mapping=encode_snapshot(snapshot) | {"version": str(version)})


def rating_pool(redis_url: str, unique_name: Callable[[str], str]) -> tuple[str, Keys, redis.Redis]:
    """A fresh namespace with SNAPSHOT published: (namespace, its keys, a client on its Redis)."""
    ns = unique_name("ns")
    keys = Keys(ns)
    client = redis.Redis.from_url(redis_url)
    publish_snapshot(client, keys, SNAPSHOT)
    return ns, keys, client


def pool_on_topic(
    kafka_admin: TopicAdmin, redis_url: str, unique_name: Callable[[str], str], partitions: int = 1
) -> tuple[str, str, Keys, redis.Redis]:
    """A fresh kill-events topic and a rating pool beside it: (topic, namespace, keys, client)."""
    topic = kafka_admin.create(unique_name("kill-events"), partitions=partitions)
    return (topic, *rating_pool(redis_url, unique_name))


def fresh_store(
    redis_url: str, unique_name: Callable[[str], str], params: Params
) -> tuple[redis.Redis, Keys, Store]:
    """A Store of topic kill-events on a fresh namespace (no snapshot): (client, keys, store)."""
    client = redis.Redis.from_url(redis_url)
    keys = Keys(unique_name("ns"))
    return client, keys, Store(client, keys, "kill-events", params)


def replay(evs: Iterable[KillEvent], params: Params, snapshot: Snapshot) -> RatingBook:
    """The engine's in-memory replay (what `adr replay --snapshot` runs) of the same events;
    `book.counted_ids` lists the events it counted, in order."""
    book = RatingBook(params, fixed_snapshot=snapshot)
    counted: list[str] = []
    for e in evs:
        if book.apply(e.id, e.attacker, e.victim, e.ts).kind == "counted":
            counted.append(e.id)
    book.counted_ids = counted  # type: ignore[attr-defined]
    return book


def replay_model(
    tmp_path: Path, name: str, events: list[KillEvent], params: tuple[str, ...]
) -> Path:
    """`adr replay --model NAME` (`params`: its `--model-param` items) of `events` with SNAPSHOT
    fixed; the output folder (players.jsonl, population.json)."""
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events))
    snap = tmp_path / "snapshot.json"
    snap.write_text(
        json.dumps({"mean_mu_active": SNAPSHOT.mean_mu_active,
                    "boundaries": list(SNAPSHOT.boundaries or ())})
    )  # fmt: skip
    out = tmp_path / "replay"
    flags = [arg for p in params for arg in ("--model-param", p)]
    subprocess.run(
        [sys.executable, "-m", "adr_cli.main", "replay", str(log), "--out-dir", str(out),
         "--model", name, *flags, "--snapshot", str(snap), "--progress", "never"],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


def change_ids(event_ids: Iterable[str]) -> set[str]:
    """The rating-change ids the counted events must produce."""
    return {f"{e}:{role}" for e in event_ids for role in ("attacker", "victim")}


def redis_players(client: redis.Redis, keys: Keys) -> dict[str, tuple[PlayerState, int]]:
    names = list(client.scan_iter(match=keys.match_players, count=5000))
    pipe = client.pipeline(transaction=False)
    for k in names:
        pipe.hmget(k, READ_FIELDS)
    out: dict[str, tuple[PlayerState, int]] = {}
    for k, values in zip(names, pipe.execute(), strict=True):
        decoded = decode_player(values)
        assert decoded is not None
        out[k.decode()[len(keys.player_prefix) :]] = decoded
    return out


def close(a: float, b: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def state_mismatches(got: PlayerState, want: PlayerState) -> list[str]:
    bad = []
    for f in ("mu", "sigma", "phi", "pool", "h_up", "h_down"):
        if not close(getattr(got, f), getattr(want, f)):
            bad.append(f"{f}: {getattr(got, f)!r} != {getattr(want, f)!r}")
    for f in ("streak", "n", "last_ts", "tier", "recent"):
        if getattr(got, f) != getattr(want, f):
            bad.append(f"{f}: {getattr(got, f)!r} != {getattr(want, f)!r}")
    if len(got.window) != len(want.window) or not all(
        close(x, y) for x, y in zip(got.window, want.window, strict=True)
    ):
        bad.append(f"window: {got.window!r} != {want.window!r}")
    return bad


def assert_redis_equals_replay(
    client: redis.Redis, keys: Keys, book: RatingBook, params: Params, exact: bool = False
) -> None:
    """Every field of every player (within 1e-9 relative, or bit for bit when `exact`), the
    ranks, tier counts, the σ-sum and P equal the replay's."""
    stored = redis_players(client, keys)
    want = book.players()
    assert set(stored) == set(want), f"{len(set(stored) ^ set(want))} players differ"
    problems = []
    for player, (state, ver) in stored.items():
        bad = (
            ([] if state == want[player] else [f"{state!r} != {want[player]!r}"])
            if exact
            else state_mismatches(state, want[player])
        )
        if bad:
            problems.append(f"{player}: {bad}")
        assert ver >= 1
    assert not problems, f"{len(problems)} players differ, e.g. {problems[:3]}"
    pop = client.hgetall(keys.pop)
    total = (int(pop[b"sigma_hi"]) << 32) + int(pop[b"sigma_lo"])
    assert int(pop[b"count"]) == len(want)
    assert total == sum(sigma_units(s.sigma, params) for s in want.values())
    assert total == book.total_sigma_units
    lb = {m.decode(): s for m, s in client.zrange(keys.lb, 0, -1, withscores=True)}
    placed = {p: s.mu for p, s in want.items() if s.tier}
    assert set(lb) == set(placed)
    assert all(close(lb[p], placed[p]) for p in placed)
    counts = {k.decode(): int(v) for k, v in client.hgetall(keys.tier_counts).items() if int(v)}
    from engine import tier_label

    want_counts: dict[str, int] = {}
    for s in want.values():
        if s.tier:
            want_counts[tier_label(s.tier)] = want_counts.get(tier_label(s.tier), 0) + 1
    assert counts == want_counts


def assert_as_replayed(
    client: redis.Redis, keys: Keys, evs: Iterable[KillEvent], params: Params
) -> RatingBook:
    """Redis holds, bit for bit, the replay of `evs` from SNAPSHOT; returns that replay."""
    book = replay(evs, params, SNAPSHOT)
    assert_redis_equals_replay(client, keys, book, params, exact=True)
    return book


def applied_offsets(client: redis.Redis, keys: Keys, topic: str) -> dict[int, int]:
    return {int(k): int(v) for k, v in client.hgetall(keys.offsets(topic)).items()}


def wait_applied(
    client: redis.Redis,
    keys: Keys,
    topic: str,
    ends: dict[int, int],
    timeout: float,
    alive: Callable[[], bool] = lambda: True,
) -> None:
    """Until Redis's stored offsets reach `ends` (partition -> end offset)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert alive(), "the consumer died"
        got = applied_offsets(client, keys, topic)
        if all(got.get(p, 0) >= e for p, e in ends.items()):
            return
        time.sleep(0.2)
    raise AssertionError(
        f"not applied in {timeout}s: {applied_offsets(client, keys, topic)} < {ends}"
    )


def http_get(url: str) -> tuple[int, str]:
    """(status, body) of a GET, error statuses included (the metrics server's /readyz)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def wait_outbox_empty(client: redis.Redis, keys: Keys, timeout: float) -> None:
    """Until the relay has delivered (and deleted) every outbox entry."""
    wait_until(lambda: client.xlen(keys.outbox) == 0, timeout, "an empty outbox")


def one_arena_per_pair(evs: list[KillEvent]) -> list[KillEvent]:
    """Keep each ordered pair's events in the arena where the pair first met (players still meet
    in many arenas): then which events the cooldown drops cannot depend on how partitions
    interleave, and every player's expected n is known."""
    first: dict[tuple[str, str], str] = {}
    return [e for e in evs if first.setdefault((e.attacker, e.victim), e.arena) == e.arena]


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        }
    finally:
        c.close()


def read_topic(
    bootstrap: str, topic: str, expect: int | None = None, timeout: float = 60.0
) -> list:
    """The messages of `topic`, every partition from its start: the first `expect` of them, or
    (no `expect`) all of them up to the end of each partition as the broker reports it then.

    Read to the end, a test sees every message its producers had confirmed before the call and
    any extra one (a duplicate) among them, with no quiet period to wait out: callers wait for
    the producers first (an empty outbox, a stopped process, a drained relay)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{os.getpid()}-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,  # _PARTITION_EOF says "read to the end"
            "fetch.wait.max.ms": 10,  # at the end the broker answers at once, not in 500 ms
        }
    )
    out = []
    deadline = time.monotonic() + timeout
    try:
        partitions = _partitions(c, topic, deadline)
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        at_end: set[int] = set()
        while time.monotonic() < deadline:
            for m in c.consume(5000, 0.5):
                err = m.error()
                if err is None:
                    out.append(m)
                    at_end.discard(m.partition())  # more came after its end was reported
                elif err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
            if expect is not None and len(out) >= expect:
                break
            if expect is None and at_end >= set(partitions):
                break
    finally:
        c.close()
    return out


def _partitions(c: Consumer, topic: str, deadline: float) -> list[int]:
    """The partitions of `topic`, once its metadata has them (a topic its first producer makes
    may not be there yet)."""
    while True:
        meta = c.list_topics(topic, timeout=10).topics.get(topic)
        if meta is not None and meta.error is None and meta.partitions:
            return sorted(meta.partitions)
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {topic} has no partitions: {meta}")
        time.sleep(0.1)


@dataclass
class ThreadedConsumer:
    """A Pipeline on a thread of the test process (for tests that do not kill it)."""

    pipeline: Pipeline
    thread: threading.Thread

    def wait_serving(self, timeout: float = 30.0) -> None:
        wait_until(lambda: self.pipeline.http is not None, timeout, "the metrics server")

    def stop(self, timeout: float = 60.0) -> None:
        self.pipeline.request_stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive()


def raised_at_start(pipeline: Any, ran: str) -> list[BaseException]:
    """Run `pipeline` on a thread that must end by itself within 90 s (a consumer refusing its
    pool at start), else stop it and fail with `ran`; what it raised, in order."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            pipeline.run(serve_metrics=False, signals=False)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(90)
    if thread.is_alive():
        pipeline.request_stop()
        thread.join(30)
        raise AssertionError(ran)
    return raised


def start_threaded(
    config: Config,
    params: Params,
    serve_metrics: bool = False,
    model: RatingModel[Any] | None = None,
) -> ThreadedConsumer:
    """`adr consume` on a thread; `model`: the pool's model (None: ADR with `params`)."""
    pipeline = Pipeline(config, params, model=model)
    thread = threading.Thread(
        target=pipeline.run, kwargs={"serve_metrics": serve_metrics, "signals": False}, daemon=True
    )
    thread.start()
    return ThreadedConsumer(pipeline, thread)


def consume_all(
    bootstrap: str,
    redis_url: str,
    unique_name: Callable[[str], str],
    topic: str,
    params: Params,
    count: int,
    timeout: float = 240.0,
    model: RatingModel[Any] | None = None,
) -> tuple[Keys, redis.Redis, Config]:
    """Consume the `count` events of the one-partition `topic` into a new rating pool (a
    threaded consumer of `model`, default ADR, stopped once all are applied); (its keys, a
    client, the config)."""
    ns, keys, client = rating_pool(redis_url, unique_name)
    config = Config(
        bootstrap_servers=bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=unique_name("g"), rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
    )  # fmt: skip
    consumer = start_threaded(config, params, model=model)
    try:
        wait_applied(client, keys, topic, {0: count}, timeout, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()
    return keys, client, config


def consume_cmd(
    bootstrap: str, redis_url: str, ns: str, topic: str, group: str, *extra: str
) -> list[str]:
    return [
        sys.executable, "-m", "adr_cli.main", "consume",
        "--bootstrap-servers", bootstrap, "--redis-url", redis_url, "--namespace", ns,
        "--topic", topic, "--group", group, "--metrics-port", "0",
        "--rating-topic", f"{topic}-ratings", "--dlq-topic", f"{topic}-dlq", *extra,
    ]  # fmt: skip


def start_process(cmd: list[str], log_path: str) -> subprocess.Popen[bytes]:
    log = open(log_path, "ab")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(cmd, stdout=log, stderr=log, start_new_session=True)


def stop_gracefully(proc: subprocess.Popen[bytes], log: Path) -> None:
    """SIGTERM: the consumer finishes its batch, flushes the relay, commits and exits 0."""
    proc.terminate()
    code = proc.wait(60)
    assert code == 0, log.read_text()[-3000:]


def sigkill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


class LogLines(logging.Handler):
    """The log records of the consumer's loggers (`adr.consumer` and below), kept for a test."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._guard:
            self.records.append(record)

    def about(self, message: str, **fields: object) -> list[logging.LogRecord]:
        """The records with this message and these extra fields."""
        with self._guard:
            return [
                r
                for r in self.records
                if r.getMessage() == message
                and all(getattr(r, k, None) == v for k, v in fields.items())
            ]


@contextlib.contextmanager
def capture_logs() -> Iterator[LogLines]:
    """Every record of `adr.consumer` and its children, at every level, while the block runs."""
    handler = LogLines()
    logger = logging.getLogger("adr.consumer")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
