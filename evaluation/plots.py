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


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path.name


def calibration(figures: dict[str, Any], out: Path) -> str:
    """Reliability curves on the held-out events."""
    fig, ax = plt.subplots(figsize=SIZE)
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    for name, m in figures["protocol"].items():
        xs = [b["mean_predicted"] for b in m["calibration"]]
        ys = [b["observed"] for b in m["calibration"]]
        ax.plot(
            xs, ys, marker="o", markersize=3, linewidth=1.2 if name == "adr" else 0.8, label=name
        )
    ax.set_xlabel("predicted P(first kills second)")
    ax.set_ylabel("observed frequency")
    ax.set_title("Calibration on held-out events")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, out / "calibration.png")


def convergence(figures: dict[str, Any], out: Path, rho: float) -> str:
    """Rank correlation with the hidden skills over the stream."""
    fig, ax = plt.subplots(figsize=SIZE)
    for name, m in figures["protocol"].items():
        xs = [p[0] for p in m["rho_curve"]]
        ys = [p[1] for p in m["rho_curve"]]
        ax.plot(xs, ys, linewidth=1.5 if name == "adr" else 0.8, label=name)
    ax.axhline(rho, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("events processed")
    ax.set_ylabel("Spearman ρ (rating, hidden skill)")
    ax.set_title("Convergence")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, out / "convergence.png")


def returning_player(figures: dict[str, Any], out: Path) -> str:
    """§10.6: cumulative and per-event change, opponent held at 2000."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    for row in figures["section_10_6"]["ours"]:
        if not row["opponent_fixed"]:
            continue
        ratings = row["ratings"]
        label = f"{row['system']} {row['variant']}".strip()
        # TrueSkill's 15-point gap (25 vs 40) stands for the 1000-point gap of the others
        scale = figures["section_10_6"]["trueskill_scale"] if row["system"] == "trueskill" else 1.0
        total = [(r - ratings[0]) * scale for r in ratings]
        steps = [(b - a) * scale for a, b in itertools.pairwise(ratings)]
        left.plot(range(len(total)), total, linewidth=1, label=label)
        right.plot(range(1, len(steps) + 1), steps, linewidth=1, label=label)
    left.set_xlabel("kills after the return")
    left.set_ylabel("change since before the absence")
    left.set_title("Cumulative change (TrueSkill rescaled)")
    right.set_xlabel("kill")
    right.set_ylabel("change at this kill")
    right.set_title("Per-event change (TrueSkill rescaled)")
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
