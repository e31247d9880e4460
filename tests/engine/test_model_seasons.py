"""Seasons for the models other than ADR (each model's `season_reset` and `season_step`,
engine.RatingModel; ModelBook with a schedule): hand-computed vectors whose every step is exact
in binary, the reset's properties in each model's own scale, and the exactly-once rule under
late events, which a rule on the models' `last_ts` (the last processed counted time, not the
largest) breaks."""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine import (
    COUNTED,
    AdrModel,
    EloState,
    Glicko2State,
    ModelBook,
    RatingBook,
    SeasonReset,
    SeasonSchedule,
    SeasonStart,
    Snapshot,
    TrueSkillState,
    WengLinState,
    ladder_of,
    model_named,
)
from tests.engine.test_season import SMALL, _streams

T0 = 1_700_000_000_000
MIN = 60_000
NAMES = ("elo", "glicko2", "trueskill", "weng-lin")
PLACED_EARLY = {"tier_n_min": "3"}  # placed after 3 kills: the hysteresis is in play
_SCALE = {"elo": (1500.0, 300.0), "glicko2": (1500.0, 300.0), "trueskill": (25.0, 8.0)}
_SCALE["weng-lin"] = _SCALE["trueskill"]


def _model(name: str) -> Any:
    return model_named(name, PLACED_EARLY)


def _rating(name: str, state: Any) -> float:
    return float(state.rating if name in ("elo", "glicko2") else state.mu)


def _uncertainty(name: str, state: Any) -> float:
    return {"elo": 0.0, "glicko2": getattr(state, "rd", 0.0)}.get(name, getattr(state, "sigma", 0))


def _cap(name: str) -> float:
    model = _model(name)
    return _uncertainty(name, model.new_player())


# -- vectors by hand: 3-4-5 and 6-8-10 triangles, halving ---------------------------------------


def test_vectors_per_model() -> None:
    reset = SeasonReset(0.5, 80.0)
    glicko = Glicko2State(1700.0, 60.0, 0.06, 40, T0, 5, 1.5, 0.5)
    after = _model("glicko2").season_reset(glicko, 1500.0, reset)
    assert (after.rating, after.rd, after.volatility) == (1600.0, 100.0, 0.06)  # √(60² + 80²)
    assert (after.n, after.last_ts, after.tier, after.h_up, after.h_down) == (40, T0, 5, 0.0, 0.0)
    capped = _model("glicko2").season_reset(glicko, 1500.0, SeasonReset(0.5, 1000.0))
    assert capped.rd == 350.0  # up to rd0
    elo = EloState(1700.0, 40, T0, True, 5, 2.0, 1.0)
    after_elo = _model("elo").season_reset(elo, 1500.0, SeasonReset(0.25, 80.0))
    assert after_elo == EloState(1550.0, 40, T0, True, 5, 0.0, 0.0)  # n and FIDE's flag kept
    for state_type, name in ((TrueSkillState, "trueskill"), (WengLinState, "weng-lin")):
        state = state_type(30.0, 3.0, 40, T0, 5, 1.0, 1.0)
        after_g = _model(name).season_reset(state, 25.0, SeasonReset(0.5, 4.0))
        assert after_g == state_type(27.5, 5.0, 40, T0, 5, 0.0, 0.0)
        up = _model(name).season_reset(state, 25.0, SeasonReset(0.5, 8.0))
        assert up.sigma == 25.0 / 3.0  # √(9 + 64) > σ0: capped at σ0


@pytest.mark.parametrize(("name", "expected"), [
    ("adr", 100.0), ("elo", 0.0), ("glicko2", 100.0), ("trueskill", 25.0 / 3.0 * 2.0 / 7.0),
    ("weng-lin", 25.0 / 3.0 * 2.0 / 7.0),
])  # fmt: skip
def test_default_sigma_raise_is_the_same_share_of_the_initial_uncertainty(
    name: str, expected: float
) -> None:
    assert model_named(name).default_sigma_raise() == expected


# -- properties in each model's scale -----------------------------------------------------------


@st.composite
def _case(draw: st.DrawFn) -> tuple[str, Any, float, SeasonReset]:
    name = draw(st.sampled_from(NAMES))
    center, spread = _SCALE[name]
    values = st.floats(center - 3 * spread, center + 3 * spread)
    cap = _cap(name)
    rating, mean = draw(values), draw(values)
    reset = SeasonReset(draw(st.floats(0.0, 1.0)), draw(st.floats(0.0, 3 * max(cap, 1.0))))
    unc = draw(st.floats(cap / 100, cap * 1.2)) if cap else 0.0  # above the cap: Glicko-2 idle
    n, tier, h_up, h_down = draw(st.integers(1, 500)), draw(st.integers(0, 15)), 1.5, 0.25
    state: Any
    if name == "elo":
        state = EloState(rating, n, T0, draw(st.booleans()), tier, h_up, h_down)
    elif name == "glicko2":
        state = Glicko2State(rating, unc, 0.06, n, T0, tier, h_up, h_down)
    else:
        state_type = TrueSkillState if name == "trueskill" else WengLinState
        state = state_type(rating, unc, n, T0, tier, h_up, h_down)
    return name, state, mean, reset


@settings(max_examples=300, deadline=None)
@given(_case())
def test_toward_the_mean_never_past_it_and_more_uncertain_up_to_the_cap(
    case: tuple[str, Any, float, SeasonReset],
) -> None:
    name, state, mean, reset = case
    model = _model(name)
    after = model.season_reset(state, mean, reset)
    before_r, after_r = _rating(name, state), _rating(name, after)
    assert min(before_r, mean) <= after_r <= max(before_r, mean)
    assert abs(after_r - mean) <= abs(before_r - mean)
    before_u, after_u = _uncertainty(name, state), _uncertainty(name, after)
    assert before_u <= after_u <= max(before_u, _cap(name))
    assert (after.h_up, after.h_down) == (0.0, 0.0)
    assert (after.n, after.last_ts, after.tier, after.season) == (
        state.n, state.last_ts, state.tier, state.season,
    )  # fmt: skip
    assert model.season_reset(state, mean, reset) == after  # the same bits every time (replay)
    fields = model.to_fields(after)
    assert model.from_fields(fields) == after


@pytest.mark.parametrize("name", NAMES)
def test_the_season_is_stored_only_when_not_the_first(name: str) -> None:
    """A player of the first season (every hash written before seasons existed) keeps its bytes;
    a later season's number is one more item of `state`, read back; a negative one is refused."""
    model = _model(name)
    state = model.rate(model.new_player(), model.new_player(), T0, 0, 2, _snapshot()).attacker
    fields = model.to_fields(state)
    items = msgspec.msgpack.decode(fields[6])
    assert model.from_fields(fields) == state and state.season == 0
    later = msgspec.structs.replace(state, season=3)
    later_fields = model.to_fields(later)
    assert later_fields[:6] == fields[:6]
    assert msgspec.msgpack.decode(later_fields[6]) == [*items, 3]
    assert model.from_fields(later_fields) == later
    with pytest.raises(ValueError):
        model.from_fields((*fields[:6], msgspec.msgpack.encode([*items, -1])))


def _snapshot(name: str = "elo") -> Snapshot:
    """A fixed snapshot in the model's scale, its 14 boundaries around the initial rating."""
    center, spread = _SCALE[name]
    return Snapshot(
        taken_at=None, mean_mu_active=center, active_count=10,
        boundaries=tuple(center + spread * (0.5 - 0.1 * k) for k in range(14)),
    )  # fmt: skip


# -- exactly once per player and season, late events included ----------------------------------


def _scaled(schedule: SeasonSchedule, name: str) -> SeasonSchedule:
    """test_season's schedule (ADR's scale) in model `name`'s: the mean and the raise mapped."""
    center, spread = _SCALE[name]
    cap = _cap(name) or 1.0
    return SeasonSchedule(
        tuple(
            SeasonStart(
                s.id, s.start_ms, center + (s.pool_mean - 1000.0) / 100.0 * spread,
                SeasonReset(s.reset.keep, s.reset.sigma_raise / 300.0 * cap),
            )
            for s in schedule.starts
        ),
        version=schedule.version,
    )  # fmt: skip


def _reference(
    name: str, events: list[tuple[str, str, int]], schedule: SeasonSchedule
) -> tuple[dict[str, Any], Counter[str], list[tuple[str, str, int, float]]]:
    """The stream through the model's public methods with the rule stated on the largest counted
    time (a player crosses a start when its largest counted time so far is below it and the
    event's at or after it), kept here apart from the states; which events count is decided by
    a book without seasons (a season changes ratings, never which events count)."""
    model = _model(name)
    plain = ModelBook(model, SMALL, fixed_snapshot=_snapshot(name))
    states: dict[str, Any] = {}
    newest: dict[str, int] = {}
    resets: Counter[str] = Counter()
    counted = []
    for i, (a, b, ts) in enumerate(events):
        if plain.apply(str(i), a, b, ts) != COUNTED:
            continue
        counted.append((a, b, ts, 0.0))
        for p in (a, b):
            state = states.get(p, model.new_player())
            if p in newest:
                for start in schedule.starts:
                    if newest[p] < start.start_ms <= ts:
                        state = model.season_reset(state, start.pool_mean, start.reset)
                        resets[p] += 1
            season = ladder_of(schedule, max(ts, newest.get(p, ts)))
            states[p] = msgspec.structs.replace(state, season=season)
        counted[-1] = (a, b, ts, model.predict(states[a], states[b], ts, 0, 0, _snapshot(name)))
        out = model.rate(states[a], states[b], ts, 0, len(states), _snapshot(name))
        states[a], states[b] = out.attacker, out.victim
        for p in (a, b):
            newest[p] = max(ts, newest.get(p, ts))
    return states, resets, counted


def _naive_resets(
    counted: list[tuple[str, str, int, float]], schedule: SeasonSchedule
) -> Counter[str]:
    """The resets a rule on `last_ts` (the LAST counted time, as the models keep it) would give."""
    last: dict[str, int] = {}
    resets: Counter[str] = Counter()
    for a, b, ts, _p in counted:
        for p in (a, b):
            if p in last:
                resets[p] += sum(1 for s in schedule.starts if last[p] < s.start_ms <= ts)
            last[p] = ts
    return resets


_LATE = (  # p0 crosses T0 + 10 min, a late event of the last season, then one more of the new
    [("p0", "p1", T0), ("p0", "p2", T0 + 10 * MIN), ("p3", "p0", T0 + 5 * MIN),
     ("p0", "p4", T0 + 20 * MIN)],
    SeasonSchedule((SeasonStart("s1", T0 + 10 * MIN, 950.0, SeasonReset(0.5, 200.0)),), 1),
)  # fmt: skip


def test_a_late_event_does_not_make_a_second_reset() -> None:
    events, schedule = _LATE
    for name in NAMES:
        scaled = _scaled(schedule, name)
        states, resets, counted = _reference(name, events, scaled)
        assert len(counted) == 4 and resets["p0"] == 1
        assert _naive_resets(counted, scaled)["p0"] == 2  # what the case is here to catch
        book = ModelBook(_model(name), SMALL, fixed_snapshot=_snapshot(name), seasons=scaled)
        for i, (a, b, ts) in enumerate(events):
            book.apply(str(i), a, b, ts)
        assert book.players() == dict(sorted(states.items())), name


@settings(max_examples=150, deadline=None)
@given(_streams(), st.sampled_from(NAMES))
@example(_LATE, "glicko2")
@example(_LATE, "trueskill")
def test_each_player_takes_each_seasons_reset_once_and_the_book_agrees(
    stream: tuple[list[tuple[str, str, int]], SeasonSchedule], name: str
) -> None:
    events, adr_schedule = stream
    schedule = _scaled(adr_schedule, name)
    states, _resets, counted = _reference(name, events, schedule)
    book = ModelBook(_model(name), SMALL, fixed_snapshot=_snapshot(name), seasons=schedule)
    expected_p = iter(counted)
    for i, (a, b, ts) in enumerate(events):
        p = book.predict(a, b, ts) if a != b else None
        if book.apply(str(i), a, b, ts) == COUNTED:  # predict: the reset the event takes first
            assert p == next(expected_p)[3]
    assert book.players() == dict(sorted(states.items()))  # bit for bit
    newest = max((ts for _, _, ts, _p in counted), default=None)
    assert book.ladder == (0 if newest is None else ladder_of(schedule, newest))
    model = _model(name)
    for p, state in states.items():  # a redo on the stored state changes nothing
        last = max(ts for a, b, ts, _p in counted if p in (a, b))
        assert model.season_step(state, last, schedule) is state


@settings(max_examples=100, deadline=None)
@given(_streams())
def test_model_book_with_adr_and_seasons_is_rating_book_bit_for_bit(
    stream: tuple[list[tuple[str, str, int]], SeasonSchedule],
) -> None:
    events, schedule = stream
    book = RatingBook(SMALL, seasons=schedule)
    generic = ModelBook(AdrModel(SMALL), SMALL, seasons=schedule)
    for i, (a, b, ts) in enumerate(events):
        if a != b and len(book):
            assert generic.predict(a, b, ts) == book.predict(a, b, ts)
        assert book.apply(str(i), a, b, ts) == generic.apply(str(i), a, b, ts)
    assert generic.players() == book.players()
    assert generic.total_sigma_units == book.total_sigma_units
    assert generic.ladder == book.ladder


# -- a stored season past the schedule (deleted, restored older than the players, corrupt) -----

_TWO = SeasonSchedule(
    (SeasonStart("s1", T0 + 10 * MIN, 950.0, SeasonReset(0.5, 200.0)),
     SeasonStart("s2", T0 + 30 * MIN, 1050.0, SeasonReset(0.25, 100.0))),
    2,
)  # fmt: skip


def _played(name: str, ts: int) -> Any:
    """A player with one counted kill at `ts`, stored as the first season's."""
    model = _model(name)
    return model.rate(model.new_player(), model.new_player(), ts, 0, 2, _snapshot(name)).attacker


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("stored", [3, 7, 2**40])
def test_a_season_past_the_schedule_is_read_from_the_last_kill_not_left_to_stop_the_resets(
    name: str, stored: int
) -> None:
    """A stored season the schedule does not have (past its last, len(starts)) is the season of
    the player's last counted kill: an event after the next start takes that start's reset, as
    the same player with its true season takes it (bit for bit) and as an ADR player takes it
    (from its times); before, the player took no reset until the schedule grew past the number.
    The board of a season the player has not played in does not rank it."""
    model = _model(name)
    schedule = _scaled(_TWO, name)
    for last_kill, event, crossed in (
        (T0, T0 + 20 * MIN, 1),  # last kill in the first season, the event in s1: one reset
        (T0, T0 + 40 * MIN, 2),  # absent through s1: both resets, in order
        (T0 + 15 * MIN, T0 + 40 * MIN, 1),  # last kill in s1 (season 1 is true): s2's only
    ):
        player = _played(name, last_kill)
        true = msgspec.structs.replace(player, season=ladder_of(schedule, last_kill))
        past = msgspec.structs.replace(player, season=stored)
        want = model.season_step(true, event, schedule)
        assert want.season == ladder_of(schedule, event) and want != true  # the reset moved it
        assert model.season_step(past, event, schedule) == want, (last_kill, event)
        resets = [s for s in schedule.starts if last_kill < s.start_ms <= event]
        assert len(resets) == crossed
        season = ladder_of(schedule, event)
        assert not model.in_season(past, schedule, season)  # not on a board it did not play
        assert model.in_season(want, schedule, season)


@pytest.mark.parametrize("name", NAMES)
def test_a_season_past_the_schedule_moves_nothing_within_the_schedule_and_is_kept(
    name: str,
) -> None:
    """An event of the season the last kill is in keeps the state as it is, the number past the
    schedule included (the same object: nothing written), so a schedule deleted and then
    restored resets nobody twice; with no schedule at all (deleted) nothing resets either."""
    model = _model(name)
    schedule = _scaled(_TWO, name)
    past = msgspec.structs.replace(_played(name, T0 + 35 * MIN), season=5)
    assert model.season_step(past, T0 + 40 * MIN, schedule) is past
    assert model.season_step(past, T0 + 40 * MIN, SeasonSchedule()) is past
    restored = msgspec.structs.replace(past, season=2)  # the number the schedule gave it
    assert model.season_step(restored, T0 + 40 * MIN, schedule) is restored
    assert model.in_season(past, schedule, 2) and model.in_season(past, SeasonSchedule(), 0)
