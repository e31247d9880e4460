# ruff: noqa: E402  (ADR_COMPILED=0 must take effect before the imports below)
"""The consumer's rating path without Kafka or Redis, for repeatable CPU figures (issue #20).

    python bench/rate_batch_instructions.py                 # wall and CPU µs per event
    python bench/rate_batch_instructions.py --callgrind     # + instructions per event (valgrind)
    python bench/rate_batch_instructions.py --callgrind rate  # rate_batch's only

Builds a fixed backlog with the load generator (loadgen.SimConfig, seeded as
bench/consumer_bench.py does; a share of the messages re-sent verbatim, as a producer's retry
does, so that the event-id check compares content digests), cuts it into batches of
`--batch` messages over `--partitions` partitions and runs, per batch, what the pipeline's
thread runs between its Kafka read and its Redis write: `decode_messages` (the decode stage),
`batch_reads`, then `rate_batch` (the `dedup_and_rating` and `hash_values` stages,
consumer/_stages.py) on a `View` built from what the previous batches' plans left, as Redis and
the state cache would hold it (the first batches meet cold players, later ones warm ones), and
a fixed snapshot with tier boundaries around μ0 (so that tiers, their labels in the rating
changes and the tier counts change; `--no-tiers`: nobody is placed, as in the bench).

Prints one JSON object: µs per event of CPU (time.process_time) and wall time per stage, the
instructions per event (`--callgrind`: valgrind's callgrind counts only inside the compiled
`rate_batch`, resp. `decode_messages`, with --toggle-collect; the pure build has no such symbol),
and `output_sha256`, a digest of every byte and float the plans hold (hash values, rating-change
records, event ids, cooldowns, tier counts, σ limbs): two builds that agree on it wrote the same.

Run it with the compiled build's python (runtime/compiled.py; `build` in the output says which
one ran). The cyclic GC is off by default (`--gc` turns it on): collections would move
instructions between runs for reasons other than the code measured. PYTHONHASHSEED is pinned
(the script re-runs itself with PYTHONHASHSEED=0 if it is not set) so that string hashes, and
so dict probing, repeat.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zlib
from typing import Any

from runtime import compiled

BUILD = compiled.activate()  # first, as `adr` does: ADR_COMPILED=0 before the imports below

import msgspec

from consumer._batch import Plan, View, rate_batch
from consumer._intake import Accepted, batch_reads, decode_messages, next_offsets
from consumer._stages import HASH_VALUES, RATE, StageClock
from engine import Params, PlayerState, SeasonSchedule, SeasonStart, initial_snapshot
from loadgen import SimConfig, generate
from redis_layout import Keys
from schemas import Limits

HOUR_MS = 3_600_000
START_TS = 1_790_000_000_000
"""A fixed event time (2026-09): the backlog, and so every output byte, does not depend on the
clock; `decode_messages` is handed a `now` one hour after the first event."""
COLLECT = {"rate": "CPyDef__batch___rate_batch", "decode": "CPyDef__intake___decode_messages"}
"""The compiled functions whose instructions --callgrind counts (mypyc's C names)."""


class Message:
    """What decode_messages reads of a confluent_kafka.Message."""

    __slots__ = ("_key", "_offset", "_partition", "_value")

    def __init__(self, value: bytes, key: bytes | None, partition: int, offset: int) -> None:
        self._value, self._key, self._partition, self._offset = value, key, partition, offset

    def value(self) -> bytes:
        return self._value

    def key(self) -> bytes | None:
        return self._key

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset


def backlog(args: argparse.Namespace) -> list[list[Message]]:
    """The generator's messages in batches; every `--resend-every`th message is sent again
    (same bytes) 100 messages later, as a producer's retry would."""
    cfg = SimConfig(
        arenas=args.arenas,
        players=args.players,
        events=args.events,
        seed=args.seed,
        start_ts=START_TS,
        spacing_ms=HOUR_MS / args.events,
        duplicate_rate=0.05,
    )
    values: list[tuple[bytes, bytes | None]] = []
    pending: dict[int, tuple[bytes, bytes | None]] = {}
    for i, msg in enumerate(generate(cfg)):
        values.append((msg.value, msg.key))
        if args.resend_every and i % args.resend_every == 0:
            pending[i + 100] = (msg.value, msg.key)
        if i in pending:
            values.append(pending.pop(i))
    next_offset = [0] * args.partitions
    messages = []
    for value, key in values:
        partition = zlib.crc32(key or b"") % args.partitions
        messages.append(Message(value, key, partition, next_offset[partition]))
        next_offset[partition] += 1
    return [messages[i : i + args.batch] for i in range(0, len(messages), args.batch)]


class Stored:
    """What Redis (and the state cache) hold after the batches so far: the View's source."""

    def __init__(self, params: Params, tiers: bool, seasons: int = 0) -> None:
        self.seasons = SeasonSchedule(
            tuple(
                SeasonStart(f"s{j}", START_TS + HOUR_MS * j // (seasons + 1), params.mu0)
                for j in range(1, seasons + 1)
            ),
            version=seasons,
        )
        """`--seasons`: that many season starts spread over the backlog's hour of event time."""
        self.ladder = 0
        self.players: dict[str, tuple[PlayerState, int]] = {}
        self.cooldowns: dict[str, int] = {}
        self.ids: dict[str, bytes] = {}
        self.sigma_units_total = 0
        self.player_count = 0
        self.offsets: dict[int, int] = {}
        self.watermarks: dict[int, int] = {}
        self.snapshot = initial_snapshot(params)
        if tiers:  # boundaries 40 apart around μ0, so that players are placed and move
            boundaries = tuple(params.mu0 + 40.0 * (6.5 - k) for k in range(14))
            self.snapshot = msgspec.structs.replace(self.snapshot, boundaries=boundaries)

    def view(self, accepted: list[Accepted], keys: Keys) -> View:
        players, pairs, ids = batch_reads(accepted, keys)
        partitions = sorted({a.partition for a in accepted})
        view = View(
            {p: self.players.get(p, (None, 0)) for p in players},
            {k: self.cooldowns.get(k) for k in pairs},
            self.sigma_units_total,
            self.player_count,
            {p: self.offsets.get(p) for p in partitions},
            self.snapshot,
        )
        view.watermarks = {p: self.watermarks.get(p) for p in partitions}
        view.event_ids = {k: self.ids.get(k) for k in ids}
        if self.seasons.starts:
            view.seasons, view.season_version, view.ladder = (
                self.seasons,
                self.seasons.version,
                self.ladder,
            )
        return view

    def write(self, plan: Plan) -> None:
        for player, (state, ver) in plan.states.items():
            self.players[player] = (state, ver)
        self.cooldowns.update(plan.cooldowns)
        self.ids.update((key, digest) for key, digest, _ in plan.event_ids)
        self.sigma_units_total += (plan.sigma_hi_delta << 32) + plan.sigma_lo_delta
        self.player_count = plan.player_count
        self.offsets.update(plan.offsets)
        self.watermarks.update(plan.watermarks)
        self.ladder = plan.season[2]


def fingerprint(digest: Any, plan: Plan) -> None:
    """Feed every output of `plan` into `digest` (msgpack: floats as float64, bit-exact)."""
    digest.update(
        msgspec.msgpack.encode(
            [
                plan.players,
                plan.outbox,
                plan.event_ids,
                plan.cooldowns,
                sorted(plan.tier_counts.items()),
                plan.count_delta,
                plan.sigma_hi_delta,
                plan.sigma_lo_delta,
                plan.watermarks,
                plan.offsets,
                [(p, v, msgspec.structs.astuple(s)) for p, (s, v) in plan.states.items()],
                (plan.counted, plan.duplicates, plan.late, plan.already_applied),
                [(a.partition, a.offset, why) for a, why in plan.rejected],
            ]
        )
    )
    if plan.season[2]:  # --seasons (the default's digest stays the one recorded before them)
        digest.update(msgspec.msgpack.encode([plan.season, plan.unranked]))


def run(args: argparse.Namespace) -> dict[str, Any]:
    params = Params()
    keys = Keys("bench")
    batches = backlog(args)
    limits = Limits(max_age_ms=4 * HOUR_MS)
    now_ms = START_TS + HOUR_MS
    stored = Stored(params, not args.no_tiers, args.seasons)
    clock = StageClock()
    digest = hashlib.sha256()
    events = counted = 0
    cpu = {"decode": 0.0, "rate_batch": 0.0}
    wall = dict(cpu)
    if not args.gc:
        gc.disable()
    for messages in batches:
        c0, w0 = time.process_time(), time.perf_counter()
        decoded = decode_messages(messages, now_ms, limits)
        c1, w1 = time.process_time(), time.perf_counter()
        view = stored.view(decoded.accepted, keys)
        c2, w2 = time.process_time(), time.perf_counter()
        plan = rate_batch(
            decoded.accepted, next_offsets(messages), view, keys, params, stages=clock
        )
        c3, w3 = time.process_time(), time.perf_counter()
        cpu["decode"] += c1 - c0
        wall["decode"] += w1 - w0
        cpu["rate_batch"] += c3 - c2
        wall["rate_batch"] += w3 - w2
        events += len(messages)
        counted += plan.counted
        fingerprint(digest, plan)
        stored.write(plan)
    per_event = 1e6 / events
    return {
        "build": BUILD,
        "events": events,
        "batches": len(batches),
        "counted": counted,
        "players_stored": len(stored.players),
        "cpu_us_per_event": {k: round(v * per_event, 3) for k, v in cpu.items()}
        | {stage: round(clock.seconds[stage] * per_event, 3) for stage in (RATE, HASH_VALUES)},
        "wall_us_per_event": {k: round(v * per_event, 3) for k, v in wall.items()},
        "output_sha256": digest.hexdigest(),
    }


def callgrind(argv: list[str], events: int, names: list[str]) -> dict[str, float]:
    """Instructions per event inside each named COLLECT function, one valgrind run each."""
    out = {}
    for name in names:
        symbol = COLLECT[name]
        with tempfile.TemporaryDirectory() as tmp:
            target = os.path.join(tmp, "callgrind.out")
            subprocess.run(
                [
                    "valgrind",
                    "--tool=callgrind",
                    f"--callgrind-out-file={target}",
                    f"--toggle-collect={symbol}",
                    sys.executable,
                    os.path.abspath(__file__),
                    *argv,
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            with open(target) as handle:
                totals = re.search(r"^(?:summary|totals): (\d+)", handle.read(), re.M)
            assert totals is not None, "no totals in the callgrind output"
            out[name] = round(int(totals.group(1)) / events)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=40_000, help="generated messages")
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--arenas", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--batch", type=int, default=1_000, help="messages per batch")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--resend-every", type=int, default=50, help="re-send every Nth message (0: none)"
    )
    parser.add_argument(
        "--no-tiers",
        action="store_true",
        help="the initial snapshot (no boundaries: nobody is placed) instead of fixed boundaries",
    )
    parser.add_argument("--gc", action="store_true", help="leave the cyclic GC on")
    parser.add_argument(
        "--seasons",
        type=int,
        default=0,
        help="season starts spread over the backlog's event time (each player's soft reset at "
        "its first event of each; default 0: none)",
    )
    parser.add_argument(
        "--callgrind",
        nargs="*",
        choices=sorted(COLLECT),
        help="also count instructions per event under valgrind in the functions named (none "
        "named: both), one more run each (a few minutes each)",
    )
    args = parser.parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]], env)
    result = run(args)
    if args.callgrind is not None:
        plain = [
            a
            for a in (argv if argv is not None else sys.argv[1:])
            if not a.startswith("--callgrind")
        ]
        plain = [a for a in plain if a not in COLLECT]
        names = args.callgrind or sorted(COLLECT)
        result["instructions_per_event"] = callgrind(plain, result["events"], names)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
