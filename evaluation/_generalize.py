"""`adr evaluate --generalize`: every system on every named setting (evaluation/_settings.py),
tuning and held-out, over the report's seeds; three simulated years of a held-out setting; and
the issue-29 targets checked on the held-out settings. Plain data in and out of worker processes.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import numpy as np

from engine import Params, model_named, profile_overrides
from evaluation._adr_system import AdrSystem
from evaluation._generators import Setting, generate_setting
from evaluation._intervals import t_interval
from evaluation._metrics import log_loss
from evaluation._model_system import ModelSystem
from evaluation._protocol import ProtocolOptions, run_protocol
from evaluation._settings import REPORT_SEEDS, SETTINGS, long_setting, setting, split
from evaluation._suite import interval_dict, scalars, summarize
from evaluation._tuning import TUNED, family_system, make_system

# The tuned baselines keep the values `adr evaluate` chose on its own tuning seed under logistic
# outcomes (reports/latest/figures.json): chosen on no setting here, like ADR's profiles.
FIXED_TUNING: dict[str, dict[str, float]] = {
    "elo": {"k": 40.0},
    "glicko2": {"tau": 0.3, "period_days": 0.0},
    "trueskill": {"beta": 25.0 / 3.0 / 4.0, "tau": 25.0 / 3.0 / 100.0},
}
ADR_VARIANTS: dict[str, dict[str, str]] = {
    "adr": {},
    "adr-recommended": profile_overrides("recommended"),
    "adr-general": profile_overrides("general"),
}
# The baseline best on every tuning setting (Glicko-2; untuned and τ = 0.3 differ in the fourth
# decimal there, so only one runs) and the fast K-factor Elo. TrueSkill (4-5 times ADR's run
# time, never the best log loss on the tuning settings) only with --systems: the default run
# must fit a shared 2-core machine.
# Every engine model as a pool runs it (engine.model_named at its defaults, through
# engine.ModelBook: the pool's cooldown, the model's display rating as the rating ranks and tiers
# read), for the per-model study (--engine-models). ADR and its profiles run as above
# (engine.RatingBook: ModelBook(AdrModel)'s states bit for bit, snapshots hourly: ADR's μ̄_A).
# The other models read their snapshot only for their own tiers, which no figure of the study
# uses (the common rule has its own), so theirs is taken once a day of event time: the exact
# quantiles of an hourly one were most of their run time.
ENGINE_CALIBRATE_EVERY_MS = 86_400_000
ENGINE_MODELS: dict[str, tuple[str, dict[str, str]]] = {
    "engine:elo": ("elo", {}),
    "engine:elo-fide": ("elo", {"k_rule": "fide"}),
    "engine:elo-uscf": ("elo", {"k_rule": "uscf"}),
    "engine:glicko2": ("glicko2", {}),
    "engine:trueskill": ("trueskill", {}),
    "engine:weng-lin": ("weng-lin", {}),
}
ENGINE_SYSTEMS = (*ADR_VARIANTS, *ENGINE_MODELS)


def engine_models_meta() -> dict[str, Any]:
    """What --engine-models ran, for the report: each engine system's model, overrides and
    snapshot interval."""
    out: dict[str, Any] = {
        name: {"model": "adr", "overrides": ADR_VARIANTS[name], "calibrate_every_ms": 3_600_000}
        for name in ADR_VARIANTS
    }
    for name, (model, overrides) in ENGINE_MODELS.items():
        out[name] = {
            "model": model,
            "overrides": overrides,
            "calibrate_every_ms": ENGINE_CALIBRATE_EVERY_MS,
        }
    return out


BASELINES = ("elo-tuned", "glicko2")
OTHER_BASELINES = ("trueskill-tuned", "elo-k32", "glicko2-tuned", "trueskill")
SYSTEMS = (*ADR_VARIANTS, *BASELINES)
ALL_SYSTEMS = (*SYSTEMS, *OTHER_BASELINES, *ENGINE_MODELS)
LONG_SYSTEMS = ("adr", "adr-recommended", "adr-general")
LONG_BASE = "newcomer-stream"
NEWCOMER_EVENTS = 30  # a pair with a player with fewer own events before it is a newcomer pair
COST = {"trueskill": 3.0, "adr": 2.0, "glicko2": 1.5, "engine:glicko2": 1.5}


def build_system(name: str, candidate: dict[str, str] | None = None) -> Any:
    """The named system; `adr-candidate` runs the given overrides (for tuning by hand)."""
    if name == "adr-candidate":
        return AdrSystem(Params.from_overrides(candidate or {}), name=name)
    if name in ADR_VARIANTS:
        return AdrSystem(Params.from_overrides(ADR_VARIANTS[name]), name=name)
    if name in TUNED:
        return family_system(TUNED[name], FIXED_TUNING[TUNED[name]], name=name)
    if name in ENGINE_MODELS:
        model, overrides = ENGINE_MODELS[name]
        engine_model = model_named(model, overrides)
        return ModelSystem(
            engine_model, Params(), ENGINE_CALIBRATE_EVERY_MS, name=name, strict=False
        )
    return make_system(name, Params(), {})


def newcomer_flags(stream: Any, scored: np.ndarray) -> np.ndarray:
    """For each scored event: does either player have fewer than NEWCOMER_EVENTS events before?"""
    seen: dict[str, int] = {}
    flags = np.zeros(len(stream.events), dtype=bool)
    for k, ev in enumerate(stream.events):
        flags[k] = min(seen.get(ev.attacker, 0), seen.get(ev.victim, 0)) < NEWCOMER_EVENTS
        seen[ev.attacker] = seen.get(ev.attacker, 0) + 1
        seen[ev.victim] = seen.get(ev.victim, 0) + 1
    return np.asarray(flags[scored], dtype=bool)


def run_job(
    the_setting: Setting, name: str, seed: int, candidate: dict[str, str] | None = None
) -> dict[str, Any]:
    """One system on one setting and seed: the §10.3 scalars, newcomer/established log loss,
    farming gains per pattern, and the long-horizon series."""
    opts = ProtocolOptions()
    stream = generate_setting(the_setting, seed)
    system = build_system(name, candidate)
    params = system.params if isinstance(system, AdrSystem) else Params()
    result = run_protocol(system, stream, opts, params)
    summary = summarize(result, stream.test_start, opts)
    out = scalars(summary)
    held = result.scored_index >= stream.test_start
    fresh = newcomer_flags(stream, result.scored_index)
    p, y = result.predictions, result.labels
    for label, mask in (("newcomer", held & fresh), ("established", held & ~fresh)):
        out[f"log_loss_{label}"] = (
            log_loss(p[mask].tolist(), y[mask].tolist()) if mask.any() else None
        )
    gains = [v for k, v in out.items() if k.endswith("_gain_sd") and v is not None]
    out["farming_max_sd"] = max(gains) if gains else None  # the best pace for the farmer
    last = summary["series"][-1] if summary["series"] else {}
    out["end_at_floor"] = last.get("at_floor")
    out["end_near_floor"] = last.get("near_floor")
    out["end_mean"] = last.get("mean")
    out["end_sd"] = last.get("sd")
    first = summary["series"][0] if summary["series"] else {}
    out["start_mean"] = first.get("mean")
    return {"scalars": out}


def aggregate(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and 95% interval per scalar over the seeds, and the per-seed values."""
    keys = sorted({k for run in per_seed for k in run["scalars"]})
    return {
        "ci": {k: interval_dict([run["scalars"].get(k) for run in per_seed]) for k in keys},
        "per_seed": {k: [run["scalars"].get(k) for run in per_seed] for k in keys},
    }


def run_generalization(
    seeds: tuple[int, ...],
    settings: tuple[Setting, ...],
    systems: tuple[str, ...],
    jobs: int,
    progress: Callable[[str, int, int], None],
    long_days: int | None = 3 * 365,
    candidate: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Every (setting, system, seed), plus the long horizon; figures as plain data."""
    plan = [(s, name, seed) for s in settings for name in systems for seed in seeds]
    long_cfg = long_setting(setting(LONG_BASE), long_days) if long_days else None
    long_names = [n for n in (*LONG_SYSTEMS, "adr-candidate") if n in systems] if long_cfg else []
    plan += [(long_cfg, name, seed) for name in long_names for seed in seeds]  # type: ignore[misc]
    plan.sort(key=lambda job: -COST.get(job[1].split("-")[0], 1.0) * job[0].days)
    results: dict[tuple[str, str, int], dict[str, Any]] = {}
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context) as pool:
        futs = {
            pool.submit(run_job, s, name, seed, candidate): (s.name, name, seed)
            for s, name, seed in plan
        }
        for done, fut in enumerate(as_completed(futs), start=1):
            key = futs[fut]
            results[key] = fut.result()
            progress(f"{key[0]} {key[1]} seed {key[2]}", done, len(plan))
    figures: dict[str, Any] = {
        "meta": {
            "seeds": list(seeds),
            "systems": list(systems),
            "fixed_tuning": FIXED_TUNING,
            "adr_variants": {**ADR_VARIANTS, **({"adr-candidate": candidate} if candidate else {})},
            "settings": {s.name: _jsonable(dataclasses.asdict(s)) for s in settings},
            "long_setting": None if long_cfg is None else _jsonable(dataclasses.asdict(long_cfg)),
        },
        "settings": {},
        "long": {},
    }
    for s in settings:
        figures["settings"][s.name] = {
            name: aggregate([results[(s.name, name, seed)] for seed in seeds]) for name in systems
        }
    if long_cfg is not None:
        figures["long"] = {
            name: aggregate([results[(long_cfg.name, name, seed)] for seed in seeds])
            for name in long_names
        }
    figures["targets"] = targets(figures, [s.name for s in settings])
    return figures


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _mean(row: dict[str, Any], key: str) -> float | None:
    ci = row["ci"].get(key)
    return None if ci is None else float(ci["mean"])


def targets(figures: dict[str, Any], held_out: list[str]) -> dict[str, Any]:
    """The issue-29 targets for each ADR variant on each named setting run: met or not (the
    targets are judged on the held-out settings; on tuning settings they show what was tuned)."""
    out: dict[str, Any] = {}
    for variant in (v for v in (*ADR_VARIANTS, "adr-candidate") if v in figures["meta"]["systems"]):
        rows: dict[str, Any] = {}
        for name in held_out:
            table = figures["settings"][name]
            baselines = [b for b in (*BASELINES, *OTHER_BASELINES) if b in table]
            if not baselines:
                continue
            best = min(baselines, key=lambda b: _mean(table[b], "log_loss") or math.inf)
            best_ci = table[best]["ci"]["log_loss"]
            mine = _mean(table[variant], "log_loss")
            patterns = sorted(k for k in table[variant]["ci"] if k.endswith("_gain_sd"))
            farm = {}
            if "glicko2" in table:
                for key in patterns:
                    farm[key] = {
                        "adr": _mean(table[variant], key),
                        "glicko2": _mean(table["glicko2"], key),
                    }
            tiers_g = (
                _mean(table["glicko2"], "hyst_tier_changes_per_1000")
                if "glicko2" in table
                else None
            )
            tiers = _mean(table[variant], "hyst_tier_changes_per_1000")
            rows[name] = {
                "best_baseline": best,
                "log_loss": mine,
                "best_interval": best_ci,
                "log_loss_met": mine is not None and mine <= best_ci["hi"],
                "farming": farm,
                "farming_met": all(
                    v["adr"] is not None and v["glicko2"] is not None and v["adr"] <= v["glicko2"]
                    for v in farm.values()
                ),
                "tier_changes": tiers,
                "tier_changes_glicko2": tiers_g,
                "tiers_met": tiers is not None and tiers_g is not None and tiers <= tiers_g,
            }
        long_row = figures.get("long", {}).get(variant)
        drift = None
        if long_row is not None:
            start = long_row["per_seed"]["start_mean"]
            end = long_row["per_seed"]["end_mean"]
            moves = [
                e - s for s, e in zip(start, end, strict=True) if s is not None and e is not None
            ]
            drift = {
                "end_minus_start": interval_dict(moves) if len(moves) > 1 else None,
                "end_at_floor": long_row["ci"].get("end_at_floor"),
                "end_near_floor": long_row["ci"].get("end_near_floor"),
            }
        out[variant] = {"held_out": rows, "long": drift}
    return out


def drift_interval(values: list[float]) -> dict[str, float] | None:
    """Mean and interval of a list (None below two values)."""
    if len(values) < 2:
        return None
    iv = t_interval(values)
    return {"mean": iv.mean, "lo": iv.lo, "hi": iv.hi, "n": iv.n}


def default_settings(which: str = "held-out") -> tuple[Setting, ...]:
    """The held-out settings, the tuning ones, or all (tuning first)."""
    if which == "all":
        return (*split("tuning"), *split("held-out"))
    return split(which)


__all__ = ["REPORT_SEEDS", "SETTINGS", "default_settings", "run_generalization"]
