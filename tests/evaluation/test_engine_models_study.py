"""`adr evaluate --generalize --engine-models`: every engine model on the generator family, the
per-model wins and losses, and the docs that quote them (reports/models).

The committed report must be what its figures render to, and the per-model lines of
docs/evaluation.md and the README's per-model table must be lines of that report, so the prose
cannot drift from what was run."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evaluation._generalize import (
    ENGINE_MODELS,
    ENGINE_SYSTEMS,
    build_system,
    engine_models_meta,
    run_generalization,
)
from evaluation._generalize_report import per_model, ranks, render
from evaluation._settings import setting

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "reports" / "models"
DOC_START = "## Every engine model: where it wins and where it loses"


def _ci(mean: float) -> dict[str, float]:
    return {"mean": mean, "lo": mean - 0.01, "hi": mean + 0.01, "n": 3}


def test_every_engine_model_runs_as_its_pool_would() -> None:
    """The study's systems are the registry's models with the pool's rules: fixed, FIDE and
    USCF K for elo; a repeat inside the cooldown changes nothing (no error, as ADR's book)."""
    assert {model for model, _ in ENGINE_MODELS.values()} == {
        "elo", "glicko2", "trueskill", "weng-lin",
    }  # fmt: skip
    rules = {name: o.get("k_rule", "fixed") for name, (m, o) in ENGINE_MODELS.items() if m == "elo"}
    assert sorted(rules.values()) == ["fide", "fixed", "uscf"]
    for name in ENGINE_MODELS:
        system = build_system(name)
        system.update("a", "b", 1_000_000)
        before = system.rating("a")
        system.update("a", "b", 1_000_001)  # inside the 60 s cooldown: a duplicate
        assert system.rating("a") == before
        assert system.predict("a", "b", 2_000_000) > 0.5


def test_a_tiny_study_ranks_every_model_on_every_setting() -> None:
    tiny = tuple(
        dataclasses.replace(setting(n), events=500, farm_paces_s=(65, 3600), accounts=40)
        for n in ("uniform-logistic", "newcomer-stream")
    )
    figures = run_generalization((1, 2), tiny, ENGINE_SYSTEMS, 1, lambda *a: None, None)
    figures["meta"]["engine_models"] = engine_models_meta()
    for name in ("uniform-logistic", "newcomer-stream"):
        table = figures["settings"][name]
        assert list(table) == list(ENGINE_SYSTEMS)
        for row in table.values():
            for key in ("log_loss", "auc", "ece", "hyst_tier_changes_per_1000", "farming_max_sd"):
                assert row["ci"][key]["n"] == 2, key
    report = render(figures)
    assert "held-out settings (newcomer-stream)" in report
    assert "tuning settings (uniform-logistic)" in report
    assert "## Targets" not in report  # the issue-29 targets need the suite's Glicko-2


def test_ranks_put_the_best_first_whichever_way_better_points() -> None:
    table = {
        "x": {"ci": {"log_loss": _ci(0.6), "auc": _ci(0.7)}},
        "y": {"ci": {"log_loss": _ci(0.5), "auc": _ci(0.8)}},
        "z": {"ci": {"log_loss": _ci(0.7)}},
    }
    assert ranks(table, "log_loss", higher=False) == {"y": 1, "x": 2, "z": 3}
    assert ranks(table, "auc", higher=True) == {"y": 1, "x": 2}
    figures = {
        "meta": {
            "systems": ["x", "y", "z"],
            "settings": {"s": {"split": "held-out"}},
        },
        "settings": {"s": table},
    }
    lines = per_model(figures)
    assert "- **y**: first in 2, last in 0." in lines
    assert any(line.startswith("  - last: log loss on s (held-out): 0.7000") for line in lines)


def test_cli_runs_engine_models_only_with_generalize(tmp_path: Path) -> None:
    for extra in (["--engine-models"], ["--generalize", "--engine-models", "--systems", "adr"]):
        done = subprocess.run(
            [sys.executable, "-m", "adr_cli", "evaluate", "--out", str(tmp_path), *extra],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "--engine-models" in done.stderr


def _committed() -> tuple[dict[str, Any], str]:
    if not (REPORT / "figures.json").exists():
        pytest.fail("reports/models is not committed")
    return json.loads((REPORT / "figures.json").read_text()), (REPORT / "report.md").read_text()


def test_the_committed_report_is_what_its_figures_render_to() -> None:
    figures, report = _committed()
    assert render(figures) == report
    assert "--engine-models" in figures["meta"]["command"]
    assert figures["meta"]["systems"] == list(ENGINE_SYSTEMS)
    splits = {s["split"] for s in figures["meta"]["settings"].values()}
    assert splits == {"tuning", "held-out"}  # every setting of the family, both splits
    assert len(figures["meta"]["settings"]) == 8


def _section(text: str, start: str) -> str:
    begin = text.index(start)
    end = text.find("\n## ", begin + 1)
    return text[begin : end if end > 0 else len(text)]


def test_the_docs_per_model_lines_are_lines_of_the_report() -> None:
    _, report = _committed()
    lines = set(report.splitlines())
    doc = _section((ROOT / "docs" / "evaluation.md").read_text(), DOC_START)
    quoted = [
        line.strip()
        for line in doc.splitlines()
        if line.lstrip().startswith(("- first:", "- last:", "| engine:", "| adr"))
    ]
    assert len(quoted) >= 18  # every model, both ways
    stripped = {line.strip() for line in lines}
    missing = [line for line in quoted if line not in stripped]
    assert not missing, f"not lines of reports/models/report.md: {missing}"


def test_the_readme_per_model_table_is_the_reports() -> None:
    _, report = _committed()
    readme = (ROOT / "README.md").read_text()
    section = _section(readme, "## What the evaluation found")
    rows = [line for line in section.splitlines() if line.startswith(("| engine:", "| adr"))]
    assert len(rows) == len(ENGINE_SYSTEMS)
    assert all(row in report.splitlines() for row in rows)
