"""Benchmark: replay kill events through engine.RatingBook on one core.

    python bench/engine_replay.py                    # 1,000,000 events over 100,000 players
    python bench/engine_replay.py --events 50000     # a quick check

Target (issue 3): >= 100,000 events/s and peak memory <= 1 KiB per tracked player, with a snapshot
every 300 s of event time.

Events are generated up front, deterministically (--seed), into compact arrays, so neither the
generator's time nor its memory is measured. Event time advances by an exponential gap with mean
1000/--rate ms. The default rate, 300 kills/s, is a busy live game of 100,000 tracked players:
about 10,000 online at a time, each scoring a kill every ~30 s; 1,000,000 events then span
~56 minutes of event time, i.e. 11 snapshots, and about half of the population meets the
active rule (5 counted events within 7 days) by the end. 2 % of events repeat the previous
attacker->victim pair within the cooldown (farming), 1 % arrive up to 5 s out of order.

events_per_s is wall-clock; events_per_cpu_s divides by the process's CPU time, which is the
figure to compare on a shared, loaded machine (the 1-minute load average is printed alongside).

Memory is the growth of the process's peak resident set (ru_maxrss) across the replay, divided
by the number of tracked players; --tracemalloc reports tracemalloc's peak of Python allocations
instead (much slower; the events/s it prints are not the figure to quote).

The engine is the installed one: run it with .venv/compiled/bin/python for the mypyc-compiled
build (runtime/compiled.py; scripts/test and scripts/demo make it), with .venv/bin/python for the
pure sources. --engine compiled fails unless the compiled build runs; --engine pure runs the .py
files even of a compiled install (ADR_COMPILED=0).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import sys
import time
import tracemalloc
from array import array

T0 = 1_700_000_000_000


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=300.0, help="events per second of event time")
    parser.add_argument(
        "--calibrate-every", type=float, default=300.0, help="seconds of event time"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--engine", choices=("auto", "pure", "compiled"), default="auto")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    return parser.parse_args()


def _select_engine(choice: str) -> str:
    if choice == "pure":
        os.environ["ADR_COMPILED"] = "0"
    from runtime import compiled

    state = compiled.activate()  # before the engine is imported
    if choice == "compiled" and state != "compiled":
        sys.exit(f"no compiled engine ({state}): run with .venv/compiled/bin/python")
    return "compiled" if state == "compiled" else "pure"


def generate(events: int, players: int, rate: float, seed: int) -> tuple[array, array, array]:
    """(attacker numbers, victim numbers, ts) for `events` kills among `players` players."""
    rng = random.Random(seed)
    attackers, victims, stamps = array("l"), array("l"), array("q")
    skill = [rng.gauss(0.0, 1.0) for _ in range(players)]
    mean_gap_ms = 1000.0 / rate
    ts = float(T0)
    a = b = 0
    for _ in range(events):
        ts += rng.expovariate(1.0) * mean_gap_ms
        roll = rng.random()
        if roll >= 0.02 or not stamps:
            a, b = rng.randrange(players), rng.randrange(players - 1)
            b += b >= a
            if rng.random() < 0.5 * (1.0 + (skill[b] - skill[a]) / 4.0):
                a, b = b, a  # the stronger player is more likely to be the attacker
        late = rng.randrange(5000) if roll > 0.99 else 0
        attackers.append(a)
        victims.append(b)
        stamps.append(int(ts) - late)
    return attackers, victims, stamps


def main() -> int:
    args = _args()
    kind = _select_engine(args.engine)
    from engine import Params, RatingBook

    attackers, victims, stamps = generate(args.events, args.players, args.rate, args.seed)
    ids = [f"player-{i:06d}" for i in range(args.players)]
    book = RatingBook(Params(), calibrate_every_ms=round(args.calibrate_every * 1000))
    apply = book.apply
    gc.collect()
    gc.freeze()  # the generated events are long-lived; keep the collector off them
    if args.tracemalloc:
        tracemalloc.start()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    load_before = os.getloadavg()[0]
    started, cpu_started = time.perf_counter(), time.process_time()
    for i in range(args.events):
        apply("", ids[attackers[i]], ids[victims[i]], stamps[i])
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    traced_peak = tracemalloc.get_traced_memory()[1] if args.tracemalloc else None
    tracked = len(book)
    figures = {
        "engine": kind,
        "events": args.events,
        "players_tracked": tracked,
        "event_rate_per_s": args.rate,
        "event_time_span_s": round((stamps[-1] - T0) / 1000, 1),
        "seconds": round(elapsed, 3),
        "cpu_seconds": round(cpu, 3),
        "events_per_s": round(args.events / elapsed),
        "events_per_cpu_s": round(args.events / cpu),
        "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "counted": book.counted,
        "duplicates": book.duplicates,
        "rejected": book.rejected,
        "snapshot_active_count": book.snapshot.active_count,
        "peak_rss_growth_bytes": rss_after - rss_before,
        "bytes_per_player_rss": round((rss_after - rss_before) / max(tracked, 1)),
    }
    if traced_peak is not None:
        figures["tracemalloc_peak_bytes"] = traced_peak
        figures["bytes_per_player_tracemalloc"] = round(traced_peak / max(tracked, 1))
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(
                f"{key:>28}: {value:,}" if isinstance(value, int | float) else f"{key:>28}: {value}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
