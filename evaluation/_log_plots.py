"""The figures of `adr evaluate --events` in the §10 report's style (evaluation/_plots.py):
one point per system with its day-bootstrap 95% interval, reliability curves, daily log loss."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from evaluation._plots import SIZE, _legend, _save, _style  # sets the Agg backend first


def _dot_whisker(summary: dict[str, Any], out: Path, key: str, label: str, file: str) -> str | None:
    names = [n for n, row in summary["systems"].items() if row.get(key) is not None]
    if not names:
        return None
    fig, ax = plt.subplots(figsize=SIZE)
    for i, name in enumerate(names):
        ci = summary["systems"][name][key]
        style = _style(i, name)
        ax.errorbar(
            [i], [ci["point"]], yerr=[[ci["point"] - ci["lo"]], [ci["hi"] - ci["point"]]],
            fmt="o", markersize=4, capsize=3, color=style["color"], label=name,
        )  # fmt: skip
    ax.set_xticks(range(len(names)), names, rotation=40, ha="right", fontsize=8)
    ax.set_ylabel(label)
    ax.set_title(f"{label}: held-out, 95% day-bootstrap interval ({summary['days']} days)")
    ax.grid(axis="y", linewidth=0.3)
    _legend(ax)
    return _save(fig, out / file)


def calibration(summary: dict[str, Any], out: Path) -> str:
    """Reliability curves on the held-out kills."""
    fig, ax = plt.subplots(figsize=SIZE)
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    for i, (name, row) in enumerate(summary["systems"].items()):
        xs = [b["mean_predicted"] for b in row["calibration"]]
        ys = [b["observed"] for b in row["calibration"]]
        ax.plot(xs, ys, marker="o", markersize=3, **_style(i, name))
    ax.set_xlabel("predicted P(first kills second)")
    ax.set_ylabel("observed frequency")
    ax.set_title("Calibration on the held-out kills")
    _legend(ax)
    return _save(fig, out / "calibration.png")


def daily_log_loss(summary: dict[str, Any], out: Path) -> str:
    """Each held-out day's log loss per system: where a system wins or loses over time."""
    fig, ax = plt.subplots(figsize=SIZE)
    start = min(d for row in summary["systems"].values() for d, _ in row["daily_log_loss"])
    for i, (name, row) in enumerate(summary["systems"].items()):
        xs = [d - start for d, _ in row["daily_log_loss"]]
        ax.plot(xs, [v for _, v in row["daily_log_loss"]], marker=".", **_style(i, name))
    first = dt.datetime.fromtimestamp(start * 86400, dt.UTC).date().isoformat()
    ax.set_xlabel(f"UTC day of the held-out part (0 = {first})")
    ax.set_ylabel("log loss (nats)")
    ax.set_title("Held-out log loss per day")
    _legend(ax)
    return _save(fig, out / "daily_log_loss.png")


def write_plots(summary: dict[str, Any], out: Path, quick: bool) -> list[str]:
    """The figures written (file names); --quick: log loss and calibration only."""
    names = [
        _dot_whisker(summary, out, "log_loss", "log loss (nats)", "log_loss.png"),
        calibration(summary, out),
    ]
    if not quick:
        names += [
            _dot_whisker(
                summary, out, "tier_changes_per_1000", "tier changes / 1000 player-events",
                "tier_changes.png",
            ),
            _dot_whisker(
                summary, out, "repeat_gain_sd", "repeat-pair gain (population SDs)",
                "repeat_gain.png",
            ),
            daily_log_loss(summary, out),
        ]  # fmt: skip
    return [n for n in names if n is not None]
