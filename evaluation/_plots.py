"""The report's PNG figures (matplotlib, Agg backend, small files). Every figure over seeds shows
the mean and, as error bars or bands, the 95% interval; legends sit outside the axes."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

DPI = 80
SIZE = (9.0, 4.4)
# The rating a system starts everyone at (the long-horizon plot shows drift from it).
INITIAL = {"adr": 1000.0, "elo": 1500.0, "glicko2": 1500.0, "trueskill": 25.0, "ladder": 1500.0}


def _style(i: int, name: str) -> dict[str, Any]:
    """Distinct colour and dash per system (more systems than colours); ADR drawn heavier."""
    return {
        "color": f"C{i % 10}",
        "linestyle": "-" if i < 10 else "--",
        "linewidth": 2.0 if name == "adr" else 1.0,
        "label": name,
    }


def _legend(ax: Any) -> None:
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def _axes(ax: Any, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path.name


def _err(ci: dict[str, float] | None) -> tuple[float, float, float]:
    if ci is None:
        return float("nan"), 0.0, 0.0
    return ci["mean"], ci["mean"] - ci["lo"], ci["hi"] - ci["mean"]


def calibration(figures: dict[str, Any], out: Path) -> str:
    """Reliability curves on the held-out events (logistic model, first seed)."""
    fig, ax = plt.subplots(figsize=SIZE)
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    model = next(iter(figures["models"]))
    for i, (name, m) in enumerate(figures["models"][model].items()):
        xs = [b["mean_predicted"] for b in m["calibration"]]
        ys = [b["observed"] for b in m["calibration"]]
        ax.plot(xs, ys, marker="o", markersize=3, **_style(i, name))
    ax.set_xlabel("predicted P(first kills second)")
    ax.set_ylabel("observed frequency")
    ax.set_title(
        f"Calibration on held-out events ({model} outcomes, seed {figures['meta']['seeds'][0]})"
    )
    _legend(ax)
    return _save(fig, out / "calibration.png")


def _dot_whisker(
    figures: dict[str, Any], out: Path, key: str, label: str, file: str, short: str = ""
) -> str:
    """One metric per system and outcome model: mean with its 95% interval."""
    models = list(figures["models"])
    names = list(next(iter(figures["models"].values())))
    fig, ax = plt.subplots(figsize=SIZE)
    width = 0.8 / max(1, len(models))
    for j, model in enumerate(models):
        xs, ys, lo, hi = [], [], [], []
        for i, name in enumerate(names):
            m = figures["models"][model].get(name)
            if m is None:
                continue
            mean, down, up = _err(m["ci"].get(key))
            xs.append(i + (j - (len(models) - 1) / 2) * width)
            ys.append(mean)
            lo.append(down)
            hi.append(up)
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", markersize=4, capsize=3, label=model)
    ax.set_xticks(range(len(names)), names, rotation=40, ha="right", fontsize=8)
    ax.set_ylabel(short or label)
    ax.set_title(f"{label}: mean and 95% interval over {len(figures['meta']['seeds'])} seeds")
    ax.grid(axis="y", linewidth=0.3)
    _legend(ax)
    return _save(fig, out / file)


def log_loss(figures: dict[str, Any], out: Path) -> str:
    return _dot_whisker(figures, out, "log_loss", "held-out log loss (nats)", "log_loss.png")


def convergence(figures: dict[str, Any], out: Path, rho: float) -> str:
    """Events until ρ(rating, hidden skill) first reaches the threshold, with intervals."""
    return _dot_whisker(
        figures, out, "convergence_events", f"events until ρ ≥ {rho:g}", "convergence.png"
    )


def tier_stability(figures: dict[str, Any], out: Path) -> str:
    return _dot_whisker(
        figures,
        out,
        "hyst_tier_changes_per_1000",
        "tier changes / 1000 player-events (common hysteresis rule)",
        "tier_stability.png",
        "tier changes / 1000",
    )


def returning_player(figures: dict[str, Any], out: Path) -> str:
    """§10.6, opponent held: each system's change as a share of its own 50-kill total, so the
    shapes compare across scales (a spike is a large share at one kill)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
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
    _axes(left, "kills after the return", "share of the 50-kill increase",
          "Cumulative change / own total")  # fmt: skip
    _axes(right, "kill", "share of the 50-kill increase", "Per-event change / own total")
    _legend(right)
    return _save(fig, out / "returning_player.png")


def prediction_quality(figures: dict[str, Any], out: Path) -> str:
    """§10.7: rolling log loss and per-block AUC (first seed)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
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
    _axes(left, "events", "log loss (rolling 500)", "Rolling log loss")
    _axes(right, "events (end of block)", "AUC (block of 1000)", "Per-block AUC")
    _legend(right)
    return _save(fig, out / "prediction_quality.png")


def tier_shares(figures: dict[str, Any], out: Path) -> str:
    """Every system's end-of-stream tier shares (mean over seeds) minus the 1/15 target, as a
    heat map: one row per system under the common hysteresis rule, plus ADR's own tiers."""
    from engine import TIER_LABELS

    model = next(iter(figures["models"]))
    rows, labels = [], []
    for name, m in figures["models"][model].items():
        if m["hyst_shares"]:
            rows.append([x - 1 / 15 for x in m["hyst_shares"]])
            labels.append(name)
    adr = figures["models"][model].get("adr")
    if adr is not None and adr["own_shares"]:
        rows.append([x - 1 / 15 for x in adr["own_shares"]])
        labels.append("adr (own tiers)")
    fig, ax = plt.subplots(figsize=(9.0, 0.32 * len(rows) + 1.6))
    limit = max(0.01, max((abs(x) for row in rows for x in row), default=0.01))
    image = ax.imshow(rows, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    ax.set_xticks(range(15), TIER_LABELS, fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_title(f"Tier share − 1/15 at the end ({model} outcomes, mean over seeds)")
    fig.colorbar(image, ax=ax, label="share − 1/15")
    return _save(fig, out / "tier_shares.png")


def long_horizon(figures: dict[str, Any], out: Path) -> str:
    """Three years: drift of the mean rating, ADR's floor, ADR's boundaries, tier-share error."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    (a_mean, a_floor), (a_bounds, a_tv) = axes
    for i, (name, run) in enumerate(figures["long"].items()):
        pts = run["points"]
        days = [p["day"] for p in pts]
        base = INITIAL.get(name.split("-")[0], 0.0)
        sd0 = next((p["sd"]["mean"] for p in pts if p["sd"] and p["sd"]["mean"]), 1.0) or 1.0
        mean = [(p["mean"]["mean"] - base) / sd0 for p in pts]
        lo = [(p["mean"]["lo"] - base) / sd0 for p in pts]
        hi = [(p["mean"]["hi"] - base) / sd0 for p in pts]
        style = _style(i, name)
        a_mean.plot(days, mean, **style)
        a_mean.fill_between(days, lo, hi, color=style["color"], alpha=0.2)
        tv = [p["shares_tv"]["mean"] if p["shares_tv"] else float("nan") for p in pts]
        a_tv.plot(days, tv, **style)
        if pts and pts[0]["at_floor"] is not None:
            for key, dash in (("at_floor", "-"), ("near_floor", "--")):
                ys = [p[key]["mean"] if p[key] else float("nan") for p in pts]
                a_floor.plot(days, ys, color=style["color"], linestyle=dash, label=f"{name} {key}")
            if name == "adr":
                for k in range(14):
                    a_bounds.plot(
                        days,
                        [p["boundaries"][k] if p["boundaries"] else float("nan") for p in pts],
                        color="C0",
                        linewidth=0.8,
                    )
    a_mean.axhline(0.0, color="grey", linestyle=":", linewidth=1)
    a_mean.set_title("mean rating − initial, in first-sample population SDs (95% band)")
    a_floor.set_title("ADR: share at μ_min (solid) / within 1% (dashed)")
    a_bounds.set_title("ADR: the 14 tier boundaries B1..B14 (mean over seeds)")
    a_tv.set_title("tier shares: TV distance to 1/15 (common rule)")
    for ax in (a_mean, a_floor, a_bounds, a_tv):
        ax.set_xlabel("day")
    a_mean.legend(fontsize=7, loc="lower left")
    a_floor.legend(fontsize=7)
    return _save(fig, out / "long_horizon.png")
