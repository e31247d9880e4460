"""The text report of bench/redis_memory.py, and the capacity per primary it derives."""

from __future__ import annotations

import argparse

from consumer.config import Config
from engine import Params

GIB = 1 << 30
MAX_AGE_MS = Config().max_age_ms
"""The consumer's default wall-clock guard (what the benchmark passes to the write)."""
COOLDOWN_KEY_LIFE_S = Params().t_cooldown + Config().lateness_ms / 1000
"""A cooldown key lives until the watermarks are t_cooldown + the lateness past it (event time,
which the steady state runs at the wall clock's pace)."""
HEADROOM = 0.75
"""Share of maxmemory planned for data: the rest is fragmentation, buffers, fork copy-on-write."""
RATES = (0, 1_000, 10_000)
"""Sustained counted events per second for the capacity table."""


def capacity(
    per_player: float, per_cooldown_key: float, maxmemory_gib: float, rate: float
) -> float:
    """Players one primary holds: (HEADROOM·maxmemory − live cooldown keys) / bytes per player.

    Live cooldown keys ≤ counted events in the last t_cooldown + max_age (60 s + 3600 s)."""
    budget = HEADROOM * maxmemory_gib * GIB - rate * COOLDOWN_KEY_LIFE_S * per_cooldown_key
    return max(0.0, budget / per_player)


def report(result: dict[str, object], args: argparse.Namespace) -> str:
    rate = result["rate"]
    assert isinstance(rate, dict)
    compact = result["compact"]
    assert isinstance(compact, dict)
    lines = [
        f"players tracked {result['players_tracked']}, placed {result['players_placed']}; "
        f"build-up {result['build_events']} events ({result['build_counted']} counted), "
        f"batch {args.batch}, arena size {args.arena_size}, "
        f"{result['conflicts']} conflict retries",
        f"used_memory per tracked player: {result['bytes_per_player']:.0f} B "
        f"(hash {result['player_hash_bytes']:.0f} B as {result['player_hash_encoding']}, "
        f"hash-max-listpack-value {result['hash_max_listpack_value']}; "
        f"zsets lb/activity "
        + "/".join(
            f"{v / max(1, int(result['players_tracked'])):.0f}"
            for v in result["zset_bytes"].values()
        )  # type: ignore[union-attr]
        + " B per player)",
    ]
    if compact:
        lines.append(
            f"  with hash-max-listpack-value {compact['hash_max_listpack_value']}: "
            f"{compact['bytes_per_player']:.0f} B per player "
            f"(hash {compact['hash_bytes']:.0f} B as {compact['hash_encoding']})"
        )
    lines += [
        f"per cooldown key: {result['bytes_per_cooldown_key']:.0f} B "
        f"({result['cooldown_keys']} keys)",
        f"outbox: {result['bytes_per_rating_change_in_outbox']:.0f} B per rating change "
        f"({result['outbox_entries']} entries, one per batch, "
        f"{result['bytes_per_outbox_entry'] / 1024:.0f} KiB each)",
        f"one consumer process, read -> rate -> write: {rate['consumer_events_per_s']:.0f} events/s"
        f" (per batch of {rate['batch']}: read {1000 * rate['read_s'] / rate['batches']:.1f}"
        f" ms, engine {1000 * rate['rate_s'] / rate['batches']:.1f} ms, write script "
        f"{1000 * rate['write_s'] / rate['batches']:.1f} ms)",
        f"write script alone: {rate['write_calls_per_s_client']:.1f} calls/s = "
        f"{rate['write_calls_per_s_client'] * rate['batch']:.0f} events/s from one client; "
        f"Redis time in commands (commandstats): {rate['command_usec_per_event']:.1f} us per "
        f"event, of which scripts {rate['script_usec_per_event']:.1f} us",
        f"Redis server CPU: {rate['server_cpu_us_per_event']:.1f} us per event "
        f"-> one primary at 100% of a core: {rate['primary_events_per_s']:.0f} events/s",
        f"largest population per primary (maxmemory x {HEADROOM} for data, "
        f"minus live cooldown keys = rate x {COOLDOWN_KEY_LIFE_S:g} s):",
    ]
    per_cd = float(result["bytes_per_cooldown_key"])  # type: ignore[arg-type]
    layouts = [("default hashes", float(result["bytes_per_player"]))]  # type: ignore[arg-type]
    if compact:
        layouts.append(("listpack 256", float(compact["bytes_per_player"])))
    for gib in args.maxmemory:
        for name, per_player in layouts:
            cells = ", ".join(
                f"{eps:>6} ev/s: {capacity(per_player, per_cd, gib, eps) / 1e6:6.1f} M"
                for eps in RATES
            )
            lines.append(f"  maxmemory {gib:>4g} GiB, {name:<14}: {cells}")
    return "\n".join(lines)
