"""`adr rebuild` end to end, Kafka to Redis (issue #31: target >= 150,000 events/s), and where its
time goes.

Produces a backlog (loadgen's simulated arenas) to a new topic, then measures, each on the same
backlog: the raw read (consume every message, nothing else), the read with the consumer's decoder
(adr_cli/_rebuild_log.read_log), and `adr rebuild` itself as a user runs it (a subprocess; its
summary line gives the time to the end of rating and the total). Prints one JSON object:
events/s end to end and seconds per phase (read, decode, rate = engine and counting rules,
write = Redis bulk writes and the group commit).

Usage: python bench/rebuild_bench.py [--events N] [--players N] [--partitions N]
       [--cores python,native] [--runs N]
(`--cores`: `adr rebuild --core` of each rebuild, default auto; each core runs `--runs` times on
the same backlog, alternating, and the JSON has one entry per rebuild)
(a local broker and redis-server are started unless KAFKA_BOOTSTRAP_SERVERS and REDIS_URL are
set; ADR_COMPILED=0 runs the pure build).
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

from runtime import compiled

BUILD = compiled.activate()

from _stack import bench_servers
from confluent_kafka import Consumer, TopicPartition
from consumer_bench import HOUR_MS, make_topic, now_ms, produce_all, say

from adr_cli import _rebuild_log
from loadgen import SimConfig
from schemas import Limits


def raw_read(bootstrap: str, topic: str, events: int) -> float:
    c = Consumer(_rebuild_log.settings(bootstrap, f"bench-{uuid.uuid4().hex[:6]}", {}))
    parts = _rebuild_log.partitions_of(c, topic, 30)
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    started, n = time.monotonic(), 0
    while n < events:
        n += len(c.consume(_rebuild_log.READ_BATCH, 1.0))
    elapsed = time.monotonic() - started
    c.close()
    return elapsed


def decoded_read(bootstrap: str, topic: str) -> tuple[float, int]:
    c = Consumer(_rebuild_log.settings(bootstrap, f"bench-{uuid.uuid4().hex[:6]}", {}))
    out = _rebuild_log.LogRead()
    started = time.monotonic()
    n = sum(
        1 for _ in _rebuild_log.read_log(c, topic, Limits(max_age_ms=2**62), out, lambda n: None)
    )
    elapsed = time.monotonic() - started
    c.close()
    return elapsed, n


def rebuild(bootstrap: str, redis_url: str, topic: str, core: str) -> dict[str, object]:
    ns = f"bench-rebuild-{uuid.uuid4().hex[:8]}"
    cmd = [sys.executable, "-m", "adr_cli.main", "rebuild", "--bootstrap-servers", bootstrap,
           "--redis-url", redis_url, "--namespace", ns, "--topic", topic,
           "--group", f"g-{ns}", "--progress-every", "0", "--core", core]  # fmt: skip
    started = time.monotonic()
    # Run from outside the checkout: `-m` puts the working directory first on sys.path, where the
    # sources would shadow the compiled wheel of .venv/compiled.
    done = subprocess.run(
        cmd, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir()
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    lines = [json.loads(x) for x in done.stderr.splitlines() if x.startswith("{")]
    rated = next(x for x in lines if x["event"] == "rated")
    summary = next(x for x in lines if x["event"] == "rebuilt")
    started_line = next(x for x in lines if x["event"] == "started")
    return {"wall_s": round(wall, 3), "rated_s": rated["seconds"], "summary": summary,
            "build": started_line["build"], "core": started_line.get("core")}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=500_000, help="backlog size (default 500000)")
    ap.add_argument("--players", type=int, default=50_000, help="distinct players (default 50000)")
    ap.add_argument("--arenas", type=int, default=1000, help="arenas, the keys (default 1000)")
    ap.add_argument("--partitions", type=int, default=1, help="partitions (default 1)")
    ap.add_argument(
        "--cores", default="auto", help="adr rebuild --core of each rebuild, comma-separated"
    )
    ap.add_argument("--runs", type=int, default=1, help="rebuilds per core (default 1)")
    args = ap.parse_args()
    with bench_servers() as servers:
        bootstrap, redis_url = servers.kafka_bootstrap, servers.redis_url
        topic = make_topic(bootstrap, args.partitions)
        cfg = SimConfig(arenas=args.arenas, players=args.players, events=args.events, seed=1,
                        start_ts=now_ms() - HOUR_MS, spacing_ms=HOUR_MS / args.events,
                        duplicate_rate=0.05)  # fmt: skip
        say(f"producing {args.events} events")
        produce_all(bootstrap, topic, cfg)
        say("raw read")
        read_s = raw_read(bootstrap, topic, args.events)
        say("read + decode")
        decode_s, n = decoded_read(bootstrap, topic)
        reports = []
        for run in range(1, args.runs + 1):
            for core in args.cores.split(","):
                say(f"adr rebuild --core {core}, run {run}")
                result = rebuild(bootstrap, redis_url, topic, core)
                total = float(result["summary"]["seconds"])  # type: ignore[index]
                rated = float(result["rated_s"])  # type: ignore[arg-type]
                reports.append({
                    "machine": f"{os.cpu_count()} cores (shared), broker + Redis + rebuild on it",
                    "build": result["build"],  # the rebuild process's
                    "core": result["core"],
                    "run": run,
                    "events": args.events,
                    "partitions": args.partitions,
                    "rebuild_events_per_s": round(args.events / total),
                    "rebuild_seconds": total,
                    "process_wall_s": result["wall_s"],
                    "phases_s": {
                        "kafka_read": round(read_s, 3),
                        "decode": round(decode_s - read_s, 3),
                        "rate": round(rated - decode_s, 3),
                        "read_decode_rate": round(rated, 3),
                        "redis_write_and_commit": round(total - rated, 3),
                    },
                    "decoded_events": n,
                    "summary": result["summary"],
                })  # fmt: skip
        report = reports[0] if len(reports) == 1 else reports
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
