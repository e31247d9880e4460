"""`adr evaluate --generalize`: the study end to end on a tiny run, its targets and its report."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from evaluation._generalize import newcomer_flags, run_generalization, targets
from evaluation._generalize_report import render
from evaluation._generators import generate_setting
from evaluation._settings import setting

REPO = Path(__file__).resolve().parents[2]


def test_a_tiny_study_measures_every_pace_and_checks_the_targets() -> None:
    tiny = dataclasses.replace(
        setting("newcomer-stream"), events=800, farm_paces_s=(65, 3600), accounts=60
    )
    seen: list[int] = []
    figures = run_generalization(
        (1, 2),
        (tiny,),
        ("adr-general", "glicko2"),
        1,
        lambda label, done, total: seen.append(done),
        long_days=None,
    )
    assert seen[-1] == 4
    table = figures["settings"]["newcomer-stream"]
    keys = set(table["adr-general"]["ci"])
    for pattern in ("alt-65s", "alt-3600s", "weak-65s", "weak-3600s"):
        assert f"farm_{pattern}_gain_sd" in keys
    assert table["glicko2"]["ci"]["log_loss"]["n"] == 2
    row = figures["targets"]["adr-general"]["held_out"]["newcomer-stream"]
    assert row["best_baseline"] == "glicko2"
    assert row["log_loss_met"] == (row["log_loss"] <= row["best_interval"]["hi"])
    farm = row["farming"]
    assert row["farming_met"] == all(v["adr"] <= v["glicko2"] for v in farm.values())
    report = render(figures)
    assert "newcomer-stream (held-out)" in report and "farming alt-3600s" in report


def test_targets_mark_a_miss_as_not_met() -> None:
    def ci(mean: float) -> dict[str, float]:
        return {"mean": mean, "lo": mean - 0.01, "hi": mean + 0.01, "n": 10}

    figures = {
        "meta": {"systems": ["adr-general", "glicko2"]},
        "settings": {
            "s": {
                "adr-general": {"ci": {"log_loss": ci(0.60), "hyst_tier_changes_per_1000": ci(9.0),
                                       "farm_alt-65s_gain_sd": ci(0.1),
                                       "farm_alt-605s_gain_sd": ci(0.5)}},
                "glicko2": {"ci": {"log_loss": ci(0.55), "hyst_tier_changes_per_1000": ci(10.0),
                                   "farm_alt-65s_gain_sd": ci(0.2),
                                   "farm_alt-605s_gain_sd": ci(0.3)}},
            }
        },
        "long": {},
    }  # fmt: skip
    row = targets(figures, ["s"])["adr-general"]["held_out"]["s"]
    assert not row["log_loss_met"] and not row["farming_met"] and row["tiers_met"]


def test_newcomer_pairs_are_those_with_a_player_under_30_events() -> None:
    s = generate_setting(dataclasses.replace(setting("uniform-logistic"), events=3_000), 1)
    import numpy as np

    flags = newcomer_flags(s, np.arange(len(s.events)))
    assert flags[0] and not flags[-1]


def test_cli_refuses_flags_that_do_not_apply(tmp_path: Path) -> None:
    for extra in (["--param", "nope=1"], ["--settings", "both"], ["--systems", "nope"]):
        done = subprocess.run(
            [sys.executable, "-m", "adr_cli", "evaluate", "--generalize", "--out",
             str(tmp_path), *extra],
            cwd=REPO, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
