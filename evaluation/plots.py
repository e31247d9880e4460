"""The report's PNG figures (matplotlib, Agg backend, small files)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

DPI = 72
SIZE = (7.5, 4.2)


def _style(i: int, name: str) -> dict[str, Any]:
    """Distinct colour and dash per system (more systems than colours); ADR drawn heavier."""
    return {
        "color": f"C{i % 10}",
        "linestyle": "-" if i < 10 else "--",
        "linewidth": 1.8 if name == "adr" else 0.9,
        "label": name,
    }


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path.name


def calibration(figures: dict[str, Any], out: Path) -> str:
    """Reliability curves on the held-out events."""
    fig, ax = plt.subplots(figsize=SIZE)
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    for i, (name, m) in enumerate(figures["protocol"].items()):
        xs = [b["mean_predicted"] for b in m["calibration"]]
        ys = [b["observed"] for b in m["calibration"]]
        ax.plot(xs, ys, marker="o", markersize=3, **_style(i, name))
    ax.set_xlabel("predicted P(first kills second)")
    ax.set_ylabel("observed frequency")
    ax.set_title("Calibration on held-out events")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, out / "calibration.png")


def convergence(figures: dict[str, Any], out: Path, rho: float) -> str:
    """Rank correlation with the hidden skills over the stream."""
    fig, ax = plt.subplots(figsize=SIZE)
    for i, (name, m) in enumerate(figures["protocol"].items()):
        xs = [p[0] for p in m["rho_curve"]]
        ys = [p[1] for p in m["rho_curve"]]
        ax.plot(xs, ys, **_style(i, name))
    ax.axhline(rho, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("events processed")
    ax.set_ylabel("Spearman ρ (rating, hidden skill)")
    ax.set_title("Convergence")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, out / "convergence.png")


def returning_player(figures: dict[str, Any], out: Path) -> str:
    """§10.6, opponent held: each system's change as a share of its own 50-kill total, so the
    shapes compare across scales (a spike is a large share at one kill)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    for row in figures["section_10_6"]["ours"]:
        if not row["opponent_fixed"]:
            continue
        ratings = row["ratings"]
        label = f"{row['system']} {row['variant']}".strip()
        total = ratings[-1] - ratings[0] or 1.0
        share = [(r - ratings[0]) / total for r in ratings]
        steps = [(b - a) / total for a, b in itertools.pairwise(ratings)]
        left.plot(range(len(share)), share, linewidth=1, label=label)
        right.plot(range(1, len(steps) + 1), steps, linewidth=1, label=label)
    left.set_xlabel("kills after the return")
    left.set_ylabel("share of the 50-kill increase")
    left.set_title("Cumulative change / own total")
    right.set_xlabel("kill")
    right.set_ylabel("share of the 50-kill increase")
    right.set_title("Per-event change / own total")
    left.legend(fontsize=6)
    return _save(fig, out / "returning_player.png")


def prediction_quality(figures: dict[str, Any], out: Path) -> str:
    """§10.7: rolling log loss and per-block AUC."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    for name, c in figures["section_10_7"].items():
        left.plot(
            [p[0] for p in c["rolling_log_loss"]],
            [p[1] for p in c["rolling_log_loss"]],
            linewidth=1,
            label=name,
        )
        right.plot(
            [p[0] for p in c["block_auc"]],
            [p[1] for p in c["block_auc"]],
            marker="o",
            markersize=3,
            linewidth=1,
            label=name,
        )
    left.set_xlabel("events")
    left.set_ylabel("log loss (rolling 500)")
    left.set_title("Rolling log loss")
    right.set_xlabel("events (end of block)")
    right.set_ylabel("AUC (block of 1000)")
    right.set_title("Per-block AUC")
    left.legend(fontsize=7)
    return _save(fig, out / "prediction_quality.png")


def tier_shares(figures: dict[str, Any], out: Path) -> str:
    """ADR's own tier shares and quantile-tier shares against the 1/15 target."""
    from engine import TIER_LABELS

    fig, ax = plt.subplots(figsize=SIZE)
    xs = list(range(15))
    adr = figures["protocol"].get("adr")
    width = 0.4
    if adr is not None and adr["own_shares"] is not None:
        ax.bar([x - width / 2 for x in xs], adr["own_shares"], width, label="ADR own tiers")
        ax.bar(
            [x + width / 2 for x in xs],
            adr["quantile_shares"],
            width,
            label="ADR μ, quantile tiers",
        )
    ax.axhline(1 / 15, color="grey", linestyle=":", linewidth=1, label="target 1/15")
    ax.set_xticks(xs, TIER_LABELS)
    ax.set_ylabel("share of active placed players")
    ax.set_title("Tier shares at the end of the stream")
    ax.legend(fontsize=7)
    return _save(fig, out / "tier_shares.png")
