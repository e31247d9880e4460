"""Everything `adr evaluate` runs, as plain data: the systems, the protocol per system, the two
illustrations, and the numbers (figures) the report and figures.json are made of."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from fractions import Fraction
from typing import Any

import numpy as np

from engine import Params
from evaluation.adr_system import AdrSystem
from evaluation.elo import Elo, FideElo, MobaElo, MobaLadder, UscfElo
from evaluation.glicko2 import Glicko2
from evaluation.illustrations import (
    PAPER_10_6,
    ReturnSetup,
    prediction_quality,
    prediction_quality_config,
    returning_player,
)
from evaluation.metrics import (
    auc,
    brier,
    calibration_curve,
    expected_calibration_error,
    log_loss,
)
from evaluation.protocol import Followed, ProtocolOptions, SystemResult, run_protocol
from evaluation.stream import StreamConfig, generate
from evaluation.systems import RatingSystem
from evaluation.trueskill_system import TrueSkill

# name -> (what it is, factory taking the ADR parameters)
SYSTEMS: dict[str, tuple[str, Callable[[Params], RatingSystem]]] = {
    "adr": ("ADR, engine.RatingBook (cooldown 60 s, calibration hourly)", lambda p: AdrSystem(p)),
    "adr-no-cooldown": (
        "ADR with t_cooldown = 0 (ablation: what the cooldown does)",
        lambda p: AdrSystem(p.with_overrides({"t_cooldown": 0}), name="adr-no-cooldown"),
    ),
    "adr-no-decay": (
        "ADR with τ = 10⁶ days (ablation: decay toward μ̄_A on every gap > 0)",
        lambda p: AdrSystem(p.with_overrides({"tau": 1_000_000}), name="adr-no-decay"),
    ),
    "elo-k32": ("Elo, K = 32, logistic base 10, scale 400, start 1500", lambda p: Elo(k=32.0)),
    "elo-k16": ("Elo, K = 16", lambda p: Elo(k=16.0)),
    "elo-fide": ("dynamic K, FIDE: 40 / 20 / 10 (2400 reached)", lambda p: FideElo()),
    "elo-uscf": ("dynamic K, USCF: 800/(N_e + 1), N_e = games, capped at 50", lambda p: UscfElo()),
    "elo-moba": ("MOBA seed Eq. 5/7: K = 35 − 5·floor(R/400), weight 1", lambda p: MobaElo()),
    "ladder-moba": ("MOBA seed Eq. 8: ±20 per kill (weight 1)", lambda p: MobaLadder()),
    "glicko2": ("Glicko-2, τ = 0.5, one kill per period, idle days", lambda p: Glicko2()),
    "trueskill": ("TrueSkill package, 1-vs-1, no draws, default scale", lambda p: TrueSkill()),
}
PAPER_SYSTEMS = ("adr", "elo-k32", "glicko2", "trueskill")
# Relative run time per system family, for scheduling only.
_COST = {"trueskill": 8, "adr": 3, "glicko2": 2}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _follow_summary(followed: list[Followed]) -> dict[str, Any]:
    measured = [f for f in followed if not math.isnan(f.start_pct)]
    closable = [f for f in measured if f.target_pct - f.start_pct >= 0.05]
    delays = [f.delay for f in closable if f.delay is not None]
    max_changes = [max(f.deltas_sd) for f in measured if f.deltas_sd]
    first_changes = [f.deltas_sd[0] for f in measured if f.deltas_sd]
    return {
        "players": len(followed),
        "measured": len(closable),
        "reached": len(delays),
        "delay_median": _median([float(d) for d in delays]),
        "delays": [f.delay for f in closable],
        "max_change_sd": max(max_changes) if max_changes else None,
        "mean_max_change_sd": statistics.fmean(max_changes) if max_changes else None,
        "first_change_sd": statistics.fmean(first_changes) if first_changes else None,
    }


def summarize(result: SystemResult, test_start: int, opts: ProtocolOptions) -> dict[str, Any]:
    """The §10.3 numbers of one system, as JSON-ready plain data."""
    held = result.scored_index >= test_start
    p, y = result.predictions[held], result.labels[held]
    curve = calibration_curve(p.tolist(), y.tolist())
    converged = next((n for n, rho in result.rho_curve if rho >= opts.convergence_rho), None)
    per_1000 = 1000.0 / max(1, result.player_events_test)
    target = 1.0 / 15.0
    farm: dict[str, dict[str, float]] = {}
    for row in result.farm:
        bucket = farm.setdefault(str(row["pattern"]), {"sessions": 0.0})
        bucket["sessions"] += 1
        for key in ("farmer_gain_sd", "victim_loss_sd", "farmer_pct_gain"):
            bucket[key] = bucket.get(key, 0.0) + float(row[key])
    for bucket in farm.values():
        for key in ("farmer_gain_sd", "victim_loss_sd", "farmer_pct_gain"):
            bucket[key] /= bucket["sessions"]
    own = result.own_shares
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
        "own_tier_changes_per_1000": (
            None
            if result.own_tier_changes_test is None
            else result.own_tier_changes_test * per_1000
        ),
        "quantile_shares": result.quantile_shares,
        "quantile_shares_tv": 0.5 * sum(abs(s - target) for s in result.quantile_shares),
        "own_shares": own,
        "own_shares_tv": None if own is None else 0.5 * sum(abs(s - target) for s in own),
        "own_unplaced_active": result.own_unplaced_active,
        "jump": _follow_summary(result.jumpers),
        "return": _follow_summary(result.returners),
        "farming": farm,
        "median_abs_change_sd": result.median_abs_change_sd,
        "final_sd": result.final_sd,
        "final_mean": result.final_mean,
    }


def _run_one(
    name: str, cfg: StreamConfig, opts: ProtocolOptions, overrides: dict[str, str]
) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """Worker: one system over the main stream, and over §10.7's stream if the paper ran it."""
    params = Params.from_overrides(overrides)
    factory = SYSTEMS[name][1]
    stream = generate(cfg)
    result = run_protocol(factory(params), stream, opts, params)
    summary = summarize(result, stream.test_start, opts)
    curves = None
    if name in PAPER_SYSTEMS:
        pq = prediction_quality(factory(params), prediction_quality_config(cfg.seed))
        curves = dataclasses.asdict(pq)
    return name, summary, curves


def _jsonable(value: Any) -> Any:
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def run_suite(
    cfg: StreamConfig,
    opts: ProtocolOptions,
    overrides: dict[str, str],
    systems: list[str],
    jobs: int,
    progress: Callable[[str, int, int], None],
) -> dict[str, Any]:
    """Run every system (in `jobs` processes), then the §10.6 toy; return all figures."""
    cfg.validate()
    params = Params.from_overrides(overrides)
    protocol: dict[str, Any] = {}
    curves: dict[str, Any] = {}
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        # Longest first (TrueSkill's package, then ADR) so the pool does not end on one slow job.
        ordered = sorted(systems, key=lambda n: -_COST.get(n.split("-")[0], 1))
        futures = [pool.submit(_run_one, name, cfg, opts, overrides) for name in ordered]
        done: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
        for future in as_completed(futures):
            name, summary, pq = future.result()
            done[name] = (summary, pq)
            progress(name, len(done), len(futures))
    for name in systems:  # report order = the order asked for, whatever finished first
        summary, pq = done[name]
        protocol[name] = summary
        if pq is not None:
            curves[name] = pq
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
                    "max_step": max(steps),
                    "total_over_initial_uncertainty": (
                        None if t.initial_uncertainty is None else t.total / t.initial_uncertainty
                    ),
                    "ratings": t.ratings,
                }
            )
    stream_stats = generate(cfg)
    return {
        "meta": {
            "stream": _jsonable(dataclasses.asdict(cfg)),
            "protocol": dataclasses.asdict(opts),
            "adr_params": _jsonable(
                {f.name: getattr(params, f.name) for f in dataclasses.fields(params) if f.init}
            ),
            "adr_overrides": overrides,
            "systems": {name: SYSTEMS[name][0] for name in systems},
            "events_total": len(stream_stats.events),
            "held_out_from_event": stream_stats.test_start,
            "jumpers": len(stream_stats.jumpers),
            "returners": len(stream_stats.returners),
            "farm_sessions": len(stream_stats.farm_sessions),
            "section_10_6_setup": dataclasses.asdict(setup),
            "section_10_7_stream": _jsonable(
                dataclasses.asdict(prediction_quality_config(cfg.seed))
            ),
        },
        "protocol": protocol,
        "section_10_6": {"paper": PAPER_10_6, "ours": toy},
        "section_10_7": curves,
    }
