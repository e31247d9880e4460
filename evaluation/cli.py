"""`adr evaluate`: run the §10 protocol and write DIR/report.md, DIR/figures.json, DIR/*.png.

stdout gets the paths written (data); stderr gets JSON-line logs and progress. Exit codes: 0 done,
2 bad arguments, 1 anything else.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from evaluation.errors import EvaluationError
from evaluation.protocol import ProtocolOptions
from evaluation.stream import StreamConfig

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _log(msg: str, level: str = "info", **fields: Any) -> None:
    record = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "level": level,
        "logger": "adr.evaluate",
        "msg": msg,
        **fields,
    }
    print(json.dumps(record, default=str), file=sys.stderr, flush=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `adr evaluate` flags."""
    from evaluation.suite import SYSTEMS

    d = StreamConfig()
    parser.epilog = "exit status: 0 report written; 1 a run failed; 2 usage"
    parser.add_argument("--out", required=True, type=Path, help="directory for the report")
    parser.add_argument("--seed", type=int, default=d.seed, help=f"stream seed ({d.seed})")
    parser.add_argument(
        "--players", type=int, default=d.players, help=f"simulated players ({d.players})"
    )
    parser.add_argument("--events", type=int, default=d.events, help=f"organic kills ({d.events})")
    parser.add_argument("--days", type=int, default=d.days, help=f"stream length ({d.days})")
    parser.add_argument(
        "--outcome-model",
        choices=("logistic", "arctan"),
        default=d.outcome_model,
        help="hidden-skill outcome curve of the generator (logistic = Elo's)",
    )
    parser.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help="comma-separated systems to run (default: all: %(default)s)",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override an ADR parameter (engine.Params), repeatable",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="worker processes (default: min(2, CPUs))",
    )


def _overrides(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise EvaluationError(f"--param wants NAME=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out


def run(args: argparse.Namespace) -> int:
    """Run the suite and write the report."""
    from engine import EngineError, Params
    from evaluation.report import write_report
    from evaluation.suite import SYSTEMS, run_suite

    started = time.perf_counter()
    try:
        overrides = _overrides(args.param)
        Params.from_overrides(overrides)
        systems = [s.strip() for s in args.systems.split(",") if s.strip()]
        unknown = [s for s in systems if s not in SYSTEMS]
        if unknown or not systems:
            raise EvaluationError(f"unknown systems {unknown}; known: {', '.join(SYSTEMS)}")
        if args.jobs < 1:
            raise EvaluationError("--jobs must be >= 1")
        cfg = StreamConfig(
            seed=args.seed,
            players=args.players,
            events=args.events,
            days=args.days,
            outcome_model=args.outcome_model,
        )
        cfg.validate()
    except (EvaluationError, EngineError) as exc:
        _log("bad arguments", "error", error=str(exc))
        print(f"adr evaluate: {exc}", file=sys.stderr)
        return EXIT_USAGE

    _log(
        "evaluation started",
        seed=cfg.seed,
        players=cfg.players,
        events=cfg.events,
        systems=systems,
        jobs=args.jobs,
    )

    def progress(name: str, done: int, total: int) -> None:
        _log(
            "system done",
            system=name,
            done=done,
            total=total,
            elapsed_s=round(time.perf_counter() - started, 1),
        )

    try:
        figures = run_suite(cfg, ProtocolOptions(), overrides, systems, args.jobs, progress)
        figures["meta"]["command"] = _command(args)
        figures["meta"]["runtime_s"] = time.perf_counter() - started
        figures["meta"]["jobs"] = args.jobs
        paths = write_report(figures, args.out)
    except (EvaluationError, EngineError, OSError) as exc:
        _log("evaluation failed", "error", error=str(exc))
        return EXIT_FAILED
    for path in paths:
        print(path)
    _log("evaluation written", out=str(args.out), runtime_s=round(time.perf_counter() - started, 1))
    return EXIT_OK


def _command(args: argparse.Namespace) -> str:
    """The equivalent command line, for the report (when not run from the `adr` entry point)."""
    parts = [
        "adr evaluate",
        f"--seed {args.seed}",
        f"--players {args.players}",
        f"--events {args.events}",
        f"--days {args.days}",
        f"--outcome-model {args.outcome_model}",
        f"--systems {args.systems}",
        *(f"--param {shlex.quote(p)}" for p in args.param),
        f"--out {shlex.quote(str(args.out))}",
    ]
    return " ".join(parts)
