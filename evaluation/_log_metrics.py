"""The held-out figures of `adr evaluate --events`, each with its day-bootstrap interval, and the
recommendation.

Per system: log loss, AUC, Brier score, expected calibration error with its reliability table,
tier changes per 1,000 player-events under the common rule, and the repeat-pair gain (what an
attacker gains, in its system's population SDs, over a run of repeated kills of one victim) and
the matching victim loss. Recommendation: the system with the lowest held-out log loss, if the
paired day-bootstrap interval of (other − best) lies above 0 for every other system and the
held-out part spans at least `MIN_DAYS` days; otherwise "no clear winner" among the best and
those not separated from it, broken by the stated tie-break rule.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final

import numpy as np

from evaluation._day_bootstrap import (
    HeldOut,
    auc_draws,
    brier_draws,
    day_multiplicities,
    ece_draws,
    per_day,
    percentile_interval,
    ratio,
)
from evaluation._errors import EvaluationError
from evaluation._intervals import Interval
from evaluation._log_harness import HarnessResult
from evaluation._metrics import calibration_curve

MIN_DAYS: Final = 5
TIE_BREAK: Final = (
    "keep the current model (--current, default adr) if it is among the tied; otherwise the tied "
    "model with the fewest tier changes per 1,000 player-events (steadier tiers for the same "
    "prediction)"
)


@dataclass(frozen=True)
class BootstrapOptions:
    resamples: int = 2000
    seed: int = 0


def _ci(point: float, draws: np.ndarray) -> dict[str, float]:
    i: Interval = percentile_interval(point, draws)
    return {"point": i.mean, "lo": i.lo, "hi": i.hi}


def summarize(result: HarnessResult, boot: BootstrapOptions, current: str | None) -> dict[str, Any]:
    """Every figure with its interval, the paired log-loss differences and the recommendation."""
    if not result.y:
        raise EvaluationError("no counted kill in the held-out part: nothing to evaluate")
    day_values = sorted(set(result.day) | set(result.run_day))
    index = {d: i for i, d in enumerate(day_values)}
    n_days = len(day_values)
    day = np.array([index[d] for d in result.day])
    run_day = np.array([index[d] for d in result.run_day], dtype=int)
    y = np.array(result.y)
    m = day_multiplicities(n_days, boot.resamples, boot.seed)
    ones = per_day(np.ones(y.size), day, n_days)
    runs_per_day = per_day(np.ones(run_day.size), run_day, n_days)
    systems: dict[str, Any] = {}
    losses: dict[str, np.ndarray] = {}
    for trace in result.traces:
        held = HeldOut(np.array(trace.p), y, day, n_days)
        ll_point, ll_draws = ratio(per_day(held.log_losses(), day, n_days), ones, m)
        losses[trace.name] = ll_draws
        changes = per_day(np.array(trace.tier_changes, dtype=float), day, n_days)
        tc_point, tc_draws = ratio(1000.0 * changes, 2.0 * ones, m)
        row: dict[str, Any] = {
            "log_loss": _ci(ll_point, ll_draws),
            "auc": _auc(held, m),
            "brier": _ci(*brier_draws(held, m)),
            "ece": _ci(*ece_draws(held, m)),
            "tier_changes_per_1000": _ci(tc_point, tc_draws),
            "calibration": [asdict(b) for b in calibration_curve(held.p, y)],
            "daily_log_loss": [
                [day_values[d], float(held.log_losses()[day == d].mean())]
                for d in range(n_days)
                if np.any(day == d)
            ],
            "placed_share_end": trace.placed_share,
            "final_sd": trace.final_sd,
        }
        if run_day.size:
            gain = per_day(np.array(trace.run_gain_sd), run_day, n_days)
            loss = per_day(np.array(trace.run_loss_sd), run_day, n_days)
            row["repeat_gain_sd"] = _ci(*ratio(gain, runs_per_day, m))
            row["repeat_victim_loss_sd"] = _ci(*ratio(loss, runs_per_day, m))
        else:
            row["repeat_gain_sd"] = row["repeat_victim_loss_sd"] = None
        row["log_loss_draws"] = ll_draws  # dropped before writing; used for the differences
        systems[trace.name] = row
    best = min(systems, key=lambda s: systems[s]["log_loss"]["point"])
    for name, row in systems.items():
        diff_point = row["log_loss"]["point"] - systems[best]["log_loss"]["point"]
        row["log_loss_minus_best"] = _ci(diff_point, losses[name] - losses[best])
    for row in systems.values():
        row.pop("log_loss_draws")
    recommendation = recommend(systems, best, current, n_days)
    return {
        "days": n_days,
        "held_out_kills": int(y.size),
        "repeat_runs": int(run_day.size),
        "first_share": float(y.mean()),
        "systems": systems,
        "best": best,
        "recommendation": recommendation,
        "bootstrap": {"resamples": boot.resamples, "seed": boot.seed, "min_days": MIN_DAYS},
    }


def _auc(held: HeldOut, m: np.ndarray) -> dict[str, float] | None:
    """AUC with its interval; None when the held-out kills have one outcome only."""
    try:
        return _ci(*auc_draws(held, m))
    except EvaluationError:
        return None


def recommend(systems: dict[str, Any], best: str, current: str | None, days: int) -> dict[str, Any]:
    """The recommendation: a clear winner, or the tied set and the tie-break's choice."""
    tied = [
        name
        for name, row in systems.items()
        if name == best or row["log_loss_minus_best"]["lo"] <= 0.0
    ]
    if days >= MIN_DAYS and tied == [best]:
        ll = systems[best]["log_loss"]
        line = (
            f"recommended: {best} (held-out log loss {ll['point']:.4f} "
            f"[{ll['lo']:.4f}, {ll['hi']:.4f}]; every other model's paired day-bootstrap "
            "interval of the difference lies above 0)"
        )
        return {"winner": best, "tied": [best], "choice": best, "line": line}
    if days < MIN_DAYS:
        tied = list(systems)
        why = f"the held-out part spans {days} day(s), fewer than {MIN_DAYS}"
    else:
        why = "the paired intervals of " + ", ".join(t for t in tied if t != best)
        why += f" against {best} include 0"
    if current in tied:
        choice = current
    else:
        choice = min(tied, key=lambda s: systems[s]["tier_changes_per_1000"]["point"])
    line = f"no clear winner among {', '.join(tied)} ({why}); tie-break: {TIE_BREAK} -> {choice}"
    return {"winner": None, "tied": tied, "choice": choice, "line": line}
