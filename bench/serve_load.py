"""Benchmark of `adr serve` (issue 32): requests/s and latency of top, rank and around over HTTP
while a consumer rates a steady kill load into the same Redis.

    python bench/serve_load.py                     # 30 s of load, 32 connections
    python bench/serve_load.py --seconds 10 --connections 64
    nice -n -15 python bench/serve_load.py         # as docs/benchmarks.md's figures: the whole
                                                   # bench (its children too) ahead of the rest

What runs, all on this machine: a Kafka broker and redis-server (KAFKA_BOOTSTRAP_SERVERS /
REDIS_URL when set, else the local stack), `adr simulate` at --event-rate kill events/s,
`adr consume` and `adr calibrate --every 5` into one pool, `adr serve` on that pool, and this
process's load client: --connections keep-alive HTTP/1.1 connections on one asyncio loop, each
sending its next request when the last answer is in (a closed loop), the requests cycling
through top (a page of 20), rank and around (k = 5) of players on the board. Every placed player
has metadata (a display name and a country, `{ns}:meta`), so every answer carries it as in a
studio's pool. Latency is from sending a request to reading its whole answer; it is also given
per kind of request. The server's CPU time per request (user + system, from /proc, over the
measurement) and its answer cache's hits and misses (its /metrics) are printed beside. The load
waits until the board has --min-placed players, then measures for --seconds; the consumer must
have rated events during the measurement (its counter is read before and after), else the run
is reported as invalid.

Prints one JSON object on stdout (the figures); progress on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import redis
from _stack import bench_servers

from redis_layout import Keys
from redis_layout.meta_codec import encode_meta
from stack._ports import free_port
from stack._topics import TopicAdmin

_ADR = [sys.executable, "-m", "adr_cli"]


def say(msg: str) -> None:
    print(f"[serve_load] {msg}", file=sys.stderr, flush=True)


def _metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name) and not line.startswith("#")
    )


def _cache_counts(port: int) -> dict[str, float]:
    """adr serve's answer-cache lookups by outcome so far."""
    name = "adr_serve_answer_cache_lookups_total"
    return {o: _metric(port, f'{name}{{outcome="{o}"}}') for o in ("hit", "miss", "waited")}


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _client(
    host: str,
    port: int,
    paths: list[bytes],
    until: float,
    latencies: list[float],
    errors: list[int],
    kinds: list[int] | None = None,
) -> None:
    """`kinds` (optional, one per path): appended with each request's kind, in step with
    `latencies`."""
    reader, writer = await asyncio.open_connection(host, port)
    i = random.randrange(len(paths))
    try:
        while time.perf_counter() < until:
            path = paths[i % len(paths)]
            i += 1
            start = time.perf_counter()
            writer.write(b"GET " + path + b" HTTP/1.1\r\nHost: bench\r\n\r\n")
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - start)
            if kinds is not None:
                kinds.append((i - 1) % len(paths))
            if status != 200:
                errors.append(status)
    finally:
        writer.close()


def _percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seconds", type=float, default=30.0, help="measured load (default 30)")
    ap.add_argument("--connections", type=int, default=32, help="client connections (32)")
    ap.add_argument("--event-rate", type=int, default=500, help="kill events/s simulated (500)")
    ap.add_argument("--players", type=int, default=5000, help="simulated players (5000)")
    ap.add_argument("--min-placed", type=int, default=300, help="placed players to wait for")
    ap.add_argument("--threads", type=int, default=16, help="adr serve --threads (16)")
    ap.add_argument(
        "--answer-cache-ttl", type=float, default=1.0, help="adr serve --answer-cache-ttl (1 s)"
    )
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="serve-load-"))
    with bench_servers(workdir=work / "stack") as servers:
        result = _load(args, work, servers.kafka_bootstrap, servers.redis_url)
    print(json.dumps(result))
    return 0 if result.get("consumer_running") else 1


def _load(args: argparse.Namespace, work: Path, bootstrap: str, redis_url: str) -> dict[str, Any]:
    ns = f"load-{uuid.uuid4().hex[:6]}"
    topic = f"{ns}-kills"
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "REDIS_URL": redis_url,
           "ADR_NAMESPACE": ns}  # fmt: skip
    consume_port, serve_port = free_port(), free_port()
    while serve_port == consume_port:
        serve_port = free_port()
    commands = {
        "consume": [*_ADR, "consume", "--topic", topic, "--rating-topic", f"{ns}-rating",
                    "--dlq-topic", f"{ns}-dlq", "--group", f"{ns}-c",
                    "--metrics-port", str(consume_port), "--metrics-host", "127.0.0.1"],
        "calibrate": [*_ADR, "calibrate", "--topic", f"{ns}-tiers", "--every", "5",
                      "--metrics-port", "0"],
        "simulate": [*_ADR, "simulate", "--topic", topic, "--players", str(args.players),
                     "--arenas", "50", "--rate", str(args.event_rate), "--events", "0",
                     "--partitions", "4"],
        "serve": [*_ADR, "serve", "--port", str(serve_port), "--threads", str(args.threads),
                  "--answer-cache-ttl", str(args.answer_cache_ttl)],
    }  # fmt: skip
    admin = TopicAdmin(bootstrap)
    admin.create(topic, partitions=4, exist_ok=True)
    admin.create(f"{ns}-rating", partitions=4, exist_ok=True)
    admin.create(f"{ns}-dlq", partitions=1, exist_ok=True)
    admin.create(f"{ns}-tiers", partitions=1, config={"cleanup.policy": "compact"}, exist_ok=True)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    result: dict[str, Any] = {}
    try:
        for name, argv in commands.items():
            log = (work / f"{name}.log").open("wb")
            procs[name] = subprocess.Popen(argv, env=env, stdout=log, stderr=log)
            say(f"{name}: pid {procs[name].pid}, log {work / (name + '.log')}")
        client = redis.Redis.from_url(redis_url)
        keys = Keys(ns)
        deadline = time.monotonic() + 300
        while client.zcard(keys.lb) < args.min_placed:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    raise SystemExit(f"{name} exited {proc.returncode}: see {work}")
            if time.monotonic() > deadline:
                raise SystemExit(f"fewer than {args.min_placed} placed players after 300 s")
            time.sleep(1)
        players = [m.decode() for m in client.zrange(keys.lb, 0, -1)]
        everyone = [k.decode()[len(keys.player_prefix) :] for k in
                    client.scan_iter(match=keys.match_players, count=1000)]  # fmt: skip
        client.hset(keys.meta, mapping={
            p: encode_meta({"display_name": f"Player {p}", "country": "DE"}) for p in everyone
        })  # fmt: skip
        say(f"{len(players)} placed players (metadata for {len(everyone)}); "
            f"loading for {args.seconds} s")  # fmt: skip
        paths = []
        names = ("top", "rank", "around")
        for i in range(3000):
            who = random.choice(players)
            kind = i % 3
            if kind == 0:
                paths.append(b"/v1/top?limit=20")
            elif kind == 1:
                paths.append(f"/v1/rank?player={who}".encode())
            else:
                paths.append(f"/v1/around?player={who}&k=5".encode())
        rated_before = _metric(consume_port, "adr_events_counted_total")
        cache_before = _cache_counts(serve_port)
        cpu_before = _cpu_s(procs["serve"].pid)
        latencies: list[float] = []
        errors: list[int] = []
        kinds: list[int] = []

        async def load() -> float:
            start = time.perf_counter()
            until = start + args.seconds
            await asyncio.gather(*(
                _client("127.0.0.1", serve_port, paths, until, latencies, errors, kinds)
                for _ in range(args.connections)
            ))  # fmt: skip
            return time.perf_counter() - start

        elapsed = asyncio.run(load())
        server_cpu = _cpu_s(procs["serve"].pid) - cpu_before
        rated = _metric(consume_port, "adr_events_counted_total") - rated_before
        cache = {o: int(n - cache_before[o]) for o, n in _cache_counts(serve_port).items()}
        by_kind: dict[str, list[float]] = {n: [] for n in names}
        for latency, path_index in zip(latencies, kinds, strict=True):
            by_kind[names[path_index % 3]].append(latency)
        per_kind = {}
        for name, values in by_kind.items():
            values.sort()
            per_kind[name] = {
                "requests": len(values),
                "p50_ms": round(1000 * _percentile(values, 0.50), 2) if values else None,
                "p99_ms": round(1000 * _percentile(values, 0.99), 2) if values else None,
            }
        latencies.sort()
        result = {
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "requests": len(latencies),
            "requests_per_s": round(len(latencies) / elapsed, 1),
            "p50_ms": round(1000 * _percentile(latencies, 0.50), 2),
            "p99_ms": round(1000 * _percentile(latencies, 0.99), 2),
            "max_ms": round(1000 * latencies[-1], 2),
            "non_200": len(errors),
            "server_cpu_ms_per_request": round(1000 * server_cpu / max(1, len(latencies)), 3),
            "answer_cache": cache,
            "per_kind": per_kind,
            "answer_cache_ttl_s": args.answer_cache_ttl,
            "connections": args.connections,
            "seconds": round(elapsed, 1),
            "placed_players": client.zcard(keys.lb),
            "consumer_events_during_load": int(rated),
            "consumer_running": rated > 0,
            "cpus": os.cpu_count(),
            "loadavg_1m_after": round(os.getloadavg()[0], 2),
        }
        client.close()
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return result


if __name__ == "__main__":
    sys.exit(main())
