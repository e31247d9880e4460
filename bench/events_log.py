"""Write a synthetic kill-event log (JSON lines on stdout) for `adr evaluate --events` timings.

    python bench/events_log.py --kills 50000 --players 2000 --days 60 > /tmp/log.jsonl

Hidden skills N(1500, 200); kill times uniform over --days; each kill a random pair, the winner
drawn from Elo's logistic curve on the hidden skills (scale 400). Deterministic (--seed).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DAY_MS = 86_400_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=50_000, help="kills (default %(default)s)")
    parser.add_argument("--players", type=int, default=2_000, help="players (%(default)s)")
    parser.add_argument("--days", type=int, default=60, help="days of event time (%(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (%(default)s)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    skill = rng.normal(1500.0, 200.0, args.players)
    times = np.sort(rng.integers(START_MS, START_MS + args.days * DAY_MS, args.kills))
    first = rng.integers(0, args.players, args.kills)
    second = (first + rng.integers(1, args.players, args.kills)) % args.players
    p_first = 1.0 / (1.0 + 10.0 ** (-(skill[first] - skill[second]) / 400.0))
    first_wins = rng.random(args.kills) < p_first
    out = sys.stdout
    for k in range(args.kills):
        a, b = (first[k], second[k]) if first_wins[k] else (second[k], first[k])
        record = {"id": f"e{k}", "arena": "bench", "attacker": f"p{a}", "victim": f"p{b}",
                  "ts": int(times[k])}  # fmt: skip
        out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
