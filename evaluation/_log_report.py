"""The report of `adr evaluate --events`: DIR/report.md, DIR/evaluation.json, DIR/*.png, and the
summary printed on stdout."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from evaluation._log_metrics import MIN_DAYS, TIE_BREAK
from evaluation._log_plots import write_plots
from evaluation._report import _table

COLUMNS = (
    ("log_loss", "log loss", 4),
    ("log_loss_minus_best", "− best", 4),
    ("auc", "AUC", 4),
    ("brier", "Brier", 4),
    ("ece", "ECE", 4),
    ("tier_changes_per_1000", "tier changes / 1000", 1),
    ("repeat_gain_sd", "repeat gain (SD)", 3),
    ("repeat_victim_loss_sd", "victim loss (SD)", 3),
)


def ci(d: dict[str, float] | None, digits: int) -> str:
    if d is None:
        return "–"
    return f"{d['point']:.{digits}f} [{d['lo']:.{digits}f}, {d['hi']:.{digits}f}]"


def _day(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def write_log_report(report: dict[str, Any], out: Path, quick: bool) -> list[Path]:
    """Write the report files into `out`; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    pngs = write_plots(report["summary"], out, quick)
    report["meta"]["figures"] = pngs
    (out / "evaluation.json").write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    (out / "report.md").write_text("\n".join(markdown(report)) + "\n")
    return [out / "report.md", out / "evaluation.json", *(out / p for p in pngs)]


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The stdout summary: input counts, one line per system, the recommendation."""
    meta, s = report["meta"], report["summary"]
    bad = sum(meta["bad_records"].values())
    lines = [
        f"events: {meta['records']} records, {bad} bad (skipped), "
        f"{meta['verdicts'].get('counted', 0)} counted; held out: {s['held_out_kills']} kills "
        f"over {s['days']} days, {s['repeat_runs']} repeat-pair runs",
        "system\tlog_loss [95%]\tAUC\tECE\ttier_changes/1000\trepeat_gain_sd",
    ]
    for name, row in s["systems"].items():
        cells = [name, ci(row["log_loss"], 4), ci(row["auc"], 4), ci(row["ece"], 4),
                 ci(row["tier_changes_per_1000"], 1), ci(row["repeat_gain_sd"], 3)]  # fmt: skip
        lines.append("\t".join(cells))
    lines.append(s["recommendation"]["line"])
    return lines


def markdown(report: dict[str, Any]) -> list[str]:
    meta, s, opts = report["meta"], report["summary"], report["meta"]["options"]
    boot = s["bootstrap"]
    lines = [
        f"# Rating models on `{meta['file']}`",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"**{s['recommendation']['line']}**",
        "",
        "## Held-out figures",
        "",
        f"Held out: the counted kills at or after {_day(meta['split_ts'])} (the last "
        f"{opts['holdout']:.0%} of the log's time span), {s['held_out_kills']} kills over "
        f"{s['days']} UTC days. Each figure is `value [95% interval]`, the interval from "
        f"{boot['resamples']} day-bootstrap resamples (seed {boot['seed']}). `− best` is the "
        "paired difference of log loss to the best system's on the same resamples.",
        "",
    ]
    header = ["system", *(label for _, label, _ in COLUMNS)]
    rows = [
        [f"`{name}`", *(ci(row[key], digits) for key, _, digits in COLUMNS)]
        for name, row in s["systems"].items()
    ]
    lines += _table(header, rows)
    lines += ["Systems:", ""]
    lines += [f"- `{name}`: {what}" for name, what in meta["systems"].items()]
    lines += ["", "## Calibration (reliability table, held-out kills)", ""]
    for name, row in s["systems"].items():
        lines += [f"`{name}` (ECE {ci(row['ece'], 4)}):", ""]
        lines += _table(
            ["predicted in", "kills", "mean predicted", "observed"],
            [[f"[{b['lo']:.1f}, {b['hi']:.1f})", str(b["count"]), f"{b['mean_predicted']:.3f}",
              f"{b['observed']:.3f}"] for b in row["calibration"]],
        )  # fmt: skip
    lines += ["## The log", ""]
    lines += [
        f"- File `{meta['file']}` ({meta['format']}): {meta['records']} records, "
        f"{sum(meta['bad_records'].values())} bad, "
        f"{meta['good']} good.",
        f"- Time span {_day(meta['first_ts'])} to {_day(meta['last_ts'])}; {meta['players']} "
        f"players with a counted kill; order: {opts['order']}.",
        "- What the consumer's counting rules made of the good records: "
        + ", ".join(f"{k} {v}" for k, v in meta["verdicts"].items())
        + ".",
        f"- Repeat-pair runs in the held-out part: {s['repeat_runs']} (kills per run: "
        f"{meta['repeat_kills']}; counted: {meta['repeat_counted']}).",
        "",
    ]
    if meta["bad_records"]:
        lines += ["Bad records, skipped (reason: count, first examples by line/record number):", ""]
        lines += _table(
            ["reason", "records", "examples"],
            [[r, str(n), "; ".join(meta["bad_examples"].get(r, [])).replace("|", "\\|")]
             for r, n in sorted(meta["bad_records"].items())],
        )  # fmt: skip
    if meta["unread_bytes"]:
        lines += [
            f"The last {meta['unread_bytes']} bytes of the msgpack stream were unreadable.",
            "",
        ]
    lines += _method(meta, s)
    lines += ["## Figures", ""]
    lines += [f"![{p}]({p})" for p in meta["figures"]]
    return lines


def _method(meta: dict[str, Any], s: dict[str, Any]) -> list[str]:
    opts = meta["options"]
    return [
        "## Method",
        "",
        "- **Counting rules.** The consumer's own code (redis_layout/event_ids.py: the engine's "
        "RatingBook and the event-id rule) decides which good records count: self-kills, bad "
        f"times and events more than {opts['lateness_ms'] / 1000:g} s behind the watermark are "
        "rejected, an a→b kill inside the pair's cooldown is a duplicate, a resent id is a "
        "duplicate and a reused id is rejected. Every system sees exactly the counted kills.",
        "- **Predict, then update.** In order, each system predicts each counted kill and then "
        "learns from it. Only the held-out kills' predictions are scored; the systems keep "
        "learning through the held-out part. Each kill is oriented by one bit of BLAKE2b of its "
        "event id: the system predicts P(first kills second) and the outcome is whether first "
        f"was the attacker ({s['first_share']:.3f} of the held-out kills).",
        "- **Log loss** (nats, lower is better), **AUC** (probability that a kill won by the "
        "first player got a higher prediction than one it lost; 0.5 is chance), **Brier** "
        "(mean squared error of the probability), **ECE** (expected calibration error: the "
        "kill-weighted mean |observed − predicted| over ten equal-width bins).",
        "- **Tier changes** per 1,000 player-events, one rule for every system: 15 quantile "
        f"tiers on the system's own ratings of the active players, recalibrated every "
        f"{opts['tier_calibrate_every_ms'] / 3_600_000:g} h of event time, and §6.4's "
        f"hysteresis with the threshold at {opts['hysteresis_sd']:g} of the system's own "
        "population SD (evaluation/_common_tiers.py, as the §10 report).",
        "- **Repeat-pair gain**: a run is a sequence of kills of one victim by one attacker "
        f"(counted or dropped by the cooldown), each within {opts['repeat_gap_ms'] / 1000:g} s "
        f"of the one before, at least {opts['repeat_min_kills']} kills, starting in the "
        "held-out part. The gain is the sum of the attacker's rating changes on the run's "
        "counted kills, in the system's population SD at the run's start (victim loss: the "
        "victim's). It is what a pair of accounts farming each other earns (the §10 report's "
        "farming measure, on runs found in the log instead of planted ones).",
        "- **Intervals**: a block bootstrap over whole UTC days of the held-out part. Each "
        "resample draws as many days as there are, with replacement; every figure is "
        "recomputed on the drawn days' kills and runs; the interval is the 2.5% and 97.5% "
        "percentiles. All systems share the resamples, so differences are paired. Within-day "
        "dependence is kept, dependence across days is not resampled, and with few days the "
        "intervals are rough.",
        f"- **Recommendation**: the system with the lowest held-out log loss when every other "
        f"system's paired interval of (its log loss − the best's) lies above 0 and the "
        f"held-out part spans at least {MIN_DAYS} days; otherwise no clear winner, and the "
        f"tie-break: {TIE_BREAK}.",
        "",
    ]
