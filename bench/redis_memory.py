"""Redis memory per tracked player and the event rate one Redis primary carries.

    python bench/redis_memory.py                      # 100k players, own redis-server
    python bench/redis_memory.py --players 2000 --rate-batches 10   # a quick check

Drives the consumer's own write path with no Kafka in between: synthetic kill events (FFA
arenas of `--arena-size` players) go through `Store.read_view` -> `rate_batch` (the engine) ->
`Store.write` (the atomic Lua script), exactly as `adr consume` applies a batch. Then it reports:

- INFO memory `used_memory` per tracked player (hash + `lb` + `activity`), per
  cooldown key, per outbox entry, measured by deleting each part and reading the drop; and the
  per-player figure again with `hash-max-listpack-value 256` (compact player hashes);
- the write path's rate: events/s of this one consumer process, Lua script calls/s, and the
  Redis server's own CPU time per event (INFO cpu), whose inverse is what one primary carries;
- the largest population per `--maxmemory` that follows (formula printed with it).

Starts a throw-away redis-server (stack.RedisServer) unless --redis-url / REDIS_URL names one;
on a shared server it uses a fresh namespace, deletes it at the end, and changes no config.
Progress goes to stderr, the report to stdout (--json for one JSON object).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from _memory_report import report

from consumer._batch import rate_batch
from consumer._intake import Accepted, Batch
from consumer._store import Store
from engine import Params, take_snapshot
from redis_layout import Conflict, Keys, encode_snapshot
from schemas import KillEvent
from tierjob import Config, PopulationReader

TOPIC = "kill-events"
COMPACT_LISTPACK_VALUE = 256
"""Bytes: above the largest field of a player hash (`window`: 20 msgpack floats, 181 bytes)."""


@dataclass
class Timing:
    events: int = 0
    counted: int = 0
    duplicates: int = 0
    batches: int = 0
    read_s: float = 0.0
    rate_s: float = 0.0
    write_s: float = 0.0
    wall_s: float = 0.0
    conflicts: int = 0
    server_cpu_s: float = 0.0
    script_calls: int = 0
    script_usec: int = 0
    command_usec: int = 0
    extra: dict[str, float] = field(default_factory=dict)


def log(msg: str) -> None:
    print(f"[redis_memory] {msg}", file=sys.stderr, flush=True)


def player_id(i: int) -> str:
    return f"player-{i:09d}"  # 16 bytes: ids are stored 4 times per player (key + 3 zsets)


class Workload:
    """Kill events among `players` split into FFA arenas; ts strictly increasing."""

    def __init__(self, players: int, arena_size: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.players = players
        self.arena_size = arena_size
        self.arenas = max(1, players // arena_size)
        self.seq = 0

    def events(self, count: int, start_ms: int, step_ms: int) -> list[Accepted]:
        out = []
        rng = self.rng
        for j in range(count):
            arena = rng.randrange(self.arenas)
            base = arena * self.arena_size
            size = min(self.arena_size, self.players - base)
            a, b = rng.sample(range(size), 2)
            self.seq += 1
            ev = KillEvent(
                v=1,
                id=f"ev-{self.seq}",
                arena=f"arena-{arena:07d}",
                attacker=player_id(base + a),
                victim=player_id(base + b),
                ts=start_ms + j * step_ms,
            )
            out.append(Accepted(arena % 12, self.seq, ev))
        return out


def server_cpu(r: redis.Redis) -> float:
    info = r.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


_NOT_WORKLOAD = ("cmdstat_info", "cmdstat_config", "cmdstat_memory", "cmdstat_object")


def script_stats(r: redis.Redis) -> tuple[int, int, int]:
    """(script calls, µs in scripts, µs in all workload commands) from INFO commandstats."""
    stats = r.info("commandstats")
    calls = usec = total = 0
    for name, stat in stats.items():
        if name in _NOT_WORKLOAD:
            continue
        total += int(stat["usec"])
        if name in ("cmdstat_evalsha", "cmdstat_eval"):
            calls += int(stat["calls"])
            usec += int(stat["usec"])
    return calls, usec, total


def used_memory(r: redis.Redis) -> int:
    return int(r.info("memory")["used_memory"])


def apply_events(
    r: redis.Redis,
    store: Store,
    keys: Keys,
    params: Params,
    events: list[Accepted],
    batch: int,
    t: Timing,
) -> None:
    """Apply `events` batch by batch through the consumer's read -> rate -> write path."""
    cpu0, (calls0, usec0, all0) = server_cpu(r), script_stats(r)
    wall0 = time.perf_counter()
    for i in range(0, len(events), batch):
        chunk = events[i : i + batch]
        next_offsets: dict[int, int] = {}
        for item in chunk:
            next_offsets[item.partition] = item.offset + 1
        wanted = Batch(chunk, next_offsets, len(chunk), 0.0, keys)
        while True:  # as consumer.pipeline: recompute on a conflict (here: an expired key)
            t0 = time.perf_counter()
            view = store.read_view(wanted.players, wanted.pairs, wanted.partitions, ids=wanted.ids)
            t1 = time.perf_counter()
            plan = rate_batch(chunk, next_offsets, view, keys, params)
            t2 = time.perf_counter()
            try:
                store.write(plan)
            except Conflict:
                t.conflicts += 1
                continue
            finally:
                t3 = time.perf_counter()
                t.read_s += t1 - t0
                t.rate_s += t2 - t1
                t.write_s += t3 - t2
            break
        t.events += len(chunk)
        t.counted += plan.counted
        t.duplicates += plan.duplicates
        t.batches += 1
    t.wall_s += time.perf_counter() - wall0
    calls1, usec1, all1 = script_stats(r)
    t.server_cpu_s += server_cpu(r) - cpu0
    t.script_calls += calls1 - calls0
    t.script_usec += usec1 - usec0
    t.command_usec += all1 - all0


def _text(value: object) -> str:
    """What --json writes for a value JSON has no form for (Redis's encodings arrive as bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def publish_snapshot(r: redis.Redis, keys: Keys, params: Params, now_ms: int) -> int:
    """What the tier job publishes: μ̄_A and boundaries from the μ of A (its paged read)."""
    reader = PopulationReader(r, keys, "bench", Config().read_chunk)
    mus, _pages = reader.active_mus(now_ms - params.active_ms, [])
    snap = take_snapshot(now_ms, mus, [], None, params)
    r.hset(keys.snapshot, mapping=encode_snapshot(snap))
    r.hincrby(keys.snapshot, "version", 1)  # the consumer re-reads a snapshot on a new version
    return len(mus)


def delete_matching(r: redis.Redis, pattern: str) -> int:
    deleted = 0
    batch: list[bytes] = []
    for key in r.scan_iter(match=pattern, count=5000):
        batch.append(key)
        if len(batch) >= 5000:
            deleted += r.unlink(*batch)
            batch.clear()
    if batch:
        deleted += r.unlink(*batch)
    return deleted


def settle(r: redis.Redis) -> int:
    """used_memory once lazy frees are done."""
    for _ in range(100):
        if int(r.info("memory").get("lazyfree_pending_objects", 0)) == 0:
            break
        time.sleep(0.05)
    return used_memory(r)


def compact_hashes(r: redis.Redis, keys: Keys, players: int) -> None:
    """Rewrite every player hash so it is stored with the current listpack limits."""
    for start in range(0, players, 2000):
        ids = [keys.player(player_id(i)) for i in range(start, min(players, start + 2000))]
        pipe = r.pipeline(transaction=False)
        for k in ids:
            pipe.hgetall(k)
        values = pipe.execute()
        pipe = r.pipeline(transaction=False)
        for k, v in zip(ids, values, strict=True):
            if v:
                pipe.delete(k)
                pipe.hset(k, mapping=v)
        pipe.execute()


def run(args: argparse.Namespace, r: redis.Redis, own_server: bool) -> dict[str, object]:
    params = Params()
    ns = f"bench-{os.getpid()}-{int(time.time())}"
    keys = Keys(ns)
    store = Store(r, keys, TOPIC, params)
    work = Workload(args.players, args.arena_size, args.seed)
    total_events = args.players * args.events_per_player // 2
    now = int(time.time() * 1000)
    # Build-up events span the last 55 minutes so their cooldown keys are still live.
    start = now - 55 * 60_000
    step = max(1, (54 * 60_000) // max(1, total_events))
    base_mem = settle(r)
    listpack_value = r.config_get("hash-max-listpack-value").get("hash-max-listpack-value")
    log(f"namespace {ns}; {args.players} players, {total_events} build-up events")

    build = Timing()
    half = total_events // 2
    for part, (lo, hi) in enumerate(((0, half), (half, total_events))):
        for s in range(lo, hi, 200_000):
            n = min(200_000, hi - s)
            events = work.events(n, start + s * step, step)
            apply_events(r, store, keys, params, events, args.batch, build)
            log(f"build-up {build.events}/{total_events} events, {build.wall_s:.0f} s")
        if part == 0:  # the tier job's first calibration: players can be placed from now on
            active = publish_snapshot(r, keys, params, start + half * step)
            log(f"snapshot published from {active} active players")
    publish_snapshot(r, keys, params, now)
    built_mem = settle(r)

    # Throughput at steady state: fresh events on the same population.
    rate = Timing()
    events = work.events(args.rate_batches * args.batch, now, 3)
    apply_events(r, store, keys, params, events, args.batch, rate)
    log(f"rate phase: {rate.events} events in {rate.wall_s:.1f} s")

    tracked = int(r.hget(keys.pop, "count") or 0)
    placed = r.zcard(keys.lb)
    with_all = settle(r)
    outbox_entries = r.xlen(keys.outbox)
    r.unlink(keys.outbox)
    no_outbox = settle(r)
    cooldown_keys = delete_matching(r, keys.match_cooldowns)
    core = settle(r)
    sample = [
        keys.player(player_id(i)) for i in range(0, args.players, max(1, args.players // 500))
    ]
    hash_bytes = sum(int(r.memory_usage(k, samples=0) or 0) for k in sample) / len(sample)
    encoding = r.object("encoding", sample[0])
    zsets = {
        name: int(r.memory_usage(key, samples=0) or 0)
        for name, key in (
            ("lb", keys.lb),
            ("activity", keys.activity),
        )
    }
    compact: dict[str, object] = {}
    if own_server:
        r.config_set("hash-max-listpack-value", COMPACT_LISTPACK_VALUE)
        compact_hashes(r, keys, args.players)
        compact_mem = settle(r)
        compact = {
            "hash_max_listpack_value": COMPACT_LISTPACK_VALUE,
            "bytes_per_player": (compact_mem - base_mem) / tracked,
            "hash_bytes": sum(int(r.memory_usage(k, samples=0) or 0) for k in sample) / len(sample),
            "hash_encoding": r.object("encoding", sample[0]),
        }
        r.config_set("hash-max-listpack-value", listpack_value)
    mem_info = r.info("memory")
    delete_matching(r, keys.match_all)

    per_player = (core - base_mem) / tracked
    per_cooldown = (no_outbox - core) / max(1, cooldown_keys)
    per_outbox = (with_all - no_outbox) / max(1, outbox_entries)
    # Two rating changes (attacker's, victim's) per counted event; one outbox entry per batch.
    per_change = (with_all - no_outbox) / max(1, 2 * (build.counted + rate.counted))
    cpu_per_event = rate.server_cpu_s / max(1, rate.events)
    return {
        "players_tracked": tracked,
        "players_placed": placed,
        "build_events": build.events,
        "build_counted": build.counted,
        "conflicts": build.conflicts + rate.conflicts,
        "used_memory_after_build": built_mem - base_mem,
        "bytes_per_player": per_player,
        "player_hash_bytes": hash_bytes,
        "player_hash_encoding": encoding,
        "hash_max_listpack_value": listpack_value,
        "zset_bytes": zsets,
        "cooldown_keys": cooldown_keys,
        "bytes_per_cooldown_key": per_cooldown,
        "outbox_entries": outbox_entries,
        "bytes_per_outbox_entry": per_outbox,
        "bytes_per_rating_change_in_outbox": per_change,
        "compact": compact,
        "mem_fragmentation_ratio": mem_info.get("mem_fragmentation_ratio"),
        "rate": {
            "batch": args.batch,
            "events": rate.events,
            "counted": rate.counted,
            "duplicates": rate.duplicates,
            "consumer_events_per_s": rate.events / rate.wall_s,
            "read_s": rate.read_s,
            "rate_s": rate.rate_s,
            "write_s": rate.write_s,
            "script_calls": rate.script_calls,
            "batches": rate.batches,
            "write_calls_per_s_client": rate.batches / rate.write_s,
            "read_calls_per_s_client": rate.batches / rate.read_s,
            "script_usec_per_event": rate.script_usec / max(1, rate.events),
            "command_usec_per_event": rate.command_usec / max(1, rate.events),
            "server_cpu_s": rate.server_cpu_s,
            "server_cpu_us_per_event": cpu_per_event * 1e6,
            "primary_events_per_s": 1 / cpu_per_event if cpu_per_event else None,
        },
        "build_consumer_events_per_s": build.events / build.wall_s,
        "peak_rss_bench_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--players", type=int, default=100_000)
    p.add_argument("--events-per-player", type=int, default=24, help="build-up kills per player")
    p.add_argument("--arena-size", type=int, default=10)
    p.add_argument("--batch", type=int, default=1000, help="events per batch (consumer default)")
    p.add_argument("--rate-batches", type=int, default=200)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--maxmemory", type=float, nargs="+", default=[8, 16, 32, 64], help="GiB")
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    args = p.parse_args(argv)
    if args.players < args.arena_size or args.arena_size < 2:
        p.error("need --arena-size >= 2 and --players >= --arena-size")
    server = None
    if args.redis_url is None:
        from stack import RedisServer

        server = RedisServer(Path(tempfile.mkdtemp(prefix="adr-bench-redis-")), settings=())
        args.redis_url = server.start()
        log(f"started redis-server at {args.redis_url}")
    try:
        r = redis.Redis.from_url(args.redis_url)
        log(f"redis {r.info('server')['redis_version']}")
        result = run(args, r, own_server=server is not None)
    finally:
        if server is not None:
            server.stop()
    print(json.dumps(result, indent=2, default=_text) if args.json else report(result, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
