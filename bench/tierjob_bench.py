"""Benchmark: one tier-job calibration on a large population in a real Redis.

    python bench/tierjob_bench.py                          # 1,000,000 players, 200,000 active
    python bench/tierjob_bench.py --players 100000 --active 20000 --expired 0,1000,10000

Target (issue 5): with 1,000,000 tracked players of which 200,000 active, one calibration takes
<= 1 s, and its cost grows with the number of players whose activity expired since the last
run, not with P.

Redis: --redis-url (or REDIS_URL), else a private redis-server started for the run (stack/).
The state is the layout of docs/design.md as the consumer leaves it: every player has a hash
(`mu` only; the job reads hashes only when nobody is active) and, having 5 counted events, an
activity time in `{ns}:activity`; the active ones are in `{ns}:active_mu` with their μ, and
the players that expired before the first measured run were pruned already (steady state).

Three measurements, each the median of --repeat runs (a run = Calibrator.run_once: lease,
prune, read of μ over A, engine.take_snapshot, fenced publish to Redis; Kafka is left out,
one small message per run):
1. steady state: no player expired since the last run;
2. E players expired since the last run, for each E in --expired;
3. P grown with long-expired players (--grow), A and E = 0 unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from engine import Params  # noqa: E402
from tierjob import Calibrator, Config, Keys  # noqa: E402

DAY_MS = 86_400_000
T0 = 1_800_000_000_000
BATCH = 10_000


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Population:
    """Writes players straight into the Redis layout, fast (pipelines of 10,000-member ZADDs)."""

    def __init__(self, client: redis.Redis, keys: Keys, seed: int, hashes: bool) -> None:
        self.r = client
        self.keys = keys
        self.rng = random.Random(seed)
        self.hashes = hashes
        self.count = 0

    def add(self, n: int, activity: tuple[int, int], in_active_mu: bool) -> None:
        """n players, activity time uniform in [lo, hi] ms, μ uniform in [0, 4000]."""
        lo, hi = activity
        rng, k = self.rng, self.keys
        for start in range(0, n, BATCH):
            size = min(BATCH, n - start)
            ids = [f"p{self.count + i}" for i in range(size)]
            mus = [rng.uniform(0.0, 4000.0) for _ in ids]
            pipe = self.r.pipeline(transaction=False)
            pipe.zadd(k.activity, {pid: rng.randint(lo, hi) for pid in ids})
            if in_active_mu:
                pipe.zadd(k.active_mu, {pid: repr(mu) for pid, mu in zip(ids, mus, strict=True)})
            if self.hashes:
                for pid, mu in zip(ids, mus, strict=True):
                    pipe.hset(k.player(pid), "mu", repr(mu))
            pipe.execute()
            self.count += size


def timed(job: Calibrator, now: int) -> tuple[float, dict[str, object]]:
    result = job.run_once(now)
    assert result.outcome == "published", result.outcome
    return result.duration_s, result.summary()


def median_run(job: Calibrator, now: int, repeat: int) -> tuple[float, dict[str, object]]:
    runs = [timed(job, now) for _ in range(repeat)]
    return statistics.median(d for d, _ in runs), runs[-1][1]


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
    ap.add_argument("--no-hashes", action="store_true", help="skip the 1-field player hashes")
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

    stack = None
    url = args.redis_url
    if not url:
        from stack import LocalStack

        stack = LocalStack()
        url = stack.redis_url()
        log(f"started a private redis-server at {url}")
    client = redis.Redis.from_url(url)
    keys = Keys.of(f"bench-tierjob-{os.getpid()}")
    params = Params()
    job = Calibrator(client, Config(namespace=keys.namespace, params=params, holder_id="bench"))
    now = T0
    cutoff = now - params.active_ms
    figures: dict[str, object] = {"players": args.players, "active": args.active}
    try:
        pop = Population(client, keys, args.seed, not args.no_hashes)
        started = time.perf_counter()
        # Active players' activity lies in the last 6 days, well clear of the cutoffs below.
        pop.add(args.active, (now - 6 * DAY_MS, now), in_active_mu=True)
        pop.add(p_start - args.active, (now - 60 * DAY_MS, cutoff - 10 * DAY_MS), False)
        log(f"loaded P={pop.count:,} (A={args.active:,}) in {time.perf_counter() - started:.1f} s")
        client.set(keys.pruned_to, str(cutoff - 10 * DAY_MS))

        first, summary = timed(job, now)  # the first run prunes nothing: steady state from here
        assert summary["active_count"] == args.active, summary
        steady, _ = median_run(job, now, args.repeat)
        print(f"steady state, P={pop.count:,} A={args.active:,}: one calibration {steady:.3f} s")
        figures["steady_s"] = steady

        rows = []
        for e in expired_steps:
            # E players active now whose activity lies in the next E ms past the cutoff.
            pop.add(e, (cutoff + 1, cutoff + max(e, 1)), in_active_mu=True)
            timed(job, now)  # publishes with them active; pruned_to = cutoff
            now += max(e, 1)
            cutoff = now - params.active_ms
            duration, summary = timed(job, now)
            assert summary["expired_pruned"] == e, (e, summary["expired_pruned"])
            assert summary["active_count"] == args.active
            rows.append({"expired": e, "seconds": duration})
            print(f"  E={e:>9,} newly expired: one calibration {duration:.3f} s")
        figures["by_expired"] = rows_e = rows

        rows = []
        for target in sorted({max(t, pop.count) for t in grow}):
            if target > pop.count:
                pop.add(target - pop.count, (now - 90 * DAY_MS, now - 70 * DAY_MS), False)
            duration, summary = median_run(job, now, args.repeat)
            assert summary["expired_pruned"] == 0 and summary["active_count"] == args.active
            rows.append({"players": pop.count, "seconds": duration})
            print(f"  P={pop.count:>9,} (A={args.active:,}, E=0): one calibration {duration:.3f} s")
        figures["by_players"] = rows
        figures["first_run_s"] = first
        verdict = "meets" if steady <= 1.0 else "MISSES"
        print(f"steady-state calibration {steady:.3f} s: {verdict} the 1 s target")
        if len(figures["by_expired"]) > 1:  # type: ignore[arg-type]
            (e0, t0), (e1, t1) = [(r["expired"], r["seconds"]) for r in rows_e[:: len(rows_e) - 1]]
            per = (t1 - t0) / max(1, e1 - e0) * 1e6
            print(f"cost per newly expired player: {per:.1f} µs (E={e0:,} → E={e1:,})")
        print(json.dumps(figures))
    finally:
        batch = list(
            client.scan_iter(match=f"{{{keys.namespace}}}*".replace("{", "\\{"), count=BATCH)
        )
        for i in range(0, len(batch), BATCH):
            client.delete(*batch[i : i + BATCH])
        for key in (keys.activity, keys.active_mu):
            client.unlink(key)
        client.close()
        if stack is not None:
            stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
