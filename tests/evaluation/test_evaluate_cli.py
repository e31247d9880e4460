"""`adr evaluate` end to end on a tiny stream, and the ADR adapter against the engine."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from adr_cli.main import main
from engine import Params, RatingBook
from evaluation._adr_system import AdrSystem
from evaluation._systems import RatingSystem
from evaluation.cli import parse_seeds

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


def test_quick_evaluate_writes_report_with_intervals_over_named_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What CI runs: every part of the report on tiny streams, two seeds, in well under a minute.
    out = tmp_path / "report"
    started = time.perf_counter()
    rc = main(["evaluate", "--quick", "--jobs", "2", "--out", str(out)])
    elapsed = time.perf_counter() - started
    assert rc == 0
    assert elapsed < 120  # ~25 s on an idle 2-core machine; generous for a shared one
    report = (out / "report.md").read_text()
    figures = json.loads((out / "figures.json").read_text())
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == [
        "calibration.png",
        "convergence.png",
        "log_loss.png",
        "long_horizon.png",
        "returning_player.png",
        "tier_shares.png",
        "tier_stability.png",
    ]
    for png in pngs:
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"({png})" in report
    # progress on stderr: one JSON line per finished job, counting up to the total
    progress = [
        json.loads(line) for line in capsys.readouterr().err.splitlines() if '"job done"' in line
    ]
    assert progress and progress[-1]["done"] == progress[-1]["total"] == len(progress)
    meta = figures["meta"]
    assert meta["seeds"] == [1, 2]
    assert "**Seeds**: 1, 2" in report
    assert meta["models"] == ["logistic", "arctan", "probit"]
    for model in meta["models"]:
        assert f"`{model}` outcomes" in report
        systems = figures["models"][model]
        assert {"adr", "elo-tuned", "glicko2-tuned", "trueskill-tuned"} <= set(systems)
        for name, m in systems.items():
            ll = m["ci"]["log_loss"]
            assert ll["n"] == 2, name
            assert ll["lo"] <= ll["mean"] <= ll["hi"], name
            assert m["per_seed"]["log_loss"][0] != m["per_seed"]["log_loss"][1], name
            assert 0.0 < ll["mean"] < 2.0, name
            assert m["ci"]["hyst_tier_changes_per_1000"] is not None, name  # common rule: all
    assert "elo-k32" in figures["models"]["logistic"]
    # the recommended profile runs in CI too, and the report says whether it reaches the goal
    assert "adr-recommended" in figures["models"]["probit"]
    assert report.count("Goal (the recommended profile's log loss") == 3
    # the chosen tuning values are reported, and the tuned systems used them
    for model in meta["models"]:
        for family in ("elo", "glicko2", "trueskill"):
            tuned = figures["tuning"][model][family]
            best = min(tuned["grid"], key=lambda g: g["log_loss"])
            assert tuned["chosen"] == best["values"]
    assert "Baselines tuned within their published ranges" in report
    # three simulated years, sampled monthly, with the floor shares for ADR only
    long = figures["long"]
    assert set(long) == {"adr", "adr-recommended", "elo-tuned", "glicko2-tuned"}
    points = long["adr"]["points"]
    assert points[-1]["day"] > 3 * 365 - 31 and len(points) >= 36
    assert all(len(p["boundaries"]) == 14 for p in points if p["boundaries"])
    assert (
        points[-1]["at_floor"] is not None and long["elo-tuned"]["points"][-1]["at_floor"] is None
    )
    assert "What the paper's defaults do over 3 years" in report
    # §10.6: Elo reproduces the paper; the second kill back is reported
    elo = next(r for r in figures["section_10_6"]["ours"] if r["system"] == "elo-k32")
    assert round(elo["total"], 2) == 1166.94 and elo["paper"] == 1166.94
    assert "**second** moves it" in report


def test_evaluate_rejects_bad_arguments(tmp_path: Path) -> None:
    assert main(["evaluate", "--seeds", "0", "--out", str(tmp_path)]) == 2
    assert main(["evaluate", "--seeds", "1,1", "--out", str(tmp_path)]) == 2
    assert main(["evaluate", "--seeds", "a", "--out", str(tmp_path)]) == 2
    assert main(["evaluate", "--outcome-models", "cauchy", "--out", str(tmp_path)]) == 2
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


def test_seeds_flag_takes_a_count_or_a_list() -> None:
    assert parse_seeds("3") == (1, 2, 3)
    assert parse_seeds("7,3,11") == (7, 3, 11)
    assert parse_seeds("5,") == (5,)


def test_the_report_says_whether_the_recommended_profile_reaches_the_goal() -> None:
    from evaluation._report import _goal

    def system(mean: float, lo: float, hi: float) -> dict[str, Any]:
        return {"ci": {"log_loss": {"mean": mean, "lo": lo, "hi": hi, "n": 10}}}

    systems = {
        "adr": system(0.51, 0.50, 0.52),
        "adr-recommended": system(0.41, 0.40, 0.42),
        "glicko2": system(0.39, 0.38, 0.40),
        "elo-k32": system(0.40, 0.39, 0.41),
    }
    (line, _blank) = _goal(systems)
    assert "best baseline `glicko2`" in line
    assert line.endswith("not reached: its mean is outside that interval.")
    systems["adr-recommended"] = system(0.395, 0.385, 0.405)
    assert _goal(systems)[0].endswith("reached.")
    assert _goal({"adr": system(0.5, 0.4, 0.6)}) == []


def test_long_days_scales_the_long_runs_kills() -> None:
    import argparse

    from evaluation import cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    base = cli._suite(parser.parse_args(["--out", "x"]))
    six = cli._suite(parser.parse_args(["--out", "x", "--long-days", "2190"]))
    assert (base.long.days, base.long.events) == (1095, 33_000)
    assert (six.long.days, six.long.events) == (2190, 66_000)
    assert six.main == base.main
    with pytest.raises(cli.EvaluationError):
        cli._suite(parser.parse_args(["--out", "x", "--long-days", "0"]))
