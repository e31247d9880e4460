"""`adr evaluate`: run the §10 protocol and write DIR/report.md, DIR/figures.json, DIR/*.png.

stdout gets the paths written (data); stderr gets JSON-line logs and progress. Exit codes: 0 done,
2 bad arguments, 1 anything else.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from evaluation._errors import EvaluationError
from evaluation._log_cli import add_log_arguments, run_events
from evaluation._protocol import ProtocolOptions
from evaluation._stream import OUTCOME_MODELS

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# Flags of the synthetic §10 runs that mean nothing with --events (refused there, exit 2).
SYNTHETIC_ONLY = (
    "seeds", "players", "kills", "days", "no_long", "long_days", "systems", "engine_models",
)  # fmt: skip


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
    from engine import PROFILES
    from evaluation._suite import SuiteConfig
    from evaluation._tuning import ALL_SYSTEMS, EXTENSIONS

    d = SuiteConfig()
    parser.epilog = (
        "exit status: 0 report written; 1 a run failed (or --events unreadable); 2 usage"
    )
    parser.add_argument("--out", required=True, type=Path, help="directory for the report")
    parser.add_argument(
        "--seeds",
        default=None,
        help=f"stream seeds: a count N (seeds 1..N) or a list a,b,c (default {len(d.seeds)}; "
        "--quick: 2)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a small run for CI (2 seeds, 30 players, 1,500 kills; seconds, not minutes; "
        "with --events: 200 bootstrap resamples and two plots)",
    )
    parser.add_argument("--players", type=int, default=None, help=f"players ({d.main.players})")
    parser.add_argument(
        "--kills", type=int, default=None, help=f"kills of the synthetic stream ({d.main.events})"
    )
    parser.add_argument("--days", type=int, default=None, help=f"stream length ({d.main.days})")
    parser.add_argument(
        "--outcome-models",
        default=",".join(OUTCOME_MODELS),
        help="generator outcome models to run: logistic (Elo's curve), arctan (ADR's), probit "
        "(per-player performance noise, neither's) (default: %(default)s)",
    )
    parser.add_argument(
        "--no-long",
        action="store_true",
        help="skip the three-year runs",
    )
    parser.add_argument(
        "--long-days",
        type=int,
        default=None,
        help=f"length of the long-horizon runs in days ({d.long.days if d.long else '-'}); "
        "their kills scale with it",
    )
    parser.add_argument(
        "--systems",
        default=None,
        help=f"comma-separated systems to run (known: {','.join(ALL_SYSTEMS)}; default: all but "
        f"the opt-in ADR extensions {', '.join(EXTENSIONS)}; --quick: "
        "the paper's four, adr-no-cooldown, adr-recommended, elo-uscf and the tuned three)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        choices=tuple(PROFILES),
        help="ADR parameter profile (engine/profiles.py) under every ADR system, before --param "
        "(default paper; the extension systems add their own switches on top)",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override an ADR parameter (engine.Params), repeatable",
    )
    parser.add_argument(
        "--generalize",
        action="store_true",
        help="instead of the §10 suite: every system on the named tuning and held-out settings "
        "(evaluation/_settings.py) and the issue-29 targets; takes --seeds, --quick, --jobs, "
        "--out, --systems, --no-long (docs/evaluation.md, 'Streams it was not tuned on')",
    )
    parser.add_argument(
        "--engine-models",
        action="store_true",
        help="with --generalize: run every engine model as a pool runs it (adr and its "
        "profiles recommended and general; elo with fixed, FIDE and USCF K; glicko2; trueskill; "
        "weng-lin) instead of --systems, and add the per-model wins and losses to the report "
        "(docs/evaluation.md, 'Every engine model: where it wins and where it loses')",
    )
    parser.add_argument(
        "--settings",
        default="held-out",
        help="with --generalize: which settings to run, held-out, tuning or all "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes, over seeds and systems (default: CPUs)",
    )
    add_log_arguments(parser)


def parse_seeds(text: str) -> tuple[int, ...]:
    """`--seeds`: "N" means seeds 1..N; "a,b,c" those seeds."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    try:
        values = [int(x) for x in items]
    except ValueError as exc:
        raise EvaluationError(f"--seeds wants a count or a list of integers, got {text!r}") from exc
    if len(values) == 1 and "," not in text:
        if values[0] < 1:
            raise EvaluationError("--seeds count must be >= 1")
        return tuple(range(1, values[0] + 1))
    if not values or len(set(values)) != len(values) or min(values) < 1:
        raise EvaluationError(f"--seeds must be distinct integers >= 1, got {text!r}")
    return tuple(values)


def _overrides(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise EvaluationError(f"--param wants NAME=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out


def _suite(args: argparse.Namespace) -> Any:
    from evaluation._suite import QUICK, SuiteConfig
    from evaluation._tuning import ALL_SYSTEMS

    base = QUICK if args.quick else SuiteConfig()
    seeds = base.seeds if args.seeds is None else parse_seeds(args.seeds)
    chosen = args.systems if args.systems is not None else ",".join(base.systems)
    systems = tuple(s.strip() for s in chosen.split(",") if s.strip())
    unknown = [s for s in systems if s not in ALL_SYSTEMS]
    if unknown or not systems:
        raise EvaluationError(f"unknown systems {unknown}; known: {', '.join(ALL_SYSTEMS)}")
    models = tuple(m.strip() for m in args.outcome_models.split(",") if m.strip())
    if not models or any(m not in OUTCOME_MODELS for m in models):
        raise EvaluationError(f"--outcome-models: choose from {', '.join(OUTCOME_MODELS)}")
    main = base.main
    for name, field in (("players", "players"), ("kills", "events"), ("days", "days")):
        if getattr(args, name) is not None:
            main = dataclasses.replace(main, **{field: getattr(args, name)})
    long = None if args.no_long else base.long
    if long is not None and args.long_days is not None:
        if args.long_days < 1:
            raise EvaluationError("--long-days must be >= 1")
        events = round(long.events * args.long_days / long.days)
        long = dataclasses.replace(long, days=args.long_days, events=events)
    suite = dataclasses.replace(
        base, seeds=seeds, systems=systems, models=models, main=main, long=long
    )
    try:
        suite.validate()
    except ValueError as exc:
        raise EvaluationError(str(exc)) from exc
    return suite


def run(args: argparse.Namespace) -> int:
    """Run the suite and write the report."""
    from engine import EngineError, Params, profile_overrides
    from evaluation._report import write_report
    from evaluation._suite import run_suite

    if args.events is not None:
        if str(args.events).isdigit() and not args.events.exists():
            print(
                f"adr evaluate: --events takes a FILE of kill events (no file {args.events!s}); "
                "the synthetic stream's kill count is --kills N",
                file=sys.stderr,
            )
            return EXIT_USAGE
        synthetic = [f"--{n.replace('_', '-')}" for n in SYNTHETIC_ONLY if getattr(args, n)]
        if synthetic:
            print(
                f"adr evaluate: {', '.join(synthetic)} set(s) the synthetic streams, not "
                "--events (choose models with --models)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        return run_events(args, _log)
    started = time.perf_counter()
    if args.generalize:
        from evaluation._generalize_cli import run_generalize

        return run_generalize(args, started)
    if args.engine_models:
        print("adr evaluate: --engine-models goes with --generalize", file=sys.stderr)
        return EXIT_USAGE
    try:
        overrides = {**profile_overrides(args.profile or "paper"), **_overrides(args.param)}
        Params.from_overrides(overrides)
        if args.jobs < 1:
            raise EvaluationError("--jobs must be >= 1")
        suite = _suite(args)
    except (EvaluationError, EngineError) as exc:
        _log("bad arguments", "error", error=str(exc))
        print(f"adr evaluate: {exc}", file=sys.stderr)
        return EXIT_USAGE

    _log(
        "evaluation started",
        seeds=list(suite.seeds),
        players=suite.main.players,
        events=suite.main.events,
        models=list(suite.models),
        systems=list(suite.systems),
        jobs=args.jobs,
    )

    def progress(label: str, done: int, total: int) -> None:
        elapsed = time.perf_counter() - started
        _log(
            "job done",
            job=label,
            done=done,
            total=total,
            elapsed_s=round(elapsed, 1),
            eta_s=round(elapsed / done * (total - done), 0),
        )

    try:
        figures = run_suite(suite, ProtocolOptions(), overrides, args.jobs, progress)
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
        *(["--quick"] if args.quick else []),
        *([f"--seeds {args.seeds}"] if args.seeds else []),
        *(f"--{n} {getattr(args, n)}" for n in ("players", "kills", "days") if getattr(args, n)),
        f"--outcome-models {args.outcome_models}",
        *(["--no-long"] if args.no_long else []),
        *([f"--long-days {args.long_days}"] if args.long_days else []),
        *([f"--systems {args.systems}"] if args.systems else []),
        *([f"--profile {args.profile}"] if args.profile else []),
        *(f"--param {shlex.quote(p)}" for p in args.param),
        f"--jobs {args.jobs}",
        f"--out {shlex.quote(str(args.out))}",
    ]
    return " ".join(parts)
