"""`adr replay --model NAME`: every model over the same events, against the model driven by a
plain loop (the consumer's way: a dict of states, the cooldown, S and P), bit for bit; the
registry's errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from adr_cli.main import main
from engine import MODELS, Params, Snapshot, is_duplicate, model_named
from tests.adr_cli.test_replay_cli import _events, _write_jsonl


def _snapshot(name: str, overrides: dict[str, Any]) -> Snapshot:
    """A fixed snapshot whose 14 boundaries lie around a quarter of the way from a new player's
    `mu` to its display rating (where the display rating of a player with some kills lies),
    1/8 of the model's h_req apart: players get placed and move between tiers."""
    model: Any = model_named(name, overrides)
    new = model.new_player()
    mu = model.to_fields(new)[0]
    start = mu - (mu - model.display(new)) / 4.0
    step = model.config.tier_h_req / 8.0
    bounds = tuple(start + step * (6.5 - k) for k in range(14))
    return Snapshot(taken_at=None, mean_mu_active=start, boundaries=bounds, active_count=0)


def _reference(
    events: list[dict[str, Any]], name: str, overrides: dict[str, Any]
) -> dict[str, Any]:
    """The model through its interface, without any book: in-order events, none late, the
    fixed snapshot `_snapshot` (as `adr replay --snapshot` is given)."""
    params = Params()
    model = model_named(name, overrides)
    snapshot = _snapshot(name, overrides)
    states: dict[str, Any] = {}
    cooldown: dict[tuple[str, str], int] = {}
    for e in events:
        a, b, ts = e["attacker"], e["victim"], e["ts"]
        if is_duplicate(cooldown.get((a, b)), ts, params):
            continue
        for player in (a, b):
            states.setdefault(player, model.new_player())
        out = model.rate(states[a], states[b], ts, 0, len(states), snapshot)
        states[a], states[b] = out.attacker, out.victim
        cooldown[(a, b)] = ts
    return {p: states[p] for p in sorted(states)}


def _players(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "players.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("elo", {}),
        ("elo", {"k_rule": "fide"}),
        ("elo", {"k_rule": "uscf", "uscf_games_cap": "20"}),
        ("glicko2", {"period_ms": "3600000"}),
        ("trueskill", {}),
        ("weng-lin", {"display_k": "2"}),
    ],
)
def test_replay_with_a_model_is_that_model_bit_for_bit(
    tmp_path: Path, name: str, overrides: dict[str, str]
) -> None:
    events = _events(count=1500, players=25)
    src = _write_jsonl(tmp_path / "events.jsonl", events)
    flags = [f"--model-param={k}={v}" for k, v in overrides.items()]
    snapshot = _snapshot(name, overrides)
    snap = tmp_path / "snapshot.json"
    snap.write_text(
        json.dumps({"mean_mu_active": snapshot.mean_mu_active, "boundaries": snapshot.boundaries})
    )
    flags += ["--snapshot", str(snap)]
    out = tmp_path / "out"
    assert main(["replay", str(src), "--out-dir", str(out), "--model", name, *flags]) == 0
    expected = _reference(events, name, overrides)
    model = model_named(name, overrides)
    players = _players(out)
    assert [p["player"] for p in players] == list(expected)
    for record in players:
        state = expected[record.pop("player")]
        assert record.pop("display") == model.display(state)
        assert record == msgspec.structs.asdict(state)  # floats as repr: the same 64 bits
    population = json.loads((out / "population.json").read_text())
    assert population["model"] == name
    assert population["players"] == len(expected)
    assert population["counted"] == sum(p["n"] for p in players) // 2
    tiers = [p["tier"] for p in players]
    assert len(set(tiers) - {0}) >= 2  # placed by the common rule, into several tiers


def test_replay_with_model_adr_is_replay_without_one(tmp_path: Path) -> None:
    src = _write_jsonl(tmp_path / "events.jsonl", _events(count=800))
    assert main(["replay", str(src), "--out-dir", str(tmp_path / "a")]) == 0
    assert main(["replay", str(src), "--out-dir", str(tmp_path / "b"), "--model", "adr"]) == 0
    for name in ("players.jsonl", "population.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_help_lists_the_models(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["replay", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for name in MODELS:
        assert name in text
    assert "--model-param" in text


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--model", "glicko"], "unknown model 'glicko'"),
        (["--model", "elo", "--model-param", "k=-3"], "k >= 0"),
        (["--model", "elo", "--model-param", "kay=3"], "unknown parameter 'kay'"),
        (["--model", "trueskill", "--model-param", "beta"], "expects NAME=VALUE"),
        (["--model-param", "k=3"], "adr's parameters are --param names"),
        (["--model", "elo", "--param", "t_cooldown=-1"], "t_cooldown >= 0"),
        # adr's pair defence, which no other model applies: refused at start, not dropped
        (["--model", "elo", "--profile", "general"], "the model 'elo' does not keep"),
        (["--model", "glicko2", "--param", "pair_decay=600"], "the model 'glicko2' does not keep"),
    ],
)
def test_an_unknown_model_or_bad_parameter_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    src = _write_jsonl(tmp_path / "events.jsonl", _events(count=10))
    assert main(["replay", str(src), "--out-dir", str(tmp_path / "out"), *flags]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
