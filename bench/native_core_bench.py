"""The native rebuild core's own time per step, without Kafka or Redis (docs/native.md): the
decode (`Core.feed`), the count-and-rate (`Core.merge`) and the packing of the records
(`Core.records`) of N kill events already in memory, each timed alone. Prints one JSON object.

Usage: python bench/native_core_bench.py [--events N] [--players N] [--arenas N]
(the core is built in place first if needed: python -m runtime.compiled native)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Any

from runtime import compiled

compiled.activate()

from adr_cli import _rebuild_native  # noqa: E402
from engine import Params  # noqa: E402
from schemas import encode_kill_event, kill_event  # noqa: E402


class _Message:
    """What Core.feed calls on a confluent_kafka Message."""

    __slots__ = ("_key", "_offset", "_value")

    def __init__(self, offset: int, key: bytes, value: bytes) -> None:
        self._offset, self._key, self._value = offset, key, value

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return self._key

    def value(self) -> bytes:
        return self._value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=500_000, help="events (default 500000)")
    ap.add_argument("--players", type=int, default=50_000, help="players (default 50000)")
    ap.add_argument("--arenas", type=int, default=1000, help="arenas (default 1000)")
    args = ap.parse_args()
    core_module: Any = _rebuild_native._core
    if core_module is None:
        raise SystemExit(f"no native core: {_rebuild_native._why}")
    rng = random.Random(1)
    now = time.time_ns() // 1_000_000
    ts = now - 3_600_000
    step = max(1, 3_600_000 // max(1, args.events))
    messages = []
    for i in range(args.events):
        ts += step
        a, b = rng.randrange(args.players), rng.randrange(args.players - 1)
        b += b >= a  # never the attacker
        arena = f"arena-{rng.randrange(args.arenas)}"
        event = kill_event(id=f"ev-{i}", arena=arena, attacker=f"p{a}", victim=f"p{b}", ts=ts)
        messages.append(_Message(i, arena.encode(), encode_kill_event(event)))
    params = Params()
    names = (*_rebuild_native._FLOATS, *_rebuild_native._INTS)
    core = core_module.Core(
        {name: getattr(params, name) for name in names},
        [(q.numerator, q.denominator) for q in params.quantile_ps],
        3_600_000, 300_000, None, -(2**62), 2**62, [len(messages)],
    )  # fmt: skip
    started = time.perf_counter()
    taken = core.feed(messages, 0)
    fed = time.perf_counter()
    core.merge([])
    merged = time.perf_counter()
    commands, cooldowns, event_ids = core.records("{bench}:", -(2**62), 1000)
    packed = time.perf_counter()
    n = len(messages)
    result = core.result()
    print(json.dumps({
        "machine": f"{os.cpu_count()} cores (shared)",
        "events": n, "decoded_by_core": taken, "counted": result["counted"],
        "players": result["players"], "cooldown_records": cooldowns,
        "event_id_records": event_ids, "commands": len(commands),
        "seconds": {"decode": round(fed - started, 3), "count_and_rate": round(merged - fed, 3),
                    "pack_records": round(packed - merged, 3)},
        "us_per_event": {"decode": round(1e6 * (fed - started) / n, 2),
                         "count_and_rate": round(1e6 * (merged - fed) / n, 2),
                         "pack_records": round(1e6 * (packed - merged) / n, 2)},
    }, indent=2))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
