"""`adr replay`: file formats, outputs, errors and exit codes, against RatingBook itself."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

from adr_cli.main import main
from engine import TIER_LABELS, Params, RatingBook, Snapshot, profile_overrides

T0 = 1_700_000_000_000


def _events(count: int = 3000, players: int = 40, seed: int = 7) -> list[dict[str, object]]:
    rng = random.Random(seed)
    ts = T0
    out: list[dict[str, object]] = []
    for i in range(count):
        ts += rng.choice([0, 500, 20_000, 90_000, 3_600_000])
        a, b = rng.sample(range(players), 2)
        out.append(
            {"id": f"e{i}", "arena": f"r{i % 3}", "attacker": f"p{a}", "victim": f"p{b}", "ts": ts}
        )
    return out


def _write_jsonl(path: Path, events: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def _expected(events: list[dict[str, object]], params: Params, **kwargs: object) -> RatingBook:
    book = RatingBook(params, **kwargs)  # type: ignore[arg-type]
    for e in events:
        book.apply(str(e["id"]), str(e["attacker"]), str(e["victim"]), int(e["ts"]))  # type: ignore[call-overload]
    return book


def _read(out: Path) -> tuple[list[dict[str, object]], dict[str, object]]:
    players = [json.loads(line) for line in (out / "players.jsonl").read_text().splitlines()]
    return players, json.loads((out / "population.json").read_text())


def _assert_same(out: Path, book: RatingBook, rejected_extra: int = 0) -> None:
    players, population = _read(out)
    expected = book.players()
    assert [p["player"] for p in players] == sorted(expected)
    for record in players:
        s = expected[str(record["player"])]
        # floats are written as repr(float): parsing them back must give the same 64 bits
        assert (record["mu"], record["sigma"], record["phi"], record["pool"]) == (
            s.mu,
            s.sigma,
            s.phi,
            s.pool,
        )
        assert (record["streak"], record["n"], record["last_ts"]) == (s.streak, s.n, s.last_ts)
        assert (record["h_up"], record["h_down"]) == (s.h_up, s.h_down)
        assert record["tier"] == (TIER_LABELS[s.tier - 1] if s.tier else None)
    snap = book.snapshot
    assert population["boundaries"] == (list(snap.boundaries) if snap.boundaries else None)
    assert population["mean_mu_active"] == snap.mean_mu_active
    assert population["sigma_mean"] == book.sigma_mean()
    assert (population["counted"], population["duplicates"]) == (book.counted, book.duplicates)
    assert population["rejected"] == book.rejected + rejected_extra


def test_jsonl_replay_matches_the_rating_book(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = _events()
    src = _write_jsonl(tmp_path / "events.jsonl", events)
    assert main(["replay", str(src), "--out-dir", str(tmp_path / "out")]) == 0
    book = _expected(events, Params())
    assert book.counted > 1000 and book.duplicates > 0 and book.snapshot.boundaries is not None
    assert any(s.tier for s in book.players().values())
    _assert_same(tmp_path / "out", book)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "\r" not in captured.err  # stderr is not a terminal: no progress bar


def test_msgpack_stream_gives_the_same_result(tmp_path: Path) -> None:
    events = _events(800)
    src = tmp_path / "events.msgpack"
    src.write_bytes(b"".join(msgpack.packb(e) for e in events))
    assert main(["replay", str(src), "--out-dir", str(tmp_path / "out")]) == 0
    _assert_same(tmp_path / "out", _expected(events, Params()))


def test_stdin_and_options(tmp_path: Path) -> None:
    events = _events(600)
    data = "".join(json.dumps(e) + "\n" for e in events).encode()
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "adr_cli", "replay", "-", "--out-dir", str(out),
           "--calibrate-every", "60", "--param", "theta=500", "--param", "n_min=5"]  # fmt: skip
    done = subprocess.run(cmd, input=data, capture_output=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    params = Params.from_overrides({"theta": "500", "n_min": "5"})
    _assert_same(out, _expected(events, params, calibrate_every_ms=60_000))


def test_the_recommended_profile_under_a_param(tmp_path: Path) -> None:
    events = _events(800)
    src = tmp_path / "events.jsonl"
    src.write_text("".join(json.dumps(e) + "\n" for e in events))
    out = tmp_path / "out"
    args = ["replay", str(src), "--out-dir", str(out), "--profile", "recommended"]
    assert main([*args, "--param", "theta=150"]) == 0
    params = Params.from_overrides({**profile_overrides("recommended"), "theta": "150"})
    assert params.repeat_window == 600.0 and params.theta == 150.0
    expected = _expected(events, params)
    assert expected.players() != _expected(events, Params()).players()
    _assert_same(out, expected)


def test_malformed_lines_are_reported_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = _events(50)
    lines = [json.dumps(e) for e in events]
    lines.insert(3, "{not json")
    lines.insert(10, json.dumps({**events[0], "ts": "soon"}))
    lines.insert(20, json.dumps({"id": "x", "arena": "r", "attacker": "p1", "victim": "p2"}))
    lines.insert(30, json.dumps({**events[0], "ts": 1.5}))
    src = tmp_path / "events.jsonl"
    src.write_text("\n".join(lines) + "\n")
    assert main(["replay", str(src), "--out-dir", str(tmp_path / "out")]) == 0
    _assert_same(tmp_path / "out", _expected(events, Params()), rejected_extra=4)
    logs = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [r["line"] for r in logs if r["event"] == "malformed"] == [4, 11, 21, 31]


def test_fixed_snapshot_file(tmp_path: Path) -> None:
    events = _events(1500)
    bounds = [1500.0 - 30.0 * k for k in range(1, 15)]
    snap_file = tmp_path / "population.json"
    snap_file.write_text(json.dumps({"mean_mu_active": 1020.25, "boundaries": bounds}))
    src = _write_jsonl(tmp_path / "events.jsonl", events)
    assert (
        main(["replay", str(src), "--out-dir", str(tmp_path / "out"), "--snapshot", str(snap_file)])
        == 0
    )
    fixed = Snapshot(
        taken_at=None, mean_mu_active=1020.25, boundaries=tuple(bounds), active_count=0
    )
    book = _expected(events, Params(), fixed_snapshot=fixed)
    _assert_same(tmp_path / "out", book)
    assert _read(tmp_path / "out")[1]["boundaries"] == bounds


@pytest.mark.parametrize(
    "extra",
    [
        ["--param", "thetta=1"],
        ["--param", "theta=abc"],
        ["--param", "theta"],
        ["--calibrate-every", "-5"],
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    src = _write_jsonl(tmp_path / "events.jsonl", _events(5))
    assert main(["replay", str(src), "--out-dir", str(tmp_path / "out"), *extra]) == 2
    assert "usage" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_bad_snapshot_file_exits_2(tmp_path: Path) -> None:
    src = _write_jsonl(tmp_path / "events.jsonl", _events(5))
    bad = tmp_path / "snap.json"
    bad.write_text(json.dumps({"mean_mu_active": 1000, "boundaries": [1, 2, 3]}))
    assert main(["replay", str(src), "--out-dir", str(tmp_path / "o"), "--snapshot", str(bad)]) == 2


def test_missing_input_exits_1(tmp_path: Path) -> None:
    assert main(["replay", str(tmp_path / "nope.jsonl"), "--out-dir", str(tmp_path / "o")]) == 1


def test_progress_bar_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write_jsonl(tmp_path / "events.jsonl", _events(3000))
    assert main(["replay", str(src), "--out-dir", str(tmp_path / "o"), "--progress", "always"]) == 0
    assert "events/s" in capsys.readouterr().err


def test_help_documents_lateness(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["replay", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "--lateness" in text and "watermark" in text
