"""The season soft reset (engine/_season.py): hand-computed vectors whose every step is exact in
binary (so the expected bits are known without the code), and properties over any state."""

from __future__ import annotations

import math
from collections import Counter

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine import (
    COUNTED,
    NO_SEASONS,
    ParamError,
    Params,
    PlayerState,
    RatingBook,
    SeasonReset,
    SeasonSchedule,
    SeasonStart,
    Snapshot,
    ladder_of,
    new_player,
    rate_kill,
    season_step,
    sigma_units,
    soft_reset,
)

P = Params()


def _state(mu: float, sigma: float, **more: object) -> PlayerState:
    values = {**{f: getattr(new_player(P), f) for f in PlayerState.__struct_fields__}}
    values.update(mu=mu, sigma=sigma, streak=4, phi=0.25, h_up=1.5, h_down=0.5, n=80,
                  last_ts=1_700, tier=3, window=(1.0, 2.0), recent=(1_500, 1_700))  # fmt: skip
    values.update(more)
    return PlayerState(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mu", "sigma", "mean", "keep", "raise_", "mu_after", "sigma_after"),
    [
        (1400.0, 30.0, 1000.0, 0.5, 40.0, 1200.0, 50.0),  # 3-4-5: √(900 + 1600) = 50
        (600.0, 60.0, 1000.0, 0.25, 80.0, 900.0, 100.0),  # 6-8-10
        (1400.0, 90.0, 1000.0, 0.0, 120.0, 1000.0, 150.0),  # keep 0: everyone at the mean
        (1400.0, 90.0, 1000.0, 1.0, 0.0, 1400.0, 90.0),  # keep all, raise 0: unchanged
        (3900.0, 300.0, 1000.0, 1.0, 400.0, 3900.0, 400.0),  # σ capped at sigma_max (500 > 400)
        (10.0, 5.0, 4000.0, 1.0, 0.0, 10.0, 10.0),  # σ raised to sigma_min
    ],
)
def test_vectors(
    mu: float, sigma: float, mean: float, keep: float, raise_: float, mu_after: float,
    sigma_after: float,
) -> None:  # fmt: skip
    after = soft_reset(_state(mu, sigma), mean, SeasonReset(keep, raise_), P)
    assert (after.mu, after.sigma) == (mu_after, sigma_after)
    assert (after.streak, after.phi, after.h_up, after.h_down) == (0, 0.0, 0.0, 0.0)
    kept = ("n", "last_ts", "tier", "window", "recent", "pool")
    assert {f: getattr(after, f) for f in kept} == {f: getattr(_state(mu, sigma), f) for f in kept}


_MU = st.floats(P.mu_min, P.mu_max)
_SIGMA = st.floats(P.sigma_min, P.sigma_max)


@given(mu=_MU, sigma=_SIGMA, mean=_MU, keep=st.floats(0.0, 1.0), c=st.floats(0.0, 1e4))
@example(mu=1.97e-115, sigma=P.sigma_min, mean=1.0, keep=1.0, c=0.0)  # m + (μ − m) rounds to 0
def test_toward_the_mean_and_more_uncertain(
    mu: float, sigma: float, mean: float, keep: float, c: float
) -> None:
    after = soft_reset(_state(mu, sigma), mean, SeasonReset(keep, c), P)
    assert min(mu, mean) <= after.mu <= max(mu, mean)
    assert abs(after.mu - mean) <= abs(mu - mean)
    assert sigma <= after.sigma <= P.sigma_max
    # the same bits every time (replay): nothing but IEEE operations on the inputs
    again = soft_reset(_state(mu, sigma), mean, SeasonReset(keep, c), P)
    assert (again.mu, again.sigma) == (after.mu, after.sigma)
    assert after.sigma == min(P.sigma_max, max(P.sigma_min, math.sqrt(sigma * sigma + c * c)))


@pytest.mark.parametrize(("keep", "c"), [(-0.1, 0.0), (1.5, 0.0), (0.5, -1.0), (0.5, math.inf)])
def test_bad_reset_parameters_are_refused(keep: float, c: float) -> None:
    with pytest.raises(ParamError):
        SeasonReset(keep, c)


# -- the schedule: a season's start, applied once per player (RatingBook, season_step) ----------

T0 = 1_700_000_000_000
MIN = 60_000
SMALL = Params.from_overrides({"n_min": "3", "n_active": "2", "p_min": "3", "sigma_place": "300"})
SNAP = Snapshot(
    taken_at=None, mean_mu_active=1010.0, boundaries=tuple(1300.0 - 20.0 * k for k in range(14)),
    active_count=10,
)  # fmt: skip


@st.composite
def _streams(draw: st.DrawFn) -> tuple[list[tuple[str, str, int]], SeasonSchedule]:
    """Events among a few players, time mostly forward with some out-of-order steps (within the
    lateness), and 0-3 season starts inside the stream's span."""
    players = [f"p{i}" for i in range(draw(st.integers(2, 7)))]
    n = draw(st.integers(1, 60))
    t, events = T0, []
    for _ in range(n):
        t += draw(st.integers(-5 * MIN, 30 * MIN))
        a, b = draw(st.sampled_from(players)), draw(st.sampled_from(players))
        events.append((a, b, t))
    span = max(0, max(e[2] for e in events) - T0 + 2 * MIN)
    offsets = sorted(set(draw(st.lists(st.integers(-MIN, span), max_size=3))))
    starts = tuple(
        SeasonStart(
            f"s{k}", T0 + o, draw(st.floats(900.0, 1100.0)),
            SeasonReset(draw(st.floats(0.0, 1.0)), draw(st.floats(0.0, 300.0))),
        )
        for k, o in enumerate(offsets)
    )  # fmt: skip
    return events, SeasonSchedule(starts, version=len(starts))


def _reference(
    events: list[tuple[str, str, int]], schedule: SeasonSchedule
) -> tuple[dict[str, PlayerState], Counter[str], list[tuple[str, str, int]]]:
    """The stream through the public pure functions on PlayerStates (rate_kill, season_step),
    which events count decided by a book without seasons (a season changes ratings, never which
    events count); returns the states, the resets each player took, the counted events."""
    plain = RatingBook(SMALL, fixed_snapshot=SNAP)
    states: dict[str, PlayerState] = {}
    units = 0
    resets: Counter[str] = Counter()
    counted = []
    for i, (a, b, ts) in enumerate(events):
        if plain.apply(str(i), a, b, ts) != COUNTED:
            continue
        counted.append((a, b, ts))
        for p in (a, b):
            if p not in states:
                states[p] = new_player(SMALL)
                units += sigma_units(SMALL.sigma0, SMALL)
        for p in (a, b):
            after = season_step(states[p], ts, schedule, SMALL)
            if after is not states[p]:
                newest = states[p].recent[-1]
                resets[p] += sum(1 for s in schedule.starts if newest < s.start_ms <= ts)
                units += sigma_units(after.sigma, SMALL) - sigma_units(states[p].sigma, SMALL)
                assert season_step(states[p], ts, schedule, SMALL) == after  # a redo: same bits
                states[p] = after
        out = rate_kill(states[a], states[b], ts, units, len(states), SNAP, SMALL)
        units += out.sigma_units_delta
        states[a], states[b] = out.attacker, out.victim
    return states, resets, counted


def _resets_due(player: str, counted: list[tuple[str, str, int]], start: int) -> int:
    """1 if `player` has a counted event before (in order) its first counted event at or after
    `start` (the definition of 'crosses the start'), else 0."""
    seen_before = False
    for a, b, ts in counted:
        if player in (a, b):
            if ts >= start:
                return 1 if seen_before else 0
            seen_before = True
    return 0


@settings(max_examples=300, deadline=None)
@given(_streams())
def test_each_player_takes_each_seasons_reset_once_and_the_book_agrees(
    stream: tuple[list[tuple[str, str, int]], SeasonSchedule],
) -> None:
    events, schedule = stream
    states, resets, counted = _reference(events, schedule)
    players = {p for a, b, _ in counted for p in (a, b)}
    for p in players:
        due = sum(_resets_due(p, counted, s.start_ms) for s in schedule.starts)
        assert resets[p] == due, p
    book = RatingBook(SMALL, fixed_snapshot=SNAP, seasons=schedule)
    for i, (a, b, ts) in enumerate(events):
        book.apply(str(i), a, b, ts)
    assert book.players() == dict(sorted(states.items()))  # bit for bit
    assert book.total_sigma_units == sum(sigma_units(s.sigma, SMALL) for s in states.values())
    newest = max((ts for _, _, ts in counted), default=None)
    assert book.ladder == (0 if newest is None else ladder_of(schedule, newest))


@settings(max_examples=200, deadline=None)
@given(_streams())
def test_no_season_started_is_the_book_without_seasons(
    stream: tuple[list[tuple[str, str, int]], SeasonSchedule],
) -> None:
    events, _ = stream
    late = SeasonSchedule((SeasonStart("later", max(e[2] for e in events) + 1, 1000.0),))
    with_late, without = (
        RatingBook(SMALL, fixed_snapshot=SNAP, seasons=s) for s in (late, NO_SEASONS)
    )
    for i, (a, b, ts) in enumerate(events):
        assert with_late.apply(str(i), a, b, ts) == without.apply(str(i), a, b, ts)
    assert with_late.players() == without.players()
    assert with_late.ladder == 0


def test_a_start_is_crossed_once_vectors() -> None:
    """By hand: keep 0.5 toward m = 1000, σ raised in quadrature; a new player takes none, an
    event before the start none, the first at or after it one, the next none."""
    reset = SeasonReset(0.5, 40.0)
    schedule = SeasonSchedule((SeasonStart("s2", T0 + 10 * MIN, 1000.0, reset),))
    s = _state(1400.0, 30.0, recent=(T0, T0 + MIN))
    assert season_step(s, T0 + 9 * MIN, schedule, P) is s  # before the start
    after = season_step(s, T0 + 10 * MIN, schedule, P)  # at the start: crossed
    assert (after.mu, after.sigma) == (1200.0, 50.0)
    moved = msgspec.structs.replace(after, recent=(T0 + MIN, T0 + 10 * MIN))
    assert season_step(moved, T0 + 20 * MIN, schedule, P) is moved  # counted in it: never again
    assert season_step(new_player(P), T0 + 20 * MIN, schedule, P) == new_player(P)
    two = SeasonSchedule((
        SeasonStart("s2", T0 + 10 * MIN, 1000.0, reset),
        SeasonStart("s3", T0 + 20 * MIN, 1000.0, SeasonReset(0.5, 30.0)),
    ))  # fmt: skip
    both = season_step(s, T0 + 30 * MIN, two, P)  # absent all of s2: both resets, in order
    assert (both.mu, both.sigma) == (1100.0, math.sqrt(50.0 * 50.0 + 30.0 * 30.0))
    assert [ladder_of(two, t) for t in (T0, T0 + 10 * MIN, T0 + 25 * MIN)] == [0, 1, 2]


@pytest.mark.parametrize(
    "starts",
    [
        (SeasonStart("a", 5, 1000.0), SeasonStart("b", 5, 1000.0)),  # not after the one before
        (SeasonStart("a", -1, 1000.0),),
        (SeasonStart("a", 5, math.nan),),
    ],
)
def test_bad_schedules_are_refused(starts: tuple[SeasonStart, ...]) -> None:
    with pytest.raises(ParamError):
        SeasonSchedule(starts)


@settings(max_examples=150, deadline=None)
@given(_streams())
def test_predict_is_the_p_the_event_is_rated_with(
    stream: tuple[list[tuple[str, str, int]], SeasonSchedule],
) -> None:
    """RatingBook.predict before a counted event: its P_ab after the soft reset the event takes
    (rate_kill on the stepped states, S following their σ)."""
    events, schedule = stream
    book = RatingBook(SMALL, fixed_snapshot=SNAP, seasons=schedule)
    for i, (a, b, ts) in enumerate(events):
        if a == b:
            book.apply(str(i), a, b, ts)
            continue
        p = book.predict(a, b, ts)
        units, count = book.total_sigma_units, len(book)
        pair = []
        for x in (a, b):
            state = book.player(x)
            if state is None:
                state, count = new_player(SMALL), count + 1
                units += sigma_units(SMALL.sigma0, SMALL)
            stepped = season_step(state, ts, schedule, SMALL)
            units += sigma_units(stepped.sigma, SMALL) - sigma_units(state.sigma, SMALL)
            pair.append(stepped)
        if book.apply(str(i), a, b, ts) == COUNTED:
            assert p == rate_kill(pair[0], pair[1], ts, units, count, SNAP, SMALL).p_ab
