"""`adr replay --seasons FILE`: the season schedule's text (redis_layout/season_schedule.py) read
back to the same bits, and the replay equal to RatingBook with that schedule."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_replay_cli import T0, _assert_same, _events, _expected, _read, _write_jsonl

from adr_cli.main import main
from engine import ModelBook, Params, SeasonReset, SeasonSchedule, SeasonStart, model_named
from redis_layout.season_schedule import decode_schedule, encode_schedule

HOUR = 3_600_000


def _schedule(events: list[dict[str, object]]) -> SeasonSchedule:
    times = sorted(int(e["ts"]) for e in events)  # type: ignore[call-overload]
    third, two_thirds = times[len(times) // 3], times[2 * len(times) // 3] + HOUR
    return SeasonSchedule(
        (
            SeasonStart("s2", third + 1, 1003.25, SeasonReset(0.5, 120.0)),
            SeasonStart("s3", two_thirds + 1, 1000.1, SeasonReset(0.3, 80.5)),
        ),
        version=2,
    )


def test_the_replay_with_seasons_is_the_book_with_them(tmp_path: Path) -> None:
    events = _events(3000)
    src = _write_jsonl(tmp_path / "events.jsonl", events)
    schedule = _schedule(events)
    (tmp_path / "seasons.json").write_text(encode_schedule(schedule))
    out = tmp_path / "out"
    assert (
        main(
            ["replay", str(src), "--out-dir", str(out), "--seasons", str(tmp_path / "seasons.json")]
        )
        == 0
    )
    book = _expected(events, Params(), seasons=schedule)
    _assert_same(out, book)
    assert _read(out)[1]["season"] == book.ladder == 2
    plain = _expected(events, Params())
    assert book.players() != plain.players()  # the resets changed ratings
    assert (book.counted, book.duplicates) == (plain.counted, plain.duplicates)  # not counting


@pytest.mark.parametrize(
    "text",
    [
        "{",
        json.dumps({"v": 2, "version": 1, "seasons": []}),
        json.dumps(
            {
                "v": 1,
                "version": 1,
                "seasons": [
                    {"id": "a", "start_ms": 5, "pool_mean": 1000, "keep": 2.0, "sigma_raise": 1.0}
                ],
            }
        ),
        json.dumps(
            {
                "v": 1,
                "version": 2,
                "seasons": [
                    {"id": "a", "start_ms": 9, "pool_mean": 1000, "keep": 0.5, "sigma_raise": 1.0},
                    {"id": "b", "start_ms": 9, "pool_mean": 1000, "keep": 0.5, "sigma_raise": 1.0},
                ],
            }
        ),
    ],
)
def test_a_bad_seasons_file_exits_2(tmp_path: Path, text: str) -> None:
    src = _write_jsonl(tmp_path / "events.jsonl", _events(5))
    (tmp_path / "s.json").write_text(text)
    out = tmp_path / "o"
    assert (
        main(["replay", str(src), "--out-dir", str(out), "--seasons", str(tmp_path / "s.json")])
        == 2
    )
    assert not out.exists()


@pytest.mark.parametrize(("name", "raise_", "code"), [("elo", 5.0, 2), ("elo", 0.0, 0),
                                                     ("glicko2", 5.0, 0)])  # fmt: skip
def test_an_uncertainty_raise_for_elo_is_refused_not_dropped(
    tmp_path: Path, name: str, raise_: float, code: int
) -> None:
    """Elo keeps no uncertainty: a hand-written schedule raising it is refused (exit 2, nothing
    written), as `adr season close --sigma-raise` refuses it on an Elo pool; before, replay
    dropped the raise without a word."""
    src = _write_jsonl(tmp_path / "events.jsonl", _events(40))
    start = SeasonStart("b", 5_000, 1000.0, SeasonReset(0.5, raise_))
    (tmp_path / "s.json").write_text(encode_schedule(SeasonSchedule((start,), version=1)))
    out = tmp_path / "o"
    args = ["replay", str(src), "--out-dir", str(out), "--model", name]
    assert main([*args, "--seasons", str(tmp_path / "s.json")]) == code
    assert out.exists() == (code == 0)


@pytest.mark.parametrize("name", ["elo", "glicko2", "trueskill", "weng-lin"])
def test_seasons_with_another_model_are_its_book_with_them(tmp_path: Path, name: str) -> None:
    """`--model X --seasons FILE`: ModelBook with that schedule, each reset in the model's own
    scale (a pool mean near its initial rating, its default raise)."""
    events = _events(600, players=20)
    src = _write_jsonl(tmp_path / "events.jsonl", events)
    model = model_named(name)
    initial = float(model.to_fields(model.new_player())[0])
    reset = SeasonReset(0.5, model.default_sigma_raise())
    schedule = SeasonSchedule(
        tuple(
            SeasonStart(s.id, s.start_ms, initial + k + 0.25, reset)
            for k, s in enumerate(_schedule(events).starts)
        ),
        version=2,
    )
    (tmp_path / "s.json").write_text(encode_schedule(schedule))
    out = tmp_path / "o"
    args = ["replay", str(src), "--out-dir", str(out), "--model", name]
    assert main([*args, "--seasons", str(tmp_path / "s.json")]) == 0
    book = ModelBook(model, Params(), seasons=schedule)
    plain = ModelBook(model, Params())
    for e in events:
        for b in (book, plain):
            b.apply(str(e["id"]), str(e["attacker"]), str(e["victim"]), int(e["ts"]))  # type: ignore[call-overload]
    players, population = _read(out)
    assert [p["player"] for p in players] == [p for p, _ in book.iter_players()]
    for record in players:
        state = book.player(str(record.pop("player")))
        assert record.pop("display") == model.display(state)
        assert record == msgspec.structs.asdict(state)  # floats as repr: the same 64 bits
    assert population["season"] == book.ladder == 2
    assert {p["season"] for p in players} >= {2}
    assert book.players() != plain.players()  # the resets changed ratings
    (tmp_path / "none.json").write_text(encode_schedule(SeasonSchedule()))
    assert main([*args, "--seasons", str(tmp_path / "none.json")]) == 0  # none started


@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**40), st.floats(-1e4, 1e4), st.floats(0.0, 1.0), st.floats(0.0, 1e4)
        ),
        max_size=4,
        unique_by=lambda t: t[0],
    ),
    st.integers(0, 100),
)
def test_the_text_reads_back_to_the_same_bits(
    starts: list[tuple[int, float, float, float]], version: int
) -> None:
    schedule = SeasonSchedule(
        tuple(
            SeasonStart(f"s{i}", T0 + at, mean, SeasonReset(keep, c))
            for i, (at, mean, keep, c) in enumerate(sorted(starts))
        ),
        version=version,
    )
    assert decode_schedule(encode_schedule(schedule)) == schedule
    assert decode_schedule(encode_schedule(schedule).encode()) == schedule
