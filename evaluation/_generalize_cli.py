"""`adr evaluate --generalize`: run the settings study and write report.md and figures.json."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Any

from engine import EngineError
from evaluation._errors import EvaluationError
from evaluation._generalize import (
    ALL_SYSTEMS,
    ENGINE_SYSTEMS,
    SYSTEMS,
    default_settings,
    engine_models_meta,
    run_generalization,
)
from evaluation._generalize_report import render
from evaluation._settings import REPORT_SEEDS

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# --quick: every code path in seconds (CI): two seeds, streams a tenth as long, one year.
QUICK_SEEDS = (1, 2)
QUICK_EVENTS = 1_500
QUICK_LONG_DAYS = 365


def _log(msg: str, level: str = "info", **fields: Any) -> None:
    print(json.dumps({"level": level, "msg": msg, **fields}), file=sys.stderr, flush=True)


def run_generalize(args: argparse.Namespace, started: float) -> int:
    """Run the study as the flags say; exit status like `adr evaluate`."""
    from evaluation.cli import parse_seeds

    try:
        if args.jobs < 1:
            raise EvaluationError("--jobs must be >= 1")
        if args.long_days:
            raise EvaluationError("--generalize runs three-year runs; --long-days does not apply")
        # --profile/--param: one more system, adr-candidate, with exactly these overrides
        candidate: dict[str, str] | None = None
        if args.profile or args.param:
            from engine import Params, profile_overrides
            from evaluation.cli import _overrides

            candidate = {**profile_overrides(args.profile or "paper"), **_overrides(args.param)}
            Params.from_overrides(candidate)
        systems = SYSTEMS
        if args.engine_models:
            if args.systems or args.profile or args.param:
                raise EvaluationError(
                    "--engine-models runs every engine model at its defaults: no --systems, "
                    "--profile or --param"
                )
            systems = ENGINE_SYSTEMS
        if args.systems:
            systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
            unknown = [s for s in systems if s not in ALL_SYSTEMS]
            if unknown or not systems:
                raise EvaluationError(f"unknown systems {unknown}; known: {', '.join(ALL_SYSTEMS)}")
        if candidate is not None:
            systems = (*systems, "adr-candidate")
        if args.settings not in ("held-out", "tuning", "all"):
            raise EvaluationError("--settings: held-out, tuning or all")
        default = QUICK_SEEDS if args.quick else REPORT_SEEDS
        seeds = default if args.seeds is None else parse_seeds(args.seeds)
    except (EvaluationError, EngineError, ValueError) as exc:
        print(f"adr evaluate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    settings = default_settings(args.settings)
    long_days: int | None = None if args.no_long or args.settings == "tuning" else 3 * 365
    if args.quick:
        settings = tuple(dataclasses.replace(s, events=QUICK_EVENTS) for s in settings)
        long_days = long_days and QUICK_LONG_DAYS
    _log("generalization started", seeds=list(seeds), settings=[s.name for s in settings])

    def progress(label: str, done: int, total: int) -> None:
        elapsed = time.perf_counter() - started
        _log("job done", job=label, done=done, total=total, elapsed_s=round(elapsed, 1))

    try:
        figures = run_generalization(
            seeds, settings, systems, args.jobs, progress, long_days, candidate
        )
        figures["meta"]["runtime_s"] = time.perf_counter() - started
        figures["meta"]["jobs"] = args.jobs
        if args.engine_models:
            figures["meta"]["engine_models"] = engine_models_meta()
        figures["meta"]["command"] = (
            "adr evaluate --generalize"
            + (" --quick" if args.quick else "")
            + (f" --seeds {args.seeds}" if args.seeds else "")
            + (f" --settings {args.settings}" if args.settings != "held-out" else "")
            + (" --engine-models" if args.engine_models else "")
            + (f" --systems {args.systems}" if args.systems else "")
            + (" --no-long" if args.no_long else "")
            + (f" --profile {args.profile}" if args.profile else "")
            + "".join(f" --param {p}" for p in args.param)
            + f" --jobs {args.jobs} --out {args.out}"
        )
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "figures.json").write_text(json.dumps(figures, indent=1) + "\n")
        (args.out / "report.md").write_text(render(figures))
    except (EvaluationError, EngineError, OSError) as exc:
        _log("generalization failed", "error", error=str(exc))
        return EXIT_FAILED
    for name in ("report.md", "figures.json"):
        print(args.out / name)
    return EXIT_OK
