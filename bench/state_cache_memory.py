"""Bytes per player of the consumer's state cache, measured (sizes the consumer's memory).

    python bench/state_cache_memory.py [--players 100000]

Plays a simulated stream through the engine (`RatingBook`) so that the states are realistic
(filled windows, streaks, tiers), stores every player in a `consumer._view.StateCache`, and
reports the memory tracemalloc sees for it divided by the players: ids, states and vers, dict
overhead included. Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from consumer._view import StateCache
from engine import Params, RatingBook
from loadgen import SimConfig, generate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--players", type=int, default=100_000, help="players in the cache")
    ap.add_argument("--events-per-player", type=int, default=12, help="events played per player")
    args = ap.parse_args()
    cfg = SimConfig(players=args.players, events=args.players * args.events_per_player // 2,
                    arenas=max(1, args.players // 100), seed=3, malformed_rate=0.0)  # fmt: skip
    book = RatingBook(Params())
    for msg in generate(cfg):
        if msg.event is not None:
            e = msg.event
            book.apply(e.id, e.attacker, e.victim, e.ts)
    states = book.players()
    # Fresh copies of ids and states, so the measurement holds only what the cache would.
    entries = {(player + " ")[:-1]: (state.__copy__(), 1) for player, state in states.items()}
    del book, states
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cache = StateCache(capacity=len(entries) + 1)
    cache.store(entries)
    entries_bytes = 0
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    # The cache holds the ids and states the entries dict also holds: count them too.
    for player, (state, _ver) in entries.items():
        entries_bytes += sys.getsizeof(player) + sys.getsizeof(state)
        for part in (state.window, state.recent):
            entries_bytes += sys.getsizeof(part) + sum(sys.getsizeof(x) for x in part)
    per_player = (after - before + entries_bytes) / len(cache)
    print(json.dumps({"players": len(cache), "bytes_per_player": round(per_player),
                      "dicts_bytes_per_player": round((after - before) / len(cache)),
                      "objects_bytes_per_player": round(entries_bytes / len(cache))}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
