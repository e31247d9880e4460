"""report.md of `adr evaluate --generalize`, rendered from its figures (plain data) only."""

from __future__ import annotations

from typing import Any

ROWS = (
    ("log_loss", "held-out log loss", 4),
    ("log_loss_newcomer", "… pairs with a newcomer", 4),
    ("log_loss_established", "… established pairs", 4),
    ("hyst_tier_changes_per_1000", "tier changes / 1,000 (common rule)", 1),
    ("final_rho", "final ρ with hidden skill", 3),
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


def render(figures: dict[str, Any]) -> str:
    """The whole report as Markdown."""
    meta = figures["meta"]
    seeds = meta["seeds"]
    lines = [
        "# ADR on streams it was not tuned on (issue 29)",
        "",
        f"Command: `{meta.get('command', 'adr evaluate --generalize')}`; "
        f"run time {meta.get('runtime_s', 0):.0f} s. Every figure is mean [95% t interval] over "
        f"the seeds {', '.join(map(str, seeds))} ({len(seeds)} streams per setting). Tuned "
        f"baselines keep the values `adr evaluate` chose on its own tuning seed "
        f"({meta['fixed_tuning']}); ADR variants: "
        + "; ".join(f"`{k}` = {v or 'the paper'}" for k, v in meta["adr_variants"].items())
        + ".",
        "",
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
                f"[{iv['lo']:.4f}, {iv['hi']:.4f}]: {'met' if t['log_loss_met'] else 'not met'} "
                f"| {'met' if t['farming_met'] else 'not met: ' + ', '.join(over)} "
                f"| {t['tier_changes']:.1f} vs {t['tier_changes_glicko2']:.1f}: "
                f"{'met' if t['tiers_met'] else 'not met'} |"
            )
    lines += ["", "## Three simulated years", ""]
    long_cfg = meta.get("long_setting")
    if not long_cfg:
        lines.append("Not run (`--no-long`, or tuning settings only).")
    else:
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
