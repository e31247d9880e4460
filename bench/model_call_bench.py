"""The cost of the RatingModel seam on ADR's hot path: `AdrModel.rate` against `rate_kill`.

    .venv/compiled/bin/python bench/model_call_bench.py            # the compiled build
    .venv/compiled/bin/python bench/model_call_bench.py --json
    .venv/compiled/bin/python bench/model_call_bench.py --callgrind  # instructions per call

Builds a fixed sequence of kills among `--players` players (seeded), with the states, S and P each
kill meets (a consumer-style replay through `rate_kill`), then times rating each of them again,
the same inputs every time: directly with `engine.rate_kill`, and through the seam with
`AdrModel.rate` called on a value typed as the `RatingModel` Protocol (as a pipeline written
against the seam would call it). The two alternate, `--rounds` times each; the figure is the
median of the rounds' ns per kill, with the rounds' spread. The other models' `rate` through the
seam are timed too (ns per kill), for reference. The cyclic GC is off while timing.

`--callgrind` counts instructions instead (valgrind's callgrind collecting only inside
AdrModel.rate's Python entry, the GC off, `--kills` kills, 4,000 by default; callgrind_annotate's
inclusive counts per call): `rate_kill_native` is rate_kill's native body (CPyDef, what compiled
code such as rate_batch runs when it calls rate_kill), `adr_model_native` AdrModel.rate's native
body around it (what a compiled caller holding an `AdrModel` runs), `adr_model_entry` the same
through its Python entry (CPyPy, argument parsing too: what an interpreted caller runs, and a
compiled caller holding the `RatingModel` Protocol type, plus the method lookup it does before).
`seam_native` and `seam_entry` are the last two less the first.

Run it with the compiled build's python (runtime/compiled.py; `build` in the output says which
one ran): the consumer runs compiled.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

T0 = 1_700_000_000_000


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kills", type=int, default=None, help="50,000 (--callgrind: 4,000)")
    parser.add_argument("--players", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--callgrind", action="store_true", help="instructions per call instead")
    parser.add_argument("--phase", choices=("none", "model", "direct"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.kills is None:
        args.kills = 4_000 if args.callgrind or args.phase else 50_000
    return args


SYMBOLS = {
    "adr_model_entry": "CPyPy__adr_model___AdrModel___rate",
    "adr_model_native": "CPyDef__adr_model___AdrModel___rate",
    "rate_kill_native": "CPyDef__kill___rate_kill",
}
"""mypyc's C functions: AdrModel.rate's Python entry (argument parsing, then the native body),
its native body, and rate_kill's native body, which that body calls."""


def _inputs(args: argparse.Namespace) -> tuple[list[tuple[Any, Any, int, int, int]], int]:
    """The kills (a, b, ts, S, P) and the players they involve: a replay through rate_kill."""
    from engine import Params, initial_snapshot, new_player, rate_kill, sigma_units

    params = Params()
    snapshot = initial_snapshot(params)
    rng = random.Random(args.seed)
    players = [f"p{i}" for i in range(args.players)]
    states: dict[str, Any] = {}
    units = 0
    inputs: list[tuple[Any, Any, int, int, int]] = []
    ts = T0
    for _ in range(args.kills):
        ts += rng.choice((0, 250, 1_000, 60_000))
        a, b = rng.sample(players, 2)
        for p in (a, b):
            if p not in states:
                states[p] = new_player(params)
                units += sigma_units(params.sigma0, params)
        inputs.append((states[a], states[b], ts, units, len(states)))
        out = rate_kill(states[a], states[b], ts, units, len(states), snapshot, params)
        states[a], states[b] = out.attacker, out.victim
        units += out.sigma_units_delta
    return inputs, len(states)


def _phase(args: argparse.Namespace) -> None:
    """One callgrind run's work: build the inputs, then rate them one way (or not at all)."""
    from engine import Params, initial_snapshot, model_named, rate_kill

    gc.disable()
    params = Params()
    snapshot = initial_snapshot(params)
    model = model_named("adr", params=params)
    inputs, _players = _inputs(args)
    if args.phase == "model":
        for a, b, t, s, count in inputs:
            model.rate(a, b, t, s, count, snapshot)
    elif args.phase == "direct":
        for a, b, t, s, count in inputs:
            rate_kill(a, b, t, s, count, snapshot, params)


def callgrind(args: argparse.Namespace, build: str) -> dict[str, Any]:
    """Instructions per call, inclusive, of each SYMBOLS function: one valgrind run collecting
    inside AdrModel.rate's entry only (the model phase), read with callgrind_annotate."""
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "callgrind.out")
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={target}",
             f"--toggle-collect={SYMBOLS['adr_model_entry']}", sys.executable,
             os.path.abspath(__file__), "--phase", "model", "--kills", str(args.kills),
             "--players", str(args.players), "--seed", str(args.seed)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        annotated = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", target],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
    per_call: dict[str, float] = {}
    for key, symbol in SYMBOLS.items():
        found = re.search(rf"^\s*([\d,]+) \([\d.]+%\)\s+\S*:{symbol} ", annotated, re.M)
        assert found is not None, f"{symbol} not in the callgrind output"
        per_call[key] = round(int(found.group(1).replace(",", "")) / args.kills, 1)
    native, entry = per_call["adr_model_native"], per_call["adr_model_entry"]
    core = per_call["rate_kill_native"]
    return {
        "build": build,
        "kills": args.kills,
        "instructions_per_call": per_call,
        "seam_native": round(native - core, 1),
        "seam_entry": round(entry - core, 1),
    }


def main() -> None:
    args = _args()
    from runtime import compiled

    build = compiled.activate()
    if args.phase is not None:
        _phase(args)
        return
    if args.callgrind:
        if build != "compiled":
            sys.exit(f"--callgrind counts mypyc's C functions: no compiled build ({build})")
        print(json.dumps(callgrind(args, build)))
        return
    from engine import MODELS, Params, RatingModel, initial_snapshot, model_named, rate_kill

    params = Params()
    snapshot = initial_snapshot(params)
    inputs, players = _inputs(args)

    def direct() -> float:
        started = time.perf_counter_ns()
        for a, b, t, s, count in inputs:
            rate_kill(a, b, t, s, count, snapshot, params)
        return (time.perf_counter_ns() - started) / len(inputs)

    def seam(model: RatingModel[Any], kills: list[tuple[Any, Any, int, int, int]]) -> float:
        started = time.perf_counter_ns()
        for a, b, t, s, count in kills:
            model.rate(a, b, t, s, count, snapshot)
        return (time.perf_counter_ns() - started) / len(kills)

    adr: RatingModel[Any] = model_named("adr", params=params)
    gc.disable()
    direct_ns: list[float] = []
    seam_ns: list[float] = []
    for _ in range(args.rounds):  # alternated, so that a busy moment of the machine hits both
        direct_ns.append(direct())
        seam_ns.append(seam(adr, inputs))
    others: dict[str, float] = {}
    for name in MODELS[1:]:
        model = model_named(name)
        fresh = [model.new_player() for _ in range(2)]
        kills = [(fresh[0], fresh[1], t, 0, 2) for _a, _b, t, _s, _c in inputs[:10_000]]
        others[name] = statistics.median(seam(model, kills) for _ in range(3))
    gc.enable()
    result = {
        "build": build,
        "kills": len(inputs),
        "players": players,
        "rounds": args.rounds,
        "rate_kill_ns": round(statistics.median(direct_ns), 1),
        "rate_kill_ns_range": [round(min(direct_ns), 1), round(max(direct_ns), 1)],
        "adr_model_rate_ns": round(statistics.median(seam_ns), 1),
        "adr_model_rate_ns_range": [round(min(seam_ns), 1), round(max(seam_ns), 1)],
        "seam_ratio": round(statistics.median(seam_ns) / statistics.median(direct_ns), 4),
        "other_models_rate_ns": {k: round(v, 1) for k, v in others.items()},
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
