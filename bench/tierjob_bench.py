"""Benchmark: one tier-job calibration on a large population in a real Redis.

    python bench/tierjob_bench.py                          # 1,000,000 players, 200,000 active
    python bench/tierjob_bench.py --players 100000 --active 20000 --expired 0,1000,10000

Target (issue 5): with 1,000,000 tracked players of which 200,000 active, one calibration takes
<= 1 s, and its cost does not grow with P.

Redis: --redis-url (or REDIS_URL), else a private redis-server started for the run (stack/).
The state is the layout of docs/design.md as the consumer leaves it: every player has a hash
(`mu` only: what the job reads) and, having 5 counted events, an activity time in
`{ns}:activity`. The job reads A (members of `{ns}:activity` scored after the cutoff) and each
member's μ from its hash, --chunk members per read-only Lua call.

Three measurements, each the median of --repeat runs (a run = Calibrator.run_once: lease, paged
read of μ over A, engine.take_snapshot, fenced publish to Redis; Kafka is left out, one small
message per run), with the run's phases: read of μ over A (with |A|), snapshot + publish (with
|A|: sort, fsum), and Redis's time per page (`INFO commandstats` EVALSHA µs over the run ÷ pages:
how long one page blocks Redis, a bound on what it adds to the consumer's latency):
1. steady state;
2. E players expired since the last run, for each E in --expired (the cost should not move);
3. P grown with long-expired players (--grow), A and E = 0 unchanged (nor should it here).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
from _stack import bench_servers  # noqa: E402

from engine import Params  # noqa: E402
from redis_layout import Keys  # noqa: E402
from tierjob import Calibrator, Config  # noqa: E402

DAY_MS = 86_400_000
T0 = 1_800_000_000_000
BATCH = 10_000


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Population:
    """Writes players straight into the Redis layout, fast (pipelines of 10,000-member ZADDs)."""

    def __init__(self, client: redis.Redis, keys: Keys, seed: int) -> None:
        self.r = client
        self.keys = keys
        self.rng = random.Random(seed)
        self.count = 0

    def add(self, n: int, activity: tuple[int, int]) -> None:
        """n players, activity time uniform in [lo, hi] ms, μ uniform in [0, 4000]."""
        lo, hi = activity
        rng, k = self.rng, self.keys
        for start in range(0, n, BATCH):
            size = min(BATCH, n - start)
            ids = [f"p{self.count + i}" for i in range(size)]
            mus = [rng.uniform(0.0, 4000.0) for _ in ids]
            pipe = self.r.pipeline(transaction=False)
            pipe.zadd(k.activity, {pid: rng.randint(lo, hi) for pid in ids})
            for pid, mu in zip(ids, mus, strict=True):
                pipe.hset(k.player(pid), "mu", repr(mu))
            pipe.execute()
            self.count += size


def _evalsha_usec(client: redis.Redis) -> int:
    stats: Any = client.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("usec", 0))


def timed(job: Calibrator, client: redis.Redis, now: int) -> dict[str, Any]:
    """One calibration's summary, with `total_s`, `rest_s` (snapshot + publish + lease) and
    `page_ms` (Redis's EVALSHA time over the run per page read)."""
    gc.collect()
    usec = _evalsha_usec(client)
    result = job.run_once(now)
    usec = _evalsha_usec(client) - usec
    assert result.outcome == "published", result.outcome
    summary = result.summary()
    summary["total_s"] = result.duration_s
    summary["rest_s"] = result.duration_s - summary["read_s"]
    summary["page_ms"] = usec / 1000 / max(1, int(summary["read_pages"]))
    return summary


def heap_peak_mib(job: Calibrator, now: int) -> float:
    """The Python heap's peak above its level before one calibration (tracemalloc: what the
    run allocates at once, e.g. the μ list of A and the sorted copy), in MiB."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        job.run_once(now)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return round((peak - base) / 2**20, 1)


def medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {
        k: statistics.median(r[k] for r in runs) for k in ("total_s", "read_s", "rest_s", "page_ms")
    }


def show(label: str, m: dict[str, float]) -> str:
    return (
        f"{label}: one calibration {m['total_s']:.3f} s "
        f"(read μ over A {m['read_s']:.3f}, snapshot+publish {m['rest_s']:.3f}; "
        f"Redis {m['page_ms']:.2f} ms per page)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    ap.add_argument("--players", type=int, default=1_000_000)
    ap.add_argument("--active", type=int, default=200_000)
    ap.add_argument("--expired", default="0,1000,10000,50000,100000")
    ap.add_argument(
        "--grow", default="", help="P values to grow to (default: P/4, P/2, P, each >= A)"
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=Config().read_chunk, help="members per page")
    args = ap.parse_args(argv)
    expired_steps = [int(x) for x in args.expired.split(",") if x.strip()]
    if args.grow:
        grow = [int(x) for x in args.grow.split(",")]
    else:
        grow = sorted({max(args.active, args.players // 4), max(args.active, args.players // 2)})
        grow = [*grow, args.players] if grow[-1] < args.players else grow
    p_start = min([*grow, args.players])
    if p_start < args.active:
        ap.error("every P must be >= --active")

    with bench_servers(kafka=False, redis_url=args.redis_url) as servers:
        url = servers.redis_url
        if servers.started:
            log(f"started a private redis-server at {url}")
        client = redis.Redis.from_url(url)
        keys = Keys.of(f"bench-tierjob-{os.getpid()}")
        params = Params()
        config = Config(
            namespace=keys.namespace, params=params, holder_id="bench", read_chunk=args.chunk
        )
        job = Calibrator(client, config)
        now = T0
        cutoff = now - params.active_ms
        figures: dict[str, object] = {"players": args.players, "active": args.active}
        figures["chunk"] = args.chunk
        try:
            pop = Population(client, keys, args.seed)
            started = time.perf_counter()
            # Active players' activity lies in the last 6 days, well clear of the cutoffs below.
            pop.add(args.active, (now - 6 * DAY_MS, now))
            pop.add(p_start - args.active, (now - 60 * DAY_MS, cutoff - 10 * DAY_MS))
            took = time.perf_counter() - started
            log(f"loaded P={pop.count:,} (A={args.active:,}) in {took:.1f} s")

            first = timed(job, client, now)
            assert first["active_count"] == args.active, first
            steady = medians([timed(job, client, now) for _ in range(args.repeat)])
            print(show(f"steady state, P={pop.count:,} A={args.active:,}", steady))
            figures["steady"] = steady
            figures["steady_heap_peak_mib"] = heap_peak_mib(job, now)
            print(f"  heap peak of one calibration: {figures['steady_heap_peak_mib']} MiB")

            rows_e = []
            for e in expired_steps:
                runs = []
                for _ in range(args.repeat):
                    # E players active now whose activity lies in the next E ms past the cutoff.
                    pop.add(e, (cutoff + 1, cutoff + max(e, 1)))
                    timed(job, client, now)  # publishes with them active
                    now += max(e, 1)
                    cutoff = now - params.active_ms
                    summary = timed(job, client, now)
                    assert summary["active_count"] == args.active
                    runs.append(summary)
                rows_e.append({"expired": e} | medians(runs))
                print(show(f"  E={e:>9,} newly expired", rows_e[-1]))
            figures["by_expired"] = rows_e

            rows_p = []
            for target in sorted({max(t, pop.count) for t in grow}):
                if target > pop.count:
                    pop.add(target - pop.count, (now - 90 * DAY_MS, now - 70 * DAY_MS))
                runs = [timed(job, client, now) for _ in range(args.repeat)]
                assert all(r["active_count"] == args.active for r in runs)
                rows_p.append({"players": pop.count} | medians(runs))
                print(show(f"  P={pop.count:>9,} (A={args.active:,}, E=0)", rows_p[-1]))
            figures["by_players"] = rows_p
            figures["first_run_s"] = first["total_s"]
            verdict = "meets" if steady["total_s"] <= 1.0 else "MISSES"
            print(f"steady-state calibration {steady['total_s']:.3f} s: {verdict} the 1 s target")
            per = steady["read_s"] / max(1, args.active) * 1e6
            print(f"read of μ over A: {per:.2f} µs per active player")
            print(json.dumps(figures))
        finally:
            batch = list(client.scan_iter(match=keys.match_all, count=BATCH))
            for i in range(0, len(batch), BATCH):
                client.delete(*batch[i : i + BATCH])
            client.unlink(keys.activity)
            client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
