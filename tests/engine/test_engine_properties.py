"""Property tests over random event streams (hypothesis): bounds, dedup, determinism, exactness.

`reference_replay` drives the public pure functions the way the consumer does (a dict of
PlayerState, an unbounded cooldown table, a brute-force active set); RatingBook's compact storage,
cooldown pruning and incremental active heap must give bit-identical state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import (
    COUNTED,
    DUPLICATE,
    Params,
    PlayerState,
    RatingBook,
    Snapshot,
    initial_snapshot,
    is_active,
    is_duplicate,
    new_player,
    rate_kill,
    repeat_weight,
    sigma_units,
    take_snapshot,
)
from engine._pairs import PairTable

DAY = 86_400_000
T0 = 1_700_000_000_000
EVERY_MS = 600_000
# Small thresholds so that short streams place players, calibrate and move tiers.
SMALL = Params.from_overrides(
    {"n_min": "3", "n_active": "2", "p_min": "3", "sigma_place": "300", "h_req": "30"}
)
# Every opt-in extension on (engine.Params switches); μ_min near μ0 so the soft floor is reached.
EXTENDED = SMALL.with_overrides(
    {"bound_return_decay": 1, "zero_sum_update": 1, "floor_margin": 120, "repeat_window": 600,
     "decay_grace": 7, "logistic_link": 1, "theta": 100, "mu_min": 950}
)  # fmt: skip
REPEAT_ONLY = Params.from_overrides({"repeat_window": 3600, "floor_margin": 61, "decay_grace": 1})
PARAMS = st.sampled_from([SMALL, Params(), EXTENDED, REPEAT_ONLY])

Event = tuple[str, str, int]

_GAPS = st.one_of(
    st.sampled_from([0, 1, 30_000, 59_999, 60_000, 3_600_000, DAY, 8 * DAY, 61 * DAY, 90 * DAY]),
    st.integers(min_value=-600_000, max_value=600_000),
)


@st.composite
def streams(draw: st.DrawFn, monotone: bool = False, max_size: int = 120) -> list[Event]:
    """Kill events among up to 8 players; time mostly forward, at most 10 min behind the max."""
    players = [f"p{i}" for i in range(draw(st.integers(2, 8)))]
    raw = draw(
        st.lists(
            st.tuples(st.sampled_from(players), st.sampled_from(players), _GAPS),
            max_size=max_size,
        )
    )
    events: list[Event] = []
    ts = high = T0
    for a, b, gap in raw:
        ts = ts + abs(gap) if monotone else max(high - 600_000, ts + gap)
        high = max(high, ts)
        events.append((a, b, ts))
    return events


def reference_replay(
    events: Iterable[Event], params: Params, every_ms: int = EVERY_MS
) -> tuple[dict[str, PlayerState], Snapshot, int]:
    """The consumer's way through the public functions, without any of RatingBook's storage."""
    states: dict[str, PlayerState] = {}
    cooldown: dict[tuple[str, str], int] = {}
    snapshot = initial_snapshot(params)
    units = 0
    for a, b, ts in events:
        if a == b or is_duplicate(cooldown.get((a, b)), ts, params):
            continue
        if snapshot.taken_at is None or ts - snapshot.taken_at >= every_ms:
            active = [s.mu for s in states.values() if is_active(s, ts, params)]
            snapshot = take_snapshot(ts, active, [s.mu for s in states.values()], snapshot, params)
        for player in (a, b):
            if player not in states:
                states[player] = new_player(params)
                units += sigma_units(params.sigma0, params)
        out = rate_kill(
            states[a], states[b], ts, units, len(states), snapshot, params, cooldown.get((a, b))
        )
        states[a], states[b] = out.attacker, out.victim
        units += out.sigma_units_delta
        cooldown[(a, b)] = ts
    return dict(sorted(states.items())), snapshot, units


def replay(events: Iterable[Event], params: Params, lateness_ms: int = 3_600_000) -> RatingBook:
    book = RatingBook(params, calibrate_every_ms=EVERY_MS, lateness_ms=lateness_ms)
    for i, (a, b, ts) in enumerate(events):
        book.apply(str(i), a, b, ts)
    return book


def exact(value: object) -> bytes:
    """Bit-exact encoding (msgpack keeps every float's 64 bits)."""
    return msgspec.msgpack.encode(value)


def assert_in_bounds(state: PlayerState, params: Params) -> None:
    """§7.1: every state component stays in its domain."""
    assert params.mu_min <= state.mu <= params.mu_max
    assert params.sigma_min <= state.sigma <= params.sigma_max
    assert -1.0 <= state.phi <= 1.0
    assert params.nu_min <= state.pool <= params.nu_max
    assert state.streak >= 0 and state.n >= 0
    assert 0 <= state.tier <= 15
    assert state.h_up >= 0.0 and state.h_down >= 0.0
    assert len(state.window) <= params.window and all(w >= 0.0 for w in state.window)
    assert len(state.recent) <= params.n_active and list(state.recent) == sorted(state.recent)


FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(streams(), PARAMS)
def test_every_state_component_stays_in_bounds(events: list[Event], params: Params) -> None:
    book = RatingBook(params, calibrate_every_ms=EVERY_MS)
    for i, (a, b, ts) in enumerate(events):
        if book.apply(str(i), a, b, ts) is COUNTED:
            for player in (a, b):
                state = book.player(player)
                assert state is not None
                assert_in_bounds(state, params)


@FAST
@given(streams(), PARAMS)
def test_book_equals_the_reference_driver_bit_for_bit(events: list[Event], params: Params) -> None:
    book = replay(events, params)
    states, snapshot, units = reference_replay(events, params)
    assert exact(book.players()) == exact(states)
    assert exact(book.snapshot) == exact(snapshot)
    assert book.total_sigma_units == units


@FAST
@given(streams(monotone=True), PARAMS)
def test_cooldown_pruning_keeps_dedup_exact(events: list[Event], params: Params) -> None:
    # lateness 0 and a sweep every second: pairs move to runs and runs expire all the time.
    book = RatingBook(params, calibrate_every_ms=EVERY_MS, lateness_ms=0)
    book._counting.pairs = PairTable(params.pair_memory_ms, 0, sweep_every_ms=1000)
    for i, (a, b, ts) in enumerate(events):
        book.apply(str(i), a, b, ts)
    states, snapshot, _ = reference_replay(events, params)
    assert exact(book.players()) == exact(states)
    assert exact(book.snapshot) == exact(snapshot)


@FAST
@given(streams(), PARAMS, st.data())
def test_duplicates_change_nothing(
    events: list[Event], params: Params, data: st.DataObject
) -> None:
    original = RatingBook(params, calibrate_every_ms=EVERY_MS)
    with_copies: list[Event] = []
    copies = 0
    for i, (a, b, ts) in enumerate(events):
        with_copies.append((a, b, ts))
        if original.apply(str(i), a, b, ts) is COUNTED and data.draw(st.booleans()):
            next_ts = events[i + 1][2] if i + 1 < len(events) else ts + 59_999
            delay = data.draw(st.integers(0, 59_999))
            with_copies.append((a, b, min(ts + delay, max(ts, next_ts))))
            copies += 1
    book = RatingBook(params, calibrate_every_ms=EVERY_MS)
    verdicts = [book.apply(str(i), a, b, ts) for i, (a, b, ts) in enumerate(with_copies)]
    assert exact(book.players()) == exact(original.players())
    assert exact(book.snapshot) == exact(original.snapshot)
    assert book.duplicates == original.duplicates + copies
    assert verdicts.count(DUPLICATE) == book.duplicates


@FAST
@given(streams(), PARAMS)
def test_replay_is_deterministic(events: list[Event], params: Params) -> None:
    first, second = replay(events, params), replay(events, params)
    assert exact(first.players()) == exact(second.players())
    assert exact(first.snapshot) == exact(second.snapshot)


@FAST
@given(streams(), PARAMS)
def test_n_counts_the_counted_events_naming_the_player(events: list[Event], params: Params) -> None:
    book = RatingBook(params, calibrate_every_ms=EVERY_MS)
    named: Counter[str] = Counter()
    for i, (a, b, ts) in enumerate(events):
        if book.apply(str(i), a, b, ts) is COUNTED:
            named.update((a, b))
    assert {p: s.n for p, s in book.players().items()} == dict(sorted(named.items()))
    assert book.counted + book.duplicates + book.rejected == len(events)
    assert book.counted == sum(named.values()) // 2


@FAST
@given(streams(), PARAMS)
def test_sigma_sum_is_exact(events: list[Event], params: Params) -> None:
    book = replay(events, params)
    states = book.players().values()
    assert book.total_sigma_units == sum(sigma_units(s.sigma, params) for s in states)


_MU = st.floats(min_value=0.0, max_value=4000.0)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_MU, min_size=0, max_size=80),
    st.none() | st.lists(_MU, min_size=14, max_size=14),
    st.sampled_from([SMALL, Params()]),
)
def test_boundaries_are_non_increasing_in_k(
    mus: list[float], old: list[float] | None, params: Params
) -> None:
    previous = None
    if old is not None:
        bounds = tuple(sorted(old, reverse=True))
        previous = Snapshot(taken_at=T0, mean_mu_active=1000.0, boundaries=bounds, active_count=0)
    snap = take_snapshot(T0 + 1, mus, [], previous, params)
    if snap.boundaries is not None:
        b = snap.boundaries
        assert len(b) == 14
        assert all(b[k] >= b[k + 1] for k in range(13))
        assert all(params.mu_min <= x <= params.mu_max for x in b)


@FAST
@given(streams(max_size=200), st.just(SMALL))
def test_book_boundaries_are_non_increasing(events: list[Event], params: Params) -> None:
    bounds = replay(events, params).snapshot.boundaries
    if bounds is not None:
        assert all(bounds[k] >= bounds[k + 1] for k in range(13))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(-200_000, 90_000)),
        max_size=150,
    ),
    st.integers(0, 1_000_000),
    st.sampled_from([1000, 150_000, 0]),
    st.sampled_from([Params(), Params.from_overrides({"repeat_window": 150})]),
)
def test_pair_table_answers_like_a_dict_for_every_acceptable_event(
    steps: list[tuple[int, int, int]], lateness: int, sweep_every: int, params: Params
) -> None:
    # Whatever moved to runs or was forgotten, dedup (and the opt-in repeat weight) of any event
    # not older than W − lateness is the same as with an unbounded dict (§2.1's reference).
    table = PairTable(params.pair_memory_ms, lateness, sweep_every_ms=sweep_every)
    model: dict[tuple[int, int], int] = {}
    ts = watermark = 0
    for a, b, gap in steps:
        ts = max(watermark - lateness, ts + gap)
        watermark = max(watermark, ts)
        for x in range(6):
            for y in range(6):
                for probe in (watermark - lateness, ts, watermark - 61_000, watermark):
                    if probe < watermark - lateness:
                        continue
                    last = table.last(x, y, probe, watermark)
                    got = is_duplicate(last, probe, params)
                    assert got == is_duplicate(model.get((x, y)), probe, params)
                    weight = repeat_weight(model.get((x, y)), probe, params)
                    assert repeat_weight(last, probe, params) == weight
        table.put(a, b, ts, watermark, watermark - lateness - params.pair_memory_ms)
        model[(a, b)] = ts
