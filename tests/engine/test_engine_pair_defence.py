"""Issue 29's opt-in switches: own_sigma (D from the pair's own σ) and pair_decay (diminishing
returns over a pair's leaky load). Off by default (the paper, bit for bit), exact when on, and
RatingBook equal to rate_kill driven with a plain dict of loads."""

from __future__ import annotations

import math
from fractions import Fraction

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import (
    EngineError,
    ParamError,
    Params,
    PlayerState,
    RatingBook,
    initial_snapshot,
    is_active,
    is_duplicate,
    leaked_load,
    load_after,
    load_weight,
    new_player,
    p_ab_logistic,
    pair_sigma,
    profile_overrides,
    rate_kill,
    sigma_units,
    take_snapshot,
)
from engine._kill import kill_probability
from engine._pair_load import PairLoads

T0 = 1_700_000_000_000
DAY = 86_400_000
EVERY_MS = 600_000
H = 3_600  # s
DECAY = Params.from_overrides({"pair_decay": H})
GENERAL = Params.from_overrides(profile_overrides("general"))
OWN = Params.from_overrides({"own_sigma": 1})


def test_off_by_default_and_validated() -> None:
    assert Params().own_sigma == 0.0 and Params().pair_decay == 0.0
    assert Params().pair_decay_ms == 0
    assert DECAY.pair_decay_ms == 3_600_000
    for bad in ({"own_sigma": "0.5"}, {"pair_decay": "-1"}, {"pair_decay": "0.0001"}):
        with pytest.raises(ParamError):
            Params.from_overrides(bad)
    # off, every load weighs 1: the paper's update
    assert load_weight(10**9, Params()) == 1.0


@pytest.mark.parametrize(
    ("load", "t_prev", "ts", "expected"),
    [
        (5_000, None, 100, 0),  # no pair in memory: no load
        (5_000, 0, 1_000, 4_000),  # leaks one ms per ms
        (5_000, 0, 5_000, 0),
        (5_000, 0, 9_000, 0),  # never below 0
        (5_000, 2_000, 1_000, 5_000),  # a late kill finds it unleaked
    ],
)
def test_leaked_load(load: int, t_prev: int | None, ts: int, expected: int) -> None:
    assert leaked_load(load, t_prev, ts) == expected


@pytest.mark.parametrize("load", [0, 1, 999, 3_600_000, 7_200_001, 123_456_789, 10**15])
def test_load_weight_is_the_exact_square_correctly_rounded(load: int) -> None:
    # the reference: exact rational arithmetic, rounded once (float(Fraction) rounds correctly)
    h = DECAY.pair_decay_ms
    assert load_weight(load, DECAY) == float(Fraction(h, h + load) ** 2)
    assert load_after(load, DECAY) == load + h


def test_a_rapid_series_weighs_about_one_over_k_squared_and_stays_bounded() -> None:
    # 200 kills of one victim 65 s apart: the load grows by H − 65 s per kill
    load, t_prev, total = 0, None, 0.0
    for k in range(200):
        ts = k * 65_000
        found = leaked_load(load, t_prev, ts)
        total += load_weight(found, DECAY)
        load, t_prev = load_after(found, DECAY), ts
    assert total < 1.0 + math.pi**2 / 6  # Σ 1/k² bound (each weight ≤ 1/k² up to the leak)
    assert total > 1.5
    # a pair that meets once per H or less often: every kill counts in full again
    assert load_weight(leaked_load(load_after(0, DECAY), 0, DECAY.pair_decay_ms), DECAY) == 1.0


def test_pair_sigma_replaces_the_population_mean() -> None:
    a, b = 80.0, 350.0
    assert pair_sigma(a, b) == 215.0
    # own_sigma: D = θ + λ·(σ_a + σ_b)/2 whatever the population holds
    units = 10**30  # a population σ̄ far from a's and b's
    p = kill_probability(1200.0, a, 0, 1000.0, b, 0, units, 7, OWN)
    d = OWN.theta + OWN.lambda_sigma * 215.0
    assert p == 0.5 + math.atan(200.0 / d) / math.pi
    both = OWN.with_overrides({"logistic_link": 1})
    assert kill_probability(1200.0, a, 0, 1000.0, b, 0, units, 7, both) == p_ab_logistic(
        1200.0, 1000.0, d
    )


def test_rate_kill_refuses_pair_decay_without_the_load() -> None:
    a, b = new_player(DECAY), new_player(DECAY)
    units = 2 * sigma_units(DECAY.sigma0, DECAY)
    snap = initial_snapshot(DECAY)
    with pytest.raises(EngineError):
        rate_kill(a, b, T0, units, 2, snap, DECAY)
    rate_kill(a, b, T0, units, 2, snap, DECAY, None, 0)  # with a load it rates


def test_a_paced_farmer_gains_less_with_pair_decay() -> None:
    gains = {}
    for params in (Params(), DECAY):
        book = RatingBook(params)
        for k in range(20):
            book.apply("", f"p{k}", f"p{(k + 1) % 20}", k * 1000)
        before = book.player("p0")
        assert before is not None
        for k in range(30):  # 30 kills of one victim 65 s apart: every one counted
            book.apply("", "p0", "p1", 100_000 + k * 65_000)
        after = book.player("p0")
        assert after is not None and after.n == before.n + 30
        gains[params.pair_decay] = after.mu - before.mu
    assert 0.0 < gains[float(H)] < gains[0.0] / 4


Event = tuple[str, str, int]
_GAPS = st.one_of(
    st.sampled_from([0, 1, 59_999, 60_000, 65_000, 600_000, 3_600_000, DAY, 8 * DAY]),
    st.integers(min_value=-600_000, max_value=4_000_000),
)


@st.composite
def streams(draw: st.DrawFn) -> list[Event]:
    """Kills among up to 5 players (so pairs repeat); time mostly forward, up to 10 min back."""
    players = [f"p{i}" for i in range(draw(st.integers(2, 5)))]
    raw = draw(
        st.lists(st.tuples(st.sampled_from(players), st.sampled_from(players), _GAPS), max_size=120)
    )
    events: list[Event] = []
    ts = high = T0
    for a, b, gap in raw:
        ts = max(high - 600_000, ts + gap)
        high = max(high, ts)
        events.append((a, b, ts))
    return events


def reference(events: list[Event], params: Params) -> dict[str, PlayerState]:
    """rate_kill with the loads in a plain dict, never forgotten: what a consumer would run."""
    states: dict[str, PlayerState] = {}
    last: dict[tuple[str, str], int] = {}
    loads: dict[tuple[str, str], tuple[int, int]] = {}
    snapshot = initial_snapshot(params)
    units = 0
    for a, b, ts in events:
        if a == b or is_duplicate(last.get((a, b)), ts, params):
            continue
        if snapshot.taken_at is None or ts - snapshot.taken_at >= EVERY_MS:
            active = [s.mu for s in states.values() if is_active(s, ts, params)]
            snapshot = take_snapshot(ts, active, [s.mu for s in states.values()], snapshot, params)
        for player in (a, b):
            if player not in states:
                states[player] = new_player(params)
                units += sigma_units(params.sigma0, params)
        t_load, stored = loads.get((a, b), (ts, 0))
        found = leaked_load(stored, t_load, ts)
        out = rate_kill(
            states[a], states[b], ts, units, len(states), snapshot, params, last.get((a, b)), found
        )
        states[a], states[b] = out.attacker, out.victim
        units += out.sigma_units_delta
        last[(a, b)] = ts
        loads[(a, b)] = (max(t_load, ts), load_after(found, params))
    return dict(sorted(states.items()))


SMALL = {"n_min": "3", "n_active": "2", "p_min": "3", "sigma_place": "300", "h_req": "30"}
PARAMS = st.sampled_from(
    [
        DECAY.with_overrides(SMALL),
        GENERAL.with_overrides(SMALL),
        GENERAL.with_overrides({**SMALL, "own_sigma": 1, "pair_decay": 61}),
        OWN.with_overrides(SMALL),
    ]
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), PARAMS)
def test_book_equals_rate_kill_with_a_dict_of_loads(events: list[Event], params: Params) -> None:
    book = RatingBook(params, calibrate_every_ms=EVERY_MS)
    for i, (a, b, ts) in enumerate(events):
        book.apply(str(i), a, b, ts)
    encode = msgspec.msgpack.encode
    assert encode(book.players()) == encode(reference(events, params))


@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(-600_000, 3 * H * 1000)),
        max_size=200,
    )
)
def test_pair_loads_forget_only_what_no_acceptable_event_can_see(
    steps: list[tuple[int, int, int]],
) -> None:
    lateness = 600_000
    table = PairLoads(DECAY, lateness)
    plain: dict[int, tuple[int, int]] = {}
    ts = high = T0
    for a, b, gap in steps:
        ts = max(high - lateness, ts + gap)
        high = max(high, ts)
        key = (a << 32) | b
        t_prev, stored = plain.get(key, (ts, 0))
        expected = leaked_load(stored, t_prev, ts)
        assert table.load(a, b, ts) == expected
        table.put(a, b, ts, expected, high)
        plain[key] = (max(t_prev, ts), load_after(expected, DECAY))
