"""report.md of `adr evaluate --generalize`, rendered from its figures (plain data) only."""

from __future__ import annotations

from typing import Any

ROWS = (
    ("log_loss", "held-out log loss", 4),
    ("log_loss_newcomer", "… pairs with a newcomer", 4),
    ("log_loss_established", "… established pairs", 4),
    ("auc", "held-out AUC", 4),
    ("ece", "held-out calibration error (ECE)", 4),
    ("hyst_tier_changes_per_1000", "tier changes / 1,000 (common rule)", 1),
    ("final_rho", "final ρ with hidden skill", 3),
    ("farming_max_sd", "farming, the farmer's best pace (SD)", 3),
)
# What the per-model section ranks the systems on: key, label, digits, higher is better.
RANKED = (
    ("log_loss", "log loss", 4, False),
    ("auc", "AUC", 4, True),
    ("ece", "ECE", 4, False),
    ("hyst_tier_changes_per_1000", "tier changes / 1,000", 1, False),
    ("farming_max_sd", "farming (best pace, SD)", 3, False),
)


def _ci(ci: dict[str, Any] | None, digits: int) -> str:
    if ci is None:
        return "–"
    return f"{ci['mean']:.{digits}f} [{ci['lo']:.{digits}f}, {ci['hi']:.{digits}f}]"


def _paces(table: dict[str, Any]) -> list[str]:
    keys = {k for row in table.values() for k in row["ci"] if k.endswith("_gain_sd")}

    def order(key: str) -> tuple[str, int]:
        kind, pace = key.removeprefix("farm_").removesuffix("_gain_sd").split("-")
        return kind, int(pace.removesuffix("s"))

    return sorted(keys, key=order)


def ranks(table: dict[str, Any], key: str, higher: bool) -> dict[str, int]:
    """1 for the best mean of `key` among the systems of one setting, 2 for the next, ...
    (systems without a value are left out)."""
    values = {sy: row["ci"][key]["mean"] for sy, row in table.items() if row["ci"].get(key)}
    order = sorted(values, key=lambda sy: -values[sy] if higher else values[sy])
    return {sy: i + 1 for i, sy in enumerate(order)}


def per_model(figures: dict[str, Any]) -> list[str]:
    """Where each system wins and loses: per split, how often it is best on each ranked metric
    and its mean rank, then the setting-by-setting firsts and lasts with their figures."""
    meta = figures["meta"]
    settings = figures["settings"]
    systems = list(meta["systems"])
    lines = [
        "## Every system: where it wins and where it loses",
        "",
        "Ranked by mean over the seeds on each setting (1 = best; lower is better except AUC). "
        "A cell reads `best on k of n · mean rank r` over the settings of the split; "
        f"{len(systems)} systems, so rank {len(systems)} is the last.",
    ]
    for split in ("held-out", "tuning"):
        names = [n for n in settings if meta["settings"][n]["split"] == split]
        if not names:
            continue
        lines += ["", f"### {split} settings ({', '.join(names)})", ""]
        lines += ["| system | " + " | ".join(label for _, label, _, _ in RANKED) + " |"]
        lines += ["|---" * (len(RANKED) + 1) + "|"]
        table_ranks = {
            (n, key): ranks(settings[n], key, higher) for n in names for key, _, _, higher in RANKED
        }
        for sy in systems:
            cells = []
            for key, _, _, _ in RANKED:
                got = [table_ranks[(n, key)][sy] for n in names if sy in table_ranks[(n, key)]]
                firsts = sum(1 for r in got if r == 1)
                mean = sum(got) / len(got) if got else float("nan")
                cells.append(f"best on {firsts} of {len(got)} · mean rank {mean:.1f}")
            lines.append(f"| {sy} | " + " | ".join(cells) + " |")
    lines += ["", "### Firsts and lasts, setting by setting", ""]
    for sy in systems:
        wins: list[str] = []
        losses: list[str] = []
        for n, table in settings.items():
            split = meta["settings"][n]["split"]
            for key, label, digits, higher in RANKED:
                order = ranks(table, key, higher)
                if sy not in order:
                    continue
                mine = _ci(table[sy]["ci"][key], digits)
                if order[sy] == 1:
                    second = next((s for s, r in order.items() if r == 2), None)
                    runner = f"; next {second} {_ci(table[second]['ci'][key], digits)}"
                    wins.append(f"{label} on {n} ({split}): {mine}{runner if second else ''}")
                elif order[sy] == len(order):
                    best = next(s for s, r in order.items() if r == 1)
                    losses.append(
                        f"{label} on {n} ({split}): {mine}; best {best} "
                        f"{_ci(table[best]['ci'][key], digits)}"
                    )
        lines.append(f"- **{sy}**: first in {len(wins)}, last in {len(losses)}.")
        lines += [f"  - first: {w}" for w in wins]
        lines += [f"  - last: {loss}" for loss in losses]
    return lines


def render(figures: dict[str, Any]) -> str:
    """The whole report as Markdown."""
    meta = figures["meta"]
    seeds = meta["seeds"]
    engine = meta.get("engine_models")
    title = (
        "# Every engine model on the generator family (issue 28)"
        if engine
        else "# ADR on streams it was not tuned on (issue 29)"
    )
    lines = [
        title,
        "",
        f"Command: `{meta.get('command', 'adr evaluate --generalize')}`; "
        f"run time {meta.get('runtime_s', 0):.0f} s. Every figure is mean [95% t interval] over "
        f"the seeds {', '.join(map(str, seeds))} ({len(seeds)} streams per setting)."
        + (
            ""
            if engine
            else " Tuned baselines keep the values `adr evaluate` chose on its own tuning seed "
            f"({meta['fixed_tuning']}); ADR variants: "
            + "; ".join(f"`{k}` = {v or 'the paper'}" for k, v in meta["adr_variants"].items())
            + "."
        ),
        "",
    ]
    if engine:
        lines += [
            "Engine systems (`adr evaluate --generalize --engine-models`): each engine model at "
            "its defaults as a pool runs it (engine.ModelBook; ADR and its profiles through "
            "engine.RatingBook, the same states), the pool's 60 s cooldown for all; every "
            "rating figure (farming, tier changes) is on the model's display rating, the one "
            "ranks and tiers use (μ − 3σ for trueskill and weng-lin). "
            + "; ".join(
                f"`{name}` = {row['model']} {row['overrides'] or 'defaults'}, snapshot every "
                f"{row['calibrate_every_ms'] // 3_600_000} h"
                for name, row in engine.items()
            )
            + ".",
            "",
        ]
    if not engine:  # the issue-29 targets need the suite's Glicko-2 baseline
        lines += [
            "## Targets (judged on the held-out settings; on tuning settings: what was tuned on)",
            "",
            "| variant | setting | log loss (best baseline's interval) | farming ≤ Glicko-2 at "
            "every pace | tier changes ≤ Glicko-2's |",
            "| --- | --- | --- | --- | --- |",
        ]
        for variant, row in figures["targets"].items():
            for name, t in row["held_out"].items():
                iv = t["best_interval"]
                over = [
                    k.removeprefix("farm_").removesuffix("_gain_sd")
                    for k, v in t["farming"].items()
                    if v["adr"] is not None and v["glicko2"] is not None and v["adr"] > v["glicko2"]
                ]
                lines.append(
                    f"| {variant} | {name} ({meta['settings'][name]['split']}) | "
                    f"{t['log_loss']:.4f} vs {t['best_baseline']} "
                    f"[{iv['lo']:.4f}, {iv['hi']:.4f}]: "
                    f"{'met' if t['log_loss_met'] else 'not met'} "
                    f"| {'met' if t['farming_met'] else 'not met: ' + ', '.join(over)} "
                    f"| {t['tier_changes']:.1f} vs {t['tier_changes_glicko2']:.1f}: "
                    f"{'met' if t['tiers_met'] else 'not met'} |"
                )
    if engine:
        lines += per_model(figures)
    long_cfg = meta.get("long_setting")
    if not long_cfg:
        if not engine:
            lines += ["", "## Three simulated years", ""]
            lines.append("Not run (`--no-long`, or tuning settings only).")
    else:
        lines += ["", "## Three simulated years", ""]
        lines.append(
            f"Setting `{long_cfg['name']}`: {long_cfg['days']} days, {long_cfg['events']} "
            f"kills, {long_cfg['accounts']} accounts. Mean rating of the rated players (first "
            "sample, day 30, and at the end), and the share on and near μ_min at the end."
        )
        lines += [
            "",
            "| system | mean, day 30 | mean, end | end − day 30 | SD, end | on μ_min | within 1% "
            "of it |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, row in figures["long"].items():
            ci = row["ci"]
            drift = figures["targets"].get(name, {}).get("long") or {}
            lines.append(
                f"| {name} | {_ci(ci.get('start_mean'), 1)} | {_ci(ci.get('end_mean'), 1)} | "
                f"{_ci(drift.get('end_minus_start'), 1)} | {_ci(ci.get('end_sd'), 1)} | "
                f"{_ci(ci.get('end_at_floor'), 4)} | "
                f"{_ci(ci.get('end_near_floor'), 4)} |"
            )
    for name, table in figures["settings"].items():
        s = meta["settings"][name]
        systems = list(table)
        lines += ["", f"## {name} ({s['split']})", "", s["about"] + ".", ""]
        lines += ["| | " + " | ".join(systems) + " |", "|---" * (len(systems) + 1) + "|"]
        for key, label, digits in ROWS:
            cells = [_ci(table[sy]["ci"].get(key), digits) for sy in systems]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        for key in _paces(table):
            label = key.removeprefix("farm_").removesuffix("_gain_sd")
            cells = [_ci(table[sy]["ci"].get(key), 3) for sy in systems]
            lines.append(f"| farming {label} (SD) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
