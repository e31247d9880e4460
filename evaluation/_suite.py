"""Everything `adr evaluate` runs, as plain data: tuning, the protocol per outcome model, system
and seed, the long-horizon runs, the two illustrations, and the aggregated figures (mean and 95%
interval over the seeds) the report and figures.json are made of."""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import statistics
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from engine import Params
from evaluation._illustrations import (
    PAPER_10_6,
    ReturnSetup,
    prediction_quality,
    prediction_quality_config,
    returning_player,
)
from evaluation._intervals import t_interval
from evaluation._metrics import (
    auc,
    brier,
    calibration_curve,
    expected_calibration_error,
    log_loss,
)
from evaluation._protocol import Followed, ProtocolOptions, SystemResult, run_protocol
from evaluation._stream import OUTCOME_MODELS, StreamConfig, generate
from evaluation._tuning import (
    DEFAULT_SYSTEMS,
    EXTENSIONS,
    GRIDS,
    TUNED,
    description,
    family_system,
    make_system,
)

PAPER_SYSTEMS = ("adr", "elo-k32", "glicko2", "trueskill")
# Outside the logistic model only these run (cost); the logistic model runs every system.
OTHER_MODEL_SYSTEMS = (
    "adr",
    *EXTENSIONS,
    "adr-no-decay",
    "elo-k32",
    "elo-tuned",
    "elo-uscf",
    "glicko2",
    "glicko2-tuned",
    "trueskill-tuned",
)
LONG_SYSTEMS = (
    "adr",
    *EXTENSIONS,
    "elo-tuned",
    "glicko2-tuned",
)
LONG_MODEL = "probit"
TUNING_SEED = 0  # never one of the report's seeds
# Relative run time per system, for scheduling only (longest first).
_COST = {"trueskill": 8.0, "adr": 5.0, "glicko2": 2.0}


def protocol_stream(
    players: int,
    events: int,
    days: int,
    farmers_per_pattern: int,
    cohort_share: float | None = None,
    outcome_model: str = "logistic",
) -> StreamConfig:
    """A §10.4 stream of the report: skill jumps on day 60, absences from day 20 for 70 days,
    farming on day 100; `cohort_share` of the players jump and as many return (None: the
    generator's default shares)."""
    cfg = StreamConfig(
        players=players,
        events=events,
        days=days,
        outcome_model=outcome_model,
        jump_day=60,
        absence_start_day=20,
        absence_days=70,
        farm_day=100,
        farmers_per_pattern=farmers_per_pattern,
    )
    if cohort_share is None:
        return cfg
    return dataclasses.replace(cfg, jump_fraction=cohort_share, return_fraction=cohort_share)


@dataclass(frozen=True)
class SuiteConfig:
    """What one `adr evaluate` runs: the streams (the seed and model are set per job)."""

    seeds: tuple[int, ...] = tuple(range(1, 11))
    models: tuple[str, ...] = OUTCOME_MODELS
    systems: tuple[str, ...] = tuple(DEFAULT_SYSTEMS)
    main: StreamConfig = field(
        default_factory=lambda: protocol_stream(100, 10_000, 150, 5, cohort_share=0.1)
    )
    long: StreamConfig | None = field(
        default_factory=lambda: protocol_stream(
            50, 33_000, 3 * 365, 2, cohort_share=0.1, outcome_model=LONG_MODEL
        )
    )
    section_10_7: bool = True
    grids: dict[str, list[dict[str, float]]] = field(default_factory=lambda: dict(GRIDS))

    def validate(self) -> None:
        self.main.validate()
        if self.long is not None:
            self.long.validate()
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError("seeds must be distinct and at least one")


# CI's `--quick`: every code path, tiny streams, no §10.7 (its stream is fixed at 8,000 kills).
QUICK = SuiteConfig(
    seeds=(1, 2),
    section_10_7=False,
    systems=(*PAPER_SYSTEMS, "adr-no-cooldown", "adr-recommended", "elo-uscf", *TUNED),
    grids={family: grid[:: len(grid) - 1] for family, grid in GRIDS.items()},  # the two ends
    main=protocol_stream(30, 1_500, 150, 3),
    long=protocol_stream(24, 3_000, 3 * 365, 1, outcome_model=LONG_MODEL),
)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _follow_summary(followed: list[Followed]) -> dict[str, Any]:
    measured = [f for f in followed if not math.isnan(f.start_pct)]
    closable = [f for f in measured if f.target_pct - f.start_pct >= 0.05]
    delays = [f.delay for f in closable if f.delay is not None]
    max_changes = [max(f.deltas_sd) for f in measured if f.deltas_sd]
    first_changes = [f.deltas_sd[0] for f in measured if f.deltas_sd]
    second_changes = [f.deltas_sd[1] for f in measured if len(f.deltas_sd) > 1]
    return {
        "players": len(followed),
        "measured": len(closable),
        "reached": len(delays),
        "reached_share": len(delays) / len(closable) if closable else None,
        "delay_median": _median([float(d) for d in delays]),
        "max_change_sd": max(max_changes) if max_changes else None,
        "mean_max_change_sd": statistics.fmean(max_changes) if max_changes else None,
        "first_change_sd": statistics.fmean(first_changes) if first_changes else None,
        "second_change_sd": statistics.fmean(second_changes) if second_changes else None,
    }


def _tv(shares: list[float] | None) -> float | None:
    if not shares or not any(shares):
        return None
    return 0.5 * sum(abs(s - 1.0 / 15.0) for s in shares)


def summarize(result: SystemResult, test_start: int, opts: ProtocolOptions) -> dict[str, Any]:
    """The §10.3 numbers of one system on one stream, as JSON-ready plain data."""
    held = result.scored_index >= test_start
    p, y = result.predictions[held], result.labels[held]
    curve = calibration_curve(p.tolist(), y.tolist())
    converged = next((n for n, rho in result.rho_curve if rho >= opts.convergence_rho), None)
    per_1000 = 1000.0 / max(1, result.player_events_test)
    farm: dict[str, dict[str, float]] = {}
    for row in result.farm:
        bucket = farm.setdefault(str(row["pattern"]), {"sessions": 0.0})
        bucket["sessions"] += 1
        for key in ("farmer_gain_sd", "victim_loss_sd", "farmer_pct_gain"):
            bucket[key] = bucket.get(key, 0.0) + float(row[key])
    for bucket in farm.values():
        for key in ("farmer_gain_sd", "victim_loss_sd", "farmer_pct_gain"):
            bucket[key] /= bucket["sessions"]
    return {
        "held_out_events": int(held.sum()),
        "log_loss": log_loss(p.tolist(), y.tolist()),
        "brier": brier(p.tolist(), y.tolist()),
        "auc": auc(p.tolist(), y.tolist()),
        "ece": expected_calibration_error(curve),
        "calibration": [dataclasses.asdict(b) for b in curve],
        "rho_curve": result.rho_curve,
        "convergence_events": converged,
        "final_rho": result.rho_curve[-1][1],
        "quantile_tier_changes_per_1000": result.quantile_changes_test * per_1000,
        "hyst_tier_changes_per_1000": result.hyst_changes_test * per_1000,
        "own_tier_changes_per_1000": (
            None
            if result.own_tier_changes_test is None
            else result.own_tier_changes_test * per_1000
        ),
        "quantile_shares": result.quantile_shares,
        "quantile_shares_tv": _tv(result.quantile_shares),
        "hyst_shares": result.hyst_shares,
        "hyst_shares_tv": _tv(result.hyst_shares),
        "own_shares": result.own_shares,
        "own_shares_tv": _tv(result.own_shares),
        "own_unplaced_active": result.own_unplaced_active,
        "jump": _follow_summary(result.jumpers),
        "return": _follow_summary(result.returners),
        "farming": farm,
        "median_abs_change_sd": result.median_abs_change_sd,
        "final_sd": result.final_sd,
        "final_mean": result.final_mean,
        "series": result.series,
    }


# The per-seed scalars that get a mean and a 95% interval: name -> path into the summary.
SCALARS: dict[str, tuple[str, ...]] = {
    "log_loss": ("log_loss",),
    "brier": ("brier",),
    "auc": ("auc",),
    "ece": ("ece",),
    "convergence_events": ("convergence_events",),
    "final_rho": ("final_rho",),
    "quantile_tier_changes_per_1000": ("quantile_tier_changes_per_1000",),
    "hyst_tier_changes_per_1000": ("hyst_tier_changes_per_1000",),
    "own_tier_changes_per_1000": ("own_tier_changes_per_1000",),
    "quantile_shares_tv": ("quantile_shares_tv",),
    "hyst_shares_tv": ("hyst_shares_tv",),
    "own_shares_tv": ("own_shares_tv",),
    "jump_delay": ("jump", "delay_median"),
    "jump_reached": ("jump", "reached_share"),
    "return_delay": ("return", "delay_median"),
    "return_reached": ("return", "reached_share"),
    "return_max_change_sd": ("return", "mean_max_change_sd"),
    "return_first_change_sd": ("return", "first_change_sd"),
    "return_second_change_sd": ("return", "second_change_sd"),
    "typical_change_sd": ("median_abs_change_sd",),
    "final_mean": ("final_mean",),
    "final_sd": ("final_sd",),
}


def scalars(summary: dict[str, Any]) -> dict[str, float | None]:
    """The summary's per-seed scalars (None where the seed has no value, e.g. never converged)."""
    out: dict[str, float | None] = {}
    for name, path in SCALARS.items():
        value: Any = summary
        for key in path:
            value = None if value is None else value.get(key)
        out[name] = None if value is None else float(value)
    for pattern, row in summary["farming"].items():
        out[f"farm_{pattern}_gain_sd"] = row["farmer_gain_sd"]
        out[f"farm_{pattern}_pct"] = row["farmer_pct_gain"]
    return out


def interval_dict(values: list[float | None]) -> dict[str, float | int] | None:
    """Mean and 95% t interval over the seeds that have a value (n says how many)."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    if not present:
        return None
    iv = t_interval(present)
    return {"mean": iv.mean, "lo": iv.lo, "hi": iv.hi, "n": iv.n}


# -- jobs (run in worker processes; plain data in and out) ----------------------------------------


def _tune_job(
    model: str, family: str, values: dict[str, float], cfg: StreamConfig, opts: ProtocolOptions
) -> float:
    stream = generate(dataclasses.replace(cfg, seed=TUNING_SEED, outcome_model=model))
    system = family_system(family, values)
    result = run_protocol(system, stream, opts)
    held = result.scored_index >= stream.test_start
    return log_loss(result.predictions[held].tolist(), result.labels[held].tolist())


def _main_job(
    name: str,
    cfg: StreamConfig,
    opts: ProtocolOptions,
    overrides: dict[str, str],
    tuned: dict[str, dict[str, float]],
    keep_curves: bool,
) -> dict[str, Any]:
    params = Params.from_overrides(overrides)
    stream = generate(cfg)
    result = run_protocol(make_system(name, params, tuned), stream, opts, params)
    summary = summarize(result, stream.test_start, opts)
    out: dict[str, Any] = {
        "scalars": scalars(summary),
        "quantile_shares": summary["quantile_shares"],
        "hyst_shares": summary["hyst_shares"],
        "own_shares": summary["own_shares"],
        "series": summary["series"],
        "return_cohort": summary["return"]["measured"],
        "jump_cohort": summary["jump"]["measured"],
    }
    if keep_curves:
        out["calibration"] = summary["calibration"]
        out["rho_curve"] = summary["rho_curve"]
    return out


def _pq_job(name: str, seed: int, overrides: dict[str, str], keep_curves: bool) -> dict[str, Any]:
    params = Params.from_overrides(overrides)
    curves = dataclasses.asdict(
        prediction_quality(make_system(name, params, {}), prediction_quality_config(seed))
    )
    if not keep_curves:
        curves.pop("rolling_log_loss")
        curves.pop("block_auc")
    return curves


# -- aggregation ----------------------------------------------------------------------------------


def _aggregate_system(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    keys = sorted({k for run in per_seed for k in run["scalars"]})
    ci = {k: interval_dict([run["scalars"].get(k) for run in per_seed]) for k in keys}
    out: dict[str, Any] = {
        "ci": ci,
        "per_seed": {k: [run["scalars"].get(k) for run in per_seed] for k in keys},
        "return_cohort_total": sum(run["return_cohort"] for run in per_seed),
        "jump_cohort_total": sum(run["jump_cohort"] for run in per_seed),
    }
    for key in ("quantile_shares", "hyst_shares", "own_shares"):
        rows = [run[key] for run in per_seed if run[key] is not None]
        out[key] = [float(x) for x in np.mean(rows, axis=0)] if rows else None
    first = per_seed[0]
    out["calibration"] = first.get("calibration", [])
    out["rho_curve"] = first.get("rho_curve", [])
    return out


def _aggregate_series(per_seed: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Per checkpoint: mean and interval over the seeds of each series quantity."""
    length = min(len(s) for s in per_seed)
    points = []
    for i in range(length):
        rows = [s[i] for s in per_seed]
        bounds = [r["boundaries"] for r in rows if r["boundaries"] is not None]
        points.append(
            {
                "day": statistics.fmean(r["day"] for r in rows),
                "mean": interval_dict([r["mean"] for r in rows]),
                "sd": interval_dict([r["sd"] for r in rows]),
                "at_floor": interval_dict([r["at_floor"] for r in rows]),
                "near_floor": interval_dict([r["near_floor"] for r in rows]),
                "shares_tv": interval_dict([r["shares_tv"] for r in rows]),
                "boundaries": [float(x) for x in np.mean(bounds, axis=0)] if bounds else None,
                "shares": [float(x) for x in np.mean([r["shares"] for r in rows], axis=0)],
            }
        )
    return {"points": points}


def _jsonable(value: Any) -> Any:
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _cost(name: str) -> float:
    return _COST.get(name.split("-")[0], 1.0)


def model_systems(model: str, systems: tuple[str, ...]) -> list[str]:
    """The systems run under an outcome model, in report order."""
    if model == "logistic":
        return list(systems)
    return [s for s in systems if s in OTHER_MODEL_SYSTEMS]


def run_suite(
    suite: SuiteConfig,
    opts: ProtocolOptions,
    overrides: dict[str, str],
    jobs: int,
    progress: Callable[[str, int, int], None],
) -> dict[str, Any]:
    """Tune, then run every (model, system, seed) and the long horizon in `jobs` processes."""
    suite.validate()
    params = Params.from_overrides(overrides)
    need_tuning = {TUNED[s] for s in suite.systems if s in TUNED}
    long_systems = [s for s in LONG_SYSTEMS if s in suite.systems] if suite.long else []
    tune_models = sorted(set(suite.models) | ({LONG_MODEL} if long_systems else set()))
    grids = suite.grids
    total = sum(len(grids[f]) for f in need_tuning) * len(tune_models)
    total += sum(len(model_systems(m, suite.systems)) for m in suite.models) * len(suite.seeds)
    total += len(long_systems) * len(suite.seeds)
    pq_systems = [s for s in PAPER_SYSTEMS if s in suite.systems] if suite.section_10_7 else []
    total += len(pq_systems) * len(suite.seeds)
    done = 0

    def tick(label: str) -> None:
        nonlocal done
        done += 1
        progress(label, done, total)

    tuning: dict[str, dict[str, Any]] = {}
    main: dict[str, dict[str, list[dict[str, Any]]]] = {}
    long_runs: dict[str, list[dict[str, Any]]] = {}
    pq: dict[str, list[dict[str, Any]]] = {}
    # forkserver, not fork: a fork of a process with other threads running (librdkafka's, when
    # the evaluation runs inside a larger process such as the test suite) can die in the child.
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context) as pool:
        # Phase 1: the tuning grids (their choice feeds the tuned systems), and meanwhile the
        # untuned systems and §10.7.
        tune_futs: dict[Future[float], tuple[str, str, int]] = {}
        for model in tune_models:
            for family in sorted(need_tuning, key=lambda f: -_cost(f)):
                for point, values in enumerate(grids[family]):
                    fut = pool.submit(_tune_job, model, family, values, suite.main, opts)
                    tune_futs[fut] = (model, family, point)
        later: list[tuple[str, str, int]] = []
        work: dict[Future[dict[str, Any]], tuple[str, str, int]] = {}

        def submit_main(model: str, name: str, seed: int, tuned: dict[str, Any]) -> None:
            cfg = suite.long if model == "long" else suite.main
            assert cfg is not None
            cfg = dataclasses.replace(
                cfg, seed=seed, outcome_model=LONG_MODEL if model == "long" else model
            )
            keep = seed == suite.seeds[0]
            fut = pool.submit(_main_job, name, cfg, opts, overrides, tuned, keep)
            work[fut] = (model, name, seed)

        plan = [
            (model, name, seed)
            for model in suite.models
            for name in model_systems(model, suite.systems)
            for seed in suite.seeds
        ] + [("long", name, seed) for name in long_systems for seed in suite.seeds]
        plan.sort(key=lambda job: -_cost(job[1]) * (3 if job[0] == "long" else 1))
        for model, name, seed in plan:
            if name in TUNED:
                later.append((model, name, seed))
            else:
                submit_main(model, name, seed, {})
        for name in pq_systems:
            for seed in suite.seeds:
                pq_fut = pool.submit(_pq_job, name, seed, overrides, seed == suite.seeds[0])
                work[pq_fut] = ("pq", name, seed)

        scores: dict[tuple[str, str], list[float]] = {}
        for tune_fut in as_completed(tune_futs):
            model, family, point = tune_futs[tune_fut]
            scores.setdefault((model, family), [math.inf] * len(grids[family]))[point] = (
                tune_fut.result()
            )
            tick(f"tune {model} {family} #{point}")
        for (model, family), losses in scores.items():
            best = min(range(len(losses)), key=losses.__getitem__)
            tuning.setdefault(model, {})[family] = {
                "grid": [
                    {"values": grids[family][i], "log_loss": losses[i]} for i in range(len(losses))
                ],
                "chosen": grids[family][best],
            }
        for model, name, seed in later:  # Phase 2: the tuned systems
            chosen = tuning[LONG_MODEL if model == "long" else model]
            submit_main(model, name, seed, {f: v["chosen"] for f, v in chosen.items()})

        results: dict[tuple[str, str, int], dict[str, Any]] = {}
        for done_fut in as_completed(list(work)):
            key = work[done_fut]
            results[key] = done_fut.result()
            tick(f"{key[0]} {key[1]} seed {key[2]}")
    order = {seed: i for i, seed in enumerate(suite.seeds)}
    for (model, name, _seed), out in sorted(results.items(), key=lambda kv: order[kv[0][2]]):
        if model == "pq":
            pq.setdefault(name, []).append(out)
        elif model == "long":
            long_runs.setdefault(name, []).append(out)
        else:
            main.setdefault(model, {}).setdefault(name, []).append(out)

    models_out = {
        model: {
            name: _aggregate_system(main[model][name])
            for name in model_systems(model, suite.systems)
        }
        for model in suite.models
    }
    long_out = {
        name: {
            **_aggregate_series([run["series"] for run in long_runs[name]]),
            "ci": _aggregate_system(long_runs[name])["ci"],
        }
        for name in long_systems
    }
    pq_out = {
        name: {
            "ci": {
                k: interval_dict([run[k] for run in pq[name]])
                for k in (
                    "overall_log_loss",
                    "overall_auc",
                    "last_block_log_loss",
                    "last_block_auc",
                )
            },
            "rolling_log_loss": pq[name][0]["rolling_log_loss"],
            "block_auc": pq[name][0]["block_auc"],
        }
        for name in pq_systems
    }
    tuned_by_model = {m: {f: v["chosen"] for f, v in t.items()} for m, t in tuning.items()}
    setup = ReturnSetup()
    toy = []
    for fixed in (True, False):
        for t in returning_player(dataclasses.replace(setup, opponent_fixed=fixed), params):
            steps = t.steps
            toy.append(
                {
                    "system": t.system,
                    "variant": t.variant,
                    "opponent_fixed": fixed,
                    "total": t.total,
                    "paper": PAPER_10_6.get(t.system) if fixed else None,
                    "first_step": steps[0],
                    "second_step": steps[1] if len(steps) > 1 else None,
                    "max_step": max(steps),
                    "total_over_initial_uncertainty": (
                        None if t.initial_uncertainty is None else t.total / t.initial_uncertainty
                    ),
                    "ratings": t.ratings,
                }
            )
    sample = generate(dataclasses.replace(suite.main, seed=suite.seeds[0]))
    figures = {
        "meta": {
            "seeds": list(suite.seeds),
            "tuning_seed": TUNING_SEED,
            "models": list(suite.models),
            "stream": dataclasses.asdict(suite.main),
            "long_stream": None if suite.long is None else dataclasses.asdict(suite.long),
            "protocol": dataclasses.asdict(opts),
            "adr_params": {
                f.name: getattr(params, f.name) for f in dataclasses.fields(params) if f.init
            },
            "adr_overrides": overrides,
            "systems": {
                name: description(name, tuned_by_model.get("logistic")) for name in suite.systems
            },
            "events_total": len(sample.events),
            "held_out_from_event": sample.test_start,
            "jumpers": len(sample.jumpers),
            "returners": len(sample.returners),
            "farm_sessions": len(sample.farm_sessions),
            "section_10_6_setup": dataclasses.asdict(setup),
            "section_10_7_stream": dataclasses.asdict(prediction_quality_config(suite.seeds[0])),
        },
        "tuning": tuning,
        "models": models_out,
        "long": long_out,
        "section_10_6": {"paper": PAPER_10_6, "ours": toy},
        "section_10_7": pq_out,
    }
    return dict(_jsonable(figures))
