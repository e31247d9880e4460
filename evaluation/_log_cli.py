"""`adr evaluate --events FILE`: every model on a studio's own kill log, the held-out figures with
day-bootstrap intervals, and a recommendation (docs/evaluation.md, "Choosing a model on your own
events").

Models: every engine model (engine.MODELS, `adr consume --model`), by name; `NAME@PROFILE` runs
it with a named ADR profile (engine/profiles.py); `eval:NAME` runs one of the §10 suite's
independent baselines (evaluation/_tuning.py's SYSTEMS). By default every engine model, `adr`
also with `--profile recommended`, and the suite's Elo K 32, Glicko-2 and TrueSkill for each of
those families the engine does not have yet.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Final

from engine import MODELS, Params, model_named, profile_overrides
from evaluation._errors import EvaluationError
from evaluation._event_log import read_log
from evaluation._log_harness import HarnessOptions, run_log
from evaluation._log_metrics import BootstrapOptions, summarize
from evaluation._log_report import summary_lines, write_log_report
from evaluation._model_system import ModelSystem
from evaluation._systems import RatingSystem

EVAL_PREFIX: Final = "eval:"
# Families the §10 suite has an independent baseline for: used while the engine lacks them.
BASELINE_FOR: Final = {"elo": "elo-k32", "glicko2": "glicko2", "trueskill": "trueskill"}
QUICK_RESAMPLES: Final = 200
FULL_RESAMPLES: Final = 2000
DEFAULT_CALIBRATE_EVERY_S: Final = 300.0  # adr replay's default snapshot interval


def default_models() -> list[str]:
    names = list(MODELS)
    if "adr" in MODELS:
        names.insert(names.index("adr") + 1, "adr@recommended")
    names += [EVAL_PREFIX + base for fam, base in BASELINE_FOR.items() if fam not in MODELS]
    return names


def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags only `--events` reads (--out, --quick, --profile and --param are shared)."""
    g = parser.add_argument_group("on your own events (--events FILE)")
    g.add_argument("--events", type=Path, default=None, metavar="FILE",
                   help="evaluate on this kill-event log (JSON lines or msgpack, what adr "
                   "replay reads; - for stdin) instead of the synthetic streams")  # fmt: skip
    g.add_argument("--format", choices=("auto", "jsonl", "msgpack"), default="auto",
                   help="the log's format (default: from the first byte)")  # fmt: skip
    g.add_argument("--models", default=None,
                   help="comma-separated: engine models (NAME or NAME@PROFILE) and suite "
                   f"baselines (eval:NAME); default: {','.join(default_models())}")  # fmt: skip
    g.add_argument("--holdout", type=float, default=0.2,
                   help="the last share of the log's time span held out and scored "
                   "(default %(default)s)")  # fmt: skip
    g.add_argument("--order", choices=("time", "file"), default="time",
                   help="time: sort by ts (stable); file: as written, so the lateness rule "
                   "applies as in the consumer (default %(default)s)")  # fmt: skip
    g.add_argument("--lateness", type=float, default=3600.0, metavar="SECONDS",
                   help="reject events older than the watermark by more than this "
                   "(the consumer's and adr replay's default, %(default)s)")  # fmt: skip
    g.add_argument("--calibrate-every", type=float, default=DEFAULT_CALIBRATE_EVERY_S,
                   metavar="SECONDS", help="engine models' snapshot interval in event time "
                   "(adr replay's default, %(default)s)")  # fmt: skip
    g.add_argument("--repeat-gap", type=float, default=600.0, metavar="SECONDS",
                   help="a kill of the same victim within this of the last continues a "
                   "repeat-pair run (default %(default)s)")  # fmt: skip
    g.add_argument("--repeat-min", type=int, default=5,
                   help="kills that make a repeat-pair run (default %(default)s)")  # fmt: skip
    g.add_argument("--resamples", type=int, default=None,
                   help=f"day-bootstrap resamples (default {FULL_RESAMPLES}; --quick "
                   f"{QUICK_RESAMPLES})")  # fmt: skip
    g.add_argument("--bootstrap-seed", type=int, default=0,
                   help="the bootstrap's seed (default %(default)s)")  # fmt: skip
    g.add_argument("--current", default=None,
                   help="the pool's model now: kept when the figures show no clear winner "
                   "(default adr when it runs)")  # fmt: skip
    g.add_argument("--model-param", dest="model_param", action="append", default=[],
                   metavar="MODEL.NAME=VALUE",
                   help="a parameter of one engine model other than adr (its config's names, "
                   "docs/models.md; e.g. elo.k=16), repeatable; adr's are --param")  # fmt: skip


def _seconds_ms(value: float, flag: str) -> int:
    if not value >= 0 or value == float("inf"):
        raise EvaluationError(f"{flag} must be a finite number of seconds >= 0")
    return round(value * 1000)


def model_params(items: list[str]) -> dict[str, dict[str, str]]:
    """`--model-param MODEL.NAME=VALUE` items as {model: {name: value}}."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        model, dot, name = key.strip().partition(".")
        if not sep or not dot or not model or not name:
            raise EvaluationError(f"--model-param wants MODEL.NAME=VALUE, got {item!r}")
        if model == "adr":
            raise EvaluationError("adr's parameters are --param names, not --model-param")
        if model not in MODELS:
            raise EvaluationError(f"--model-param: unknown model {model!r}")
        out.setdefault(model, {})[name] = value.strip()
    return out


def build_models(
    names: list[str],
    pool: Params,
    base: dict[str, str],
    every_ms: int,
    lateness_ms: int,
    per_model: dict[str, dict[str, str]] | None = None,
) -> tuple[list[RatingSystem], dict[str, str]]:
    """The systems to run and a description of each (for the report)."""
    from evaluation._tuning import SYSTEMS

    systems: list[RatingSystem] = []
    described: dict[str, str] = {}
    for name in names:
        if name in described:
            raise EvaluationError(f"--models names {name!r} twice")
        if name.startswith(EVAL_PREFIX):
            suite = name[len(EVAL_PREFIX) :]
            if suite not in SYSTEMS:
                raise EvaluationError(
                    f"unknown suite baseline {suite!r}; known: {', '.join(SYSTEMS)}"
                )
            system = SYSTEMS[suite][1](pool)
            system.name = name
            systems.append(system)
            described[name] = f"{SYSTEMS[suite][0]} (the §10 suite's independent baseline)"
            continue
        model, _, profile = name.partition("@")
        if model not in MODELS:
            raise EvaluationError(f"unknown model {model!r}; engine models: {', '.join(MODELS)}")
        params = pool
        if profile:
            if model != "adr":
                raise EvaluationError(f"{name}: a profile (@) is ADR's; use --model-param")
            params = Params.from_overrides({**profile_overrides(profile), **base})
        given = (per_model or {}).get(model, {})
        engine_model = model_named(model, given, params=params)
        systems.append(ModelSystem(engine_model, params, every_ms, name, lateness_ms))
        settings = ", ".join(f"{k} = {v}" for k, v in given.items())
        if model == "adr":
            settings = f"profile {profile}" if profile else "the pool's parameters"
        described[name] = f"engine model `{model}` ({settings or 'its defaults'})"
    return systems, described


def run_events(args: argparse.Namespace, log: Any) -> int:
    """Exit status: 0 written, 1 the file could not be read or the run failed, 2 usage."""
    from engine import EngineError
    from runtime.params import param_overrides

    started = time.perf_counter()
    try:
        overrides = param_overrides(args.param, profile=args.profile)
        pool = Params.from_overrides(overrides)
        base = param_overrides(args.param)
        names = [
            n.strip() for n in (args.models or ",".join(default_models())).split(",") if n.strip()
        ]
        if not names:
            raise EvaluationError("--models names no model")
        opts = HarnessOptions(
            holdout=args.holdout, order=args.order,
            lateness_ms=_seconds_ms(args.lateness, "--lateness"),
            repeat_gap_ms=_seconds_ms(args.repeat_gap, "--repeat-gap"),
            repeat_min_kills=args.repeat_min,
        )  # fmt: skip
        opts.validate()
        every_ms = _seconds_ms(args.calibrate_every, "--calibrate-every")
        resamples = args.resamples or (QUICK_RESAMPLES if args.quick else FULL_RESAMPLES)
        if resamples < 1:
            raise EvaluationError("--resamples must be >= 1")
        per_model = model_params(args.model_param)
        systems, described = build_models(names, pool, base, every_ms, opts.lateness_ms, per_model)
        current = args.current or ("adr" if "adr" in described else None)
        if current is not None and current not in described:
            raise EvaluationError(f"--current {current!r} is not among the models run")
    except (EvaluationError, EngineError, ValueError) as exc:
        log("bad arguments", "error", error=str(exc))
        print(f"adr evaluate: {exc}", file=sys.stderr)
        return 2
    try:
        reading = read_log(args.events, args.format)
    except OSError as exc:
        log("cannot read events", "error", path=str(args.events), error=str(exc))
        print(f"adr evaluate: cannot read {args.events}: {exc}", file=sys.stderr)
        return 1
    for reason, count in sorted(reading.bad.items()):
        log("bad records skipped", "warning", reason=reason, count=count,
            examples=reading.examples.get(reason, []))  # fmt: skip
    if not reading.events:
        log("no good event in the file", "error", path=str(args.events))
        print(f"adr evaluate: no good kill event in {args.events}", file=sys.stderr)
        return 1
    log("evaluation started", file=str(args.events), events=len(reading.events),
        models=names, resamples=resamples)  # fmt: skip
    try:
        result = run_log(
            reading.events, systems, pool, opts,
            lambda done, total: log("progress", done=done, total=total),
        )  # fmt: skip
        summary = summarize(result, BootstrapOptions(resamples, args.bootstrap_seed), current)
        report = {
            "meta": {
                "file": str(args.events), "format": reading.fmt, "records": reading.records,
                "good": len(reading.events), "bad_records": dict(sorted(reading.bad.items())),
                "bad_examples": reading.examples, "unread_bytes": reading.unread_bytes,
                "verdicts": result.verdicts, "players": result.players,
                "first_ts": result.first_ts, "last_ts": result.last_ts,
                "split_ts": result.split_ts, "systems": described,
                "options": {**vars(opts), "calibrate_every_ms": every_ms},
                "params": overrides, "quick": bool(args.quick),
                "repeat_kills": _spread(result.run_kills),
                "repeat_counted": _spread(result.run_counted),
                "command": command(args),
            },
            "summary": summary,
        }  # fmt: skip
        paths = write_log_report(report, args.out, args.quick)
    except (EvaluationError, EngineError, OSError) as exc:
        log("evaluation failed", "error", error=str(exc))
        print(f"adr evaluate: {exc}", file=sys.stderr)
        return 1
    for line in summary_lines(report):
        print(line)
    log("evaluation written", out=str(args.out), files=[str(p) for p in paths],
        runtime_s=round(time.perf_counter() - started, 1))  # fmt: skip
    return 0


def _spread(values: list[int]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    return f"median {ordered[len(ordered) // 2]}, max {ordered[-1]}"


def command(args: argparse.Namespace) -> str:
    parts = ["adr evaluate", f"--events {shlex.quote(str(args.events))}"]
    if args.quick:
        parts.append("--quick")
    for flag in ("format", "models", "holdout", "order", "lateness", "calibrate_every",
                 "repeat_gap", "repeat_min", "resamples", "bootstrap_seed", "current",
                 "profile"):  # fmt: skip
        value = getattr(args, flag)
        if value is not None:
            parts.append(f"--{flag.replace('_', '-')} {shlex.quote(str(value))}")
    parts += [f"--param {shlex.quote(p)}" for p in args.param]
    parts += [f"--model-param {shlex.quote(p)}" for p in args.model_param]
    parts.append(f"--out {shlex.quote(str(args.out))}")
    return " ".join(parts)
