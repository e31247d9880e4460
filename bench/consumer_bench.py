# ruff: noqa: E402  (ADR_COMPILED=0 must take effect before the imports below)
"""Benchmark of `adr consume` (issues 4 and 20): sustained throughput, p99 event-to-commit latency
at a steady 5,000 and 10,000 events/s, the consumer's CPU per event by stage, a naive consumer and
two ceilings, side by side on the same machine.

    python bench/consumer_bench.py            # full size: 1,000,000 events, 100,000 players
    python bench/consumer_bench.py --events 50000 --players 5000 --steady-seconds 10   # quick

The stage breakdown comes from a separate profiling phase on the same backlog (a StageClock handed
to the pipeline, consumer/_stages.py), so the timed sustained phase runs the consumer as deployed.

It measures the installed package: run it with .venv/compiled/bin/python for the compiled build
that `adr consume` runs in the image and under scripts/demo (runtime/compiled.py), with
.venv/bin/python for the pure sources; ADR_COMPILED=0 runs the .py files of a compiled install.

Uses KAFKA_BOOTSTRAP_SERVERS / REDIS_URL when set, else starts the local stack (stack/).
Prints one JSON object (the figures) on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Container
from typing import Any

from runtime import compiled

BUILD = compiled.activate()  # first, as `adr` does: ADR_COMPILED=0 before the imports below

import hiredis
import redis
from _cpu import CpuMeter
from _stack import bench_servers
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from consumer._batch import Plan, View
from consumer._intake import Accepted
from consumer._ports import RateStep
from consumer._stages import StageClock, StageTimer
from consumer.config import Config
from consumer.pipeline import Pipeline
from engine import Params, initial_snapshot, is_duplicate, new_player, rate_kill, sigma_units
from loadgen import SimConfig, generate
from redis_layout import Keys
from redis_layout.player_codec import READ_FIELDS, decode_player, encode_player, encode_player_v1
from redis_layout.raw import send_packed
from runtime import KafkaSettings, add_kafka_arguments, kafka_settings_from_args
from runtime.kafka_produce import produce_waiting
from schemas import decode_kill_event

HOUR_MS = 3_600_000
HIGH_RATE = 10_000
"""The second steady phase's rate (issue 20: p99 event-to-commit at 10,000 events/s)."""


def say(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class TimedPipeline(Pipeline):
    """The real pipeline, recording when each batch landed and each counted event's latency."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.applied = 0
        self.first_write: float | None = None
        self.last_write = 0.0
        self.latencies_ms: list[int] = []
        observe = self.lifecycle.observe

        def timed(size: int, plan: Plan, started: float) -> None:
            observe(size, plan, started)
            self._landed(size, plan)

        self.lifecycle.observe = timed  # type: ignore[method-assign]

    def _landed(self, size: int, plan: Plan) -> None:
        t = time.monotonic()
        if self.first_write is None:
            self.first_write = t
        self.last_write = t
        self.applied += size
        done = now_ms()
        self.latencies_ms.extend(done - ts for ts in plan.counted_ts)


def make_topic(bootstrap: str, partitions: int) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(_kafka({}, bootstrap))
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result()
    return name


def produce_all(bootstrap: str, topic: str, cfg: SimConfig) -> int:
    producer = Producer(
        _kafka({"linger.ms": 50, "batch.size": 1_000_000, "enable.idempotence": True,
                "compression.type": "lz4"}, bootstrap)
    )  # fmt: skip
    n = 0
    for msg in generate(cfg):
        produce_waiting(producer, topic, msg.value, msg.key)
        n += 1
        if n % 100_000 == 0:
            producer.poll(0)
            say(f"produced {n}")
    assert producer.flush(120) == 0
    return n


def config_for(bootstrap: str, redis_url: str, topic: str, ns: str) -> Config:
    return Config(
        bootstrap_servers=bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=f"g-{ns}", rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
        max_age_ms=4 * HOUR_MS,  # the backlog is produced first, then consumed
        kafka=_KAFKA,
    )  # fmt: skip


def run_pipeline(pipeline: TimedPipeline, until: Callable[[TimedPipeline], bool]) -> None:
    def stopper() -> None:
        while not until(pipeline):
            time.sleep(0.2)
        pipeline.request_stop()

    threading.Thread(target=stopper, daemon=True).start()
    pipeline.run(serve_metrics=False, signals=False)


class RatingClock:
    """CPU time of the consumer's thread inside the pure rating step (the lifecycle's
    `rate_step`, consumer/_ports.py: dedup, the engine, the hash values, the rating changes):
    the part a native rating core would replace. Put in place of the lifecycle's `rate_step`
    while the pipeline runs."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.seconds = 0.0
        self._lifecycle = pipeline.lifecycle
        self._inner: RateStep = pipeline.lifecycle.rate_step

    def __call__(
        self,
        events: list[Accepted],
        batch_offsets: dict[int, int],
        view: View,
        *,
        refused: Container[tuple[int, int]],
        stages: StageTimer,
    ) -> Plan:
        started = time.thread_time()
        try:
            return self._inner(events, batch_offsets, view, refused=refused, stages=stages)
        finally:
            self.seconds += time.thread_time() - started

    def __enter__(self) -> RatingClock:
        self._lifecycle.rate_step = self
        return self

    def __exit__(self, *exc: object) -> None:
        self._lifecycle.rate_step = self._inner


def sustained(bootstrap: str, redis_url: str, topic: str, n: int, params: Params) -> dict[str, Any]:
    """The consumer on a backlog of n events: events/s from its first write to its last."""
    pipeline = TimedPipeline(
        config_for(bootstrap, redis_url, topic, f"bs{uuid.uuid4().hex[:6]}"), params
    )
    last_report = [time.monotonic()]

    def done(p: TimedPipeline) -> bool:
        if time.monotonic() - last_report[0] > 15:
            last_report[0] = time.monotonic()
            say(f"consumer applied {p.applied}/{n}")
        return p.applied >= n

    meter = CpuMeter(redis_url, bootstrap=bootstrap)
    with RatingClock(pipeline) as rating:
        run_pipeline(pipeline, done)
    cpu = meter.report(n)
    cpu["cpu_us_per_event"]["consumer_rating"] = round(rating.seconds / n * 1e6, 1)
    # Wall time the consumer's thread spent waiting for its atomic writes (the write sent behind
    # a read runs while the next batch is rated; what it takes beyond that is waited for here).
    waited = pipeline.metrics.registry.get_sample_value("adr_redis_write_seconds_sum") or 0.0
    cpu["redis_write_wait_us_per_event"] = round(waited / n * 1e6, 1)
    assert pipeline.first_write is not None
    seconds = pipeline.last_write - pipeline.first_write
    return {"events": n, "seconds": round(seconds, 2), "events_per_s": round(n / seconds), **cpu}


def stages(bootstrap: str, redis_url: str, topic: str, n: int, params: Params) -> dict[str, Any]:
    """The consumer on the same backlog again (a new namespace and group), its thread's CPU time
    charged to the stages of each batch (consumer/_stages.py): µs per event of each stage, the
    rest of the pipeline's thread (Kafka reads and commits, dead letters, waits' bookkeeping, the
    full GC once a minute) and the process's other threads (librdkafka's)."""
    clock = StageClock()
    pipeline = TimedPipeline(
        config_for(bootstrap, redis_url, topic, f"sg{uuid.uuid4().hex[:6]}"),
        params,
        stage_timer=clock,
    )
    meter = CpuMeter(redis_url, bootstrap=bootstrap)
    thread_started = time.thread_time()
    run_pipeline(pipeline, lambda p: p.applied >= n)
    thread = time.thread_time() - thread_started
    cpu = meter.report(n)
    staged = sum(clock.seconds.values())
    per_event = {stage: round(s / n * 1e6, 1) for stage, s in clock.seconds.items()}
    per_event["rest_of_thread"] = round((thread - staged) / n * 1e6, 1)
    consumer = cpu["cpu_us_per_event"]["consumer"]
    per_event["other_threads"] = round(consumer - thread / n * 1e6, 1)
    return {"events": n, "consumer_cpu_us_per_event": consumer, "stage_cpu_us_per_event": per_event}


def raw_consume(bootstrap: str, topic: str, n: int) -> dict[str, Any]:
    """Ceiling: read the n messages with no work at all."""
    group = f"raw-{uuid.uuid4().hex[:6]}"
    settings = {"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    c = Consumer(_kafka(settings, bootstrap))
    c.subscribe([topic])
    got, started = 0, None
    while got < n:
        batch = c.consume(5000, 1.0)
        if batch and started is None:
            started = time.monotonic()
        got += sum(1 for m in batch if m.error() is None)
    seconds = time.monotonic() - (started or time.monotonic())
    c.close()
    return {"events": got, "seconds": round(seconds, 2), "events_per_s": round(got / seconds)}


def raw_redis(redis_url: str, n: int, players: int, *, one_send: bool = False) -> dict[str, Any]:
    """Ceiling: the same volume of writes (two player hashes and their ranks per event), packed by
    hiredis and pipelined 1,000 events per round trip: no reads, no rating, no script.

    As issue #20 defines it, the round trip's commands go out as redis-py's
    `send_packed_command` sends a list: one `sendall` per command. With `one_send` they go out
    in one `sendall` per round trip, as the consumer sends its batches (redis_layout.raw's
    `send_packed`): the same commands, fewer system calls on both sides; printed beside the
    defined ceiling (`ceiling_raw_redis_writes_one_send`), not used by the issue's ratios."""
    client = redis.Redis.from_url(redis_url)
    keys = Keys(f"raw{uuid.uuid4().hex[:6]}")
    fields = encode_player_v1(new_player(Params()), 1)  # issue #20: 13 fields, as before layout 2
    conn = client.connection_pool.get_connection()
    meter = CpuMeter(redis_url)
    started = time.monotonic()
    for start in range(0, n, 1000):
        packed = []
        for i in range(start, min(n, start + 1000)):
            for p in (f"p{i % players}", f"p{(i * 7 + 1) % players}"):
                packed.append(hiredis.pack_command(("HSET", keys.player(p), *fields)))
                packed.append(hiredis.pack_command(("ZADD", keys.lb, "1000.0", p)))
        if one_send:
            send_packed(conn, packed)
        else:
            conn.send_packed_command(packed)
        for _ in packed:
            conn.read_response()
    seconds = time.monotonic() - started
    cpu = meter.report(n)
    client.connection_pool.release(conn)
    client.close()
    return {"events": n, "seconds": round(seconds, 2), "events_per_s": round(n / seconds), **cpu}


def naive(
    bootstrap: str, redis_url: str, topic: str, params: Params, seconds: float
) -> dict[str, Any]:
    """One message at a time: poll, read both player hashes, rate, write, commit."""
    group = f"naive-{uuid.uuid4().hex[:6]}"
    settings = {"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    c = Consumer(_kafka(settings, bootstrap))
    c.subscribe([topic])
    client = redis.Redis.from_url(redis_url)
    keys = Keys(f"nv{uuid.uuid4().hex[:6]}")
    snapshot = initial_snapshot(params)
    done, started = 0, None
    while started is None or time.monotonic() - started < seconds:
        m = c.poll(1.0)
        if m is None or m.error() is not None:
            continue
        if started is None:
            started = time.monotonic()
        e = decode_kill_event(m.value(), now_ms(), _LIMITS)
        t_prev = client.get(keys.cooldown(e.attacker, e.victim))
        if not is_duplicate(None if t_prev is None else int(t_prev), e.ts, params):
            pop = client.hmget(keys.pop, "count", "sigma_hi", "sigma_lo")
            count = int(pop[0] or 0)
            total = (int(pop[1] or 0) << 32) + int(pop[2] or 0)
            states = []
            for p in (e.attacker, e.victim):
                got = decode_player(client.hmget(keys.player(p), READ_FIELDS))
                if got is None:
                    got = (new_player(params), 0)
                    count += 1
                    total += sigma_units(params.sigma0, params)
                states.append(got)
            out = rate_kill(states[0][0], states[1][0], e.ts, total, count, snapshot, params)
            total += out.sigma_units_delta
            tx = client.pipeline(transaction=True)
            for p, (_s, ver), new in (
                (e.attacker, states[0], out.attacker),
                (e.victim, states[1], out.victim),
            ):
                f = encode_player(new, ver + 1)
                tx.hset(keys.player(p), mapping=dict(zip(f[0::2], f[1::2], strict=True)))
            tx.hset(
                keys.pop,
                mapping={"count": count, "sigma_hi": total >> 32, "sigma_lo": total & 0xFFFFFFFF},
            )
            tx.set(keys.cooldown(e.attacker, e.victim), e.ts)
            tx.hset(keys.offsets(topic), str(m.partition()), m.offset() + 1)
            tx.execute()
        c.commit(message=m, asynchronous=False)
        done += 1
    elapsed = time.monotonic() - (started or time.monotonic())
    c.close()
    client.close()
    return {"events": done, "seconds": round(elapsed, 2), "events_per_s": round(done / elapsed)}


def steady(
    bootstrap: str, redis_url: str, params: Params, rate: int, seconds: int, players: int
) -> dict[str, Any]:
    """`adr simulate --rate` publishing with ts = wall clock; the consumer keeps up (or not):
    p50/p99/max of (write that applied the event) − (event time), over counted events."""
    topic = make_topic(bootstrap, 4)
    n = rate * seconds
    pipeline = TimedPipeline(
        config_for(bootstrap, redis_url, topic, f"st{uuid.uuid4().hex[:6]}"), params
    )
    argv = [sys.executable, "-m", "adr_cli.main", "simulate", "--bootstrap-servers", bootstrap,
            "--topic", topic, "--arenas", "1000", "--players", str(players), "--rate", str(rate),
            "--events", str(n), "--seed", "9", "--duplicate-rate", "0.05"]  # fmt: skip
    sims: list[subprocess.Popen[bytes]] = []

    def done(p: TimedPipeline) -> bool:
        # The load starts once the consumer holds its partitions: events published while it
        # joins the group would be a backlog, not the steady state this phase measures.
        if not sims:
            if not p.assigned:
                return False
            sims.append(
                subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
        sim = sims[0]
        return p.applied >= n or (sim.poll() is not None and sim.returncode != 0)

    meter = CpuMeter(redis_url, children="simulate", bootstrap=bootstrap)
    run_pipeline(pipeline, done)
    sims[0].wait(60)
    cpu = meter.report(n)
    lat = sorted(pipeline.latencies_ms[len(pipeline.latencies_ms) // 10 :])  # skip warm-up 10%
    q = statistics.quantiles(lat, n=100, method="inclusive")
    return {"rate_events_per_s": rate, "events": pipeline.applied, "p50_ms": round(q[49]),
            "p99_ms": round(q[98]), "max_ms": lat[-1], **cpu}  # fmt: skip


_LIMITS = None
_KAFKA = KafkaSettings()
"""The operator's Kafka settings (--kafka-config-file, --kafka-config), for every client here."""


def _kafka(ours: dict[str, Any], bootstrap: str) -> dict[str, Any]:
    return _KAFKA.apply(ours, {"bootstrap.servers": bootstrap})


def main() -> int:
    global _LIMITS, _KAFKA
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--events", type=int, default=1_000_000, help="backlog size (default 1000000)")
    ap.add_argument(
        "--players", type=int, default=100_000, help="distinct players (default 100000)"
    )
    ap.add_argument("--arenas", type=int, default=1000, help="arenas, the keys (default 1000)")
    ap.add_argument("--partitions", type=int, default=4, help="kill-events partitions (default 4)")
    ap.add_argument(
        "--steady-rate",
        type=int,
        default=5000,
        help="the first steady phase's events/s (default 5000)",
    )
    ap.add_argument(
        "--steady-seconds", type=int, default=60, help="length of each steady phase (default 60)"
    )
    ap.add_argument(
        "--naive-seconds", type=float, default=20.0, help="length of the naive phase (default 20)"
    )
    add_kafka_arguments(ap)
    args = ap.parse_args()
    _KAFKA = kafka_settings_from_args(args)
    if args.kafka_config:  # `adr simulate` children read the same settings from a 0600 file
        fd, path = tempfile.mkstemp(prefix="bench-kafka-", suffix=".properties")
        with os.fdopen(fd, "w") as out:
            out.write("".join(f"{k}={v}\n" for k, v in _KAFKA.settings.items()))
        os.environ["ADR_KAFKA_CONFIG_FILE"] = path
    from schemas import Limits

    _LIMITS = Limits(max_age_ms=4 * HOUR_MS)
    with bench_servers() as servers:
        bootstrap, redis_url = servers.kafka_bootstrap, servers.redis_url
        params = Params()
        topic = make_topic(bootstrap, args.partitions)
        cfg = SimConfig(arenas=args.arenas, players=args.players, events=args.events, seed=1,
                        start_ts=now_ms() - HOUR_MS, spacing_ms=HOUR_MS / args.events,
                        duplicate_rate=0.05)  # fmt: skip
        say(f"producing {args.events} events, {args.players} players, {args.arenas} arenas")
        produce_all(bootstrap, topic, cfg)
        say("ceiling: raw consume")
        ceiling_consume = raw_consume(bootstrap, topic, args.events)
        say("consumer: sustained throughput on the backlog")
        consumer = sustained(bootstrap, redis_url, topic, args.events, params)
        say("ceiling: raw pipelined Redis writes")
        ceiling_redis = raw_redis(redis_url, args.events, args.players)
        say("ceiling: raw pipelined Redis writes, one send per round trip")
        ceiling_one_send = raw_redis(redis_url, args.events, args.players, one_send=True)
        say("naive consumer")
        naive_result = naive(bootstrap, redis_url, topic, params, args.naive_seconds)
        say("consumer: CPU per event by stage (profiling phase, same backlog)")
        by_stage = stages(bootstrap, redis_url, topic, args.events, params)
        say(f"steady {args.steady_rate} events/s for {args.steady_seconds} s")
        latency = steady(
            bootstrap, redis_url, params, args.steady_rate, args.steady_seconds, args.players
        )
        say(f"steady {HIGH_RATE} events/s for {args.steady_seconds} s")
        latency_high = steady(
            bootstrap, redis_url, params, HIGH_RATE, args.steady_seconds, args.players
        )
        c = consumer["events_per_s"]
        used = consumer["cpu_us_per_event"]
        redis_us = used.get("redis")  # None: the bench's redis-server was not found in /proc
        raw_redis_us = ceiling_redis["cpu_us_per_event"].get("redis")
        redis_vs_raw = round(redis_us / raw_redis_us, 2) if redis_us and raw_redis_us else None
        one_send_us = ceiling_one_send["cpu_us_per_event"].get("redis")
        report = {
            "machine": f"{os.cpu_count()} cores (shared), broker + Redis + consumer on it",
            "build": BUILD,
            "consumer": consumer,
            "consumer_stages": by_stage,
            "steady": latency,
            "steady_10000": latency_high,
            "naive": naive_result,
            "ceiling_raw_consume": ceiling_consume,
            "ceiling_raw_redis_writes": ceiling_redis,
            "ceiling_raw_redis_writes_one_send": ceiling_one_send,
            "ratios": {
                "consumer_vs_naive": round(c / naive_result["events_per_s"], 2),
                "consumer_vs_raw_consume": round(c / ceiling_consume["events_per_s"], 3),
                "consumer_vs_raw_redis_writes": round(c / ceiling_redis["events_per_s"], 3),
                # Redis CPU per event of the consumer's atomic write ÷ that of the raw writes
                "redis_cpu_vs_raw": redis_vs_raw,
                # the same two against the one-send writes (informational, not issue #20's)
                "consumer_vs_raw_redis_writes_one_send": round(
                    c / ceiling_one_send["events_per_s"], 3
                ),
                "redis_cpu_vs_raw_one_send": round(redis_us / one_send_us, 2)
                if redis_us and one_send_us
                else None,
            },
            # what one Redis primary (one core), and so one rating pool, can carry
            "pool_events_per_s_per_redis_core": round(1e6 / redis_us) if redis_us else None,
            "targets": {
                "sustained_25000_per_s": c >= 25_000,
                "p99_250_ms_at_5000_per_s": latency["p99_ms"] <= 250,
                # issue 20
                "consumer_vs_raw_redis_writes_at_least_0_75": c / ceiling_redis["events_per_s"]
                >= 0.75,
                "redis_cpu_vs_raw_at_most_1_2": redis_vs_raw is not None and redis_vs_raw <= 1.2,
                "p99_250_ms_at_10000_per_s": latency_high["p99_ms"] <= 250,
                # at the sustained phase's CPU per event, the whole machine's need at 25,000/s
                "cores_needed_at_25000_per_s": round(
                    consumer["cpu_us_per_event"]["machine"] * 25_000 / 1e6, 2
                ),
                # what-if: the same, with the consumer's rating (rate_batch) costing nothing
                "cores_needed_at_25000_per_s_without_rating": round(
                    (used["machine"] - used["consumer_rating"]) * 25_000 / 1e6, 2
                ),
                "cores": os.cpu_count(),
            },
        }
        print(json.dumps(report, indent=2))
        return 0


if __name__ == "__main__":
    sys.exit(main())
