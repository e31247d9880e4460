"""`adr evaluate` end to end on a tiny stream, and the ADR adapter against the engine."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from adr_cli.main import main
from engine import Params, RatingBook
from evaluation.adr_system import AdrSystem
from evaluation.systems import RatingSystem

DAY = 86_400_000


def test_adr_adapter_is_the_engine_book() -> None:
    # Same events into the adapter and into a bare RatingBook: same predictions, same state.
    adr = AdrSystem()
    book = RatingBook(Params(), calibrate_every_ms=adr.calibrate_every_ms)
    assert isinstance(adr, RatingSystem)
    events = [("a", "b", 0), ("a", "b", 1_000), ("b", "c", 2 * DAY), ("c", "a", 3 * DAY)]
    for a, b, ts in events:
        assert adr.predict(a, b, ts) == book.predict(a, b, ts)
        adr.update(a, b, ts)
        book.apply("", a, b, ts)
    assert book.duplicates == 1  # the repeat a→b inside the 60 s cooldown changed nothing
    for p in ("a", "b", "c"):
        state = book.player(p)
        assert state is not None
        assert adr.rating(p) == state.mu
        assert adr.tier(p) == state.tier
    assert adr.rating("never-seen") == Params().mu0
    assert adr.tier("never-seen") == 0


def test_evaluate_writes_report_figures_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "report"
    rc = main(["evaluate", "--players", "30", "--events", "2000", "--jobs", "2", "--out", str(out)])
    assert rc == 0
    report = (out / "report.md").read_text()
    figures = json.loads((out / "figures.json").read_text())
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == [
        "calibration.png",
        "convergence.png",
        "prediction_quality.png",
        "returning_player.png",
        "tier_shares.png",
    ]
    for png in pngs:
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"({png})" in report
    assert figures["meta"]["stream"]["seed"] == 1
    assert figures["meta"]["stream"]["players"] == 30
    systems = list(figures["protocol"])
    assert systems[:2] == ["adr", "adr-no-cooldown"]
    assert {"elo-k32", "elo-fide", "elo-uscf", "glicko2", "trueskill"} <= set(systems)
    for name, m in figures["protocol"].items():
        assert 0.0 < m["log_loss"] < 2.0, name
        assert 0.5 < m["auc"] <= 1.0, name
        assert f"`{name}`" in report
    # §10.6: our Elo number beside the paper's, which it reproduces (K 32, opponent held)
    elo = next(r for r in figures["section_10_6"]["ours"] if r["system"] == "elo-k32")
    assert elo["paper"] == 1166.94
    assert round(elo["total"], 2) == 1166.94
    assert "1166.94" in report and "1197.93" in report
    assert set(figures["section_10_7"]) == {"adr", "elo-k32", "glicko2", "trueskill"}
    # the ADR run saw duplicates dropped: no-cooldown gains more from burst farming
    burst = "burst-10s"
    assert (
        figures["protocol"]["adr"]["farming"][burst]["farmer_gain_sd"]
        < figures["protocol"]["adr-no-cooldown"]["farming"][burst]["farmer_gain_sd"]
    )
    assert all(math.isfinite(x) for x in (m["brier"] for m in figures["protocol"].values()))


def test_evaluate_rejects_bad_arguments(tmp_path: Path) -> None:
    assert main(["evaluate", "--systems", "nope", "--out", str(tmp_path)]) == 2
    assert main(["evaluate", "--param", "theta", "--out", str(tmp_path)]) == 2
    assert main(["evaluate", "--param", "no_such=1", "--out", str(tmp_path)]) == 2
    assert main(["evaluate", "--players", "5", "--out", str(tmp_path)]) == 2
    assert not list(tmp_path.iterdir())


def test_evaluate_help_exits_zero() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "adr_cli", "evaluate", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert "--out" in done.stdout


@pytest.mark.parametrize("bad", [["--jobs", "0"]])
def test_evaluate_rejects_zero_jobs(tmp_path: Path, bad: list[str]) -> None:
    assert main(["evaluate", *bad, "--out", str(tmp_path)]) == 2
