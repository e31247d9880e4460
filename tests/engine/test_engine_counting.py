"""engine/_counting.py: the one implementation of the counting rules RatingBook and ModelBook
share (bad input, lateness, the a→b cooldown, the active set, when snapshots are taken)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from engine import AdrModel, ModelBook, Params, RatingBook, initial_snapshot, model_named
from engine._counting import MAX_TS_MS, Counting
from tests.engine.test_engine_properties import FAST, PARAMS, Event, exact, streams

T0 = 1_700_000_000_000
HOUR = 3_600_000


class Table:
    """A book's players as the rules read them: activity times and ratings by number."""

    def __init__(self) -> None:
        self.times: dict[int, int | None] = {}
        self.values: dict[int, float] = {}

    def activity(self, i: int) -> int | None:
        return self.times.get(i)

    def rating(self, i: int) -> float:
        return self.values[i]

    def ratings(self) -> Iterable[float]:
        return self.values.values()


def counting(
    params: Params | None = None, lateness_ms: int = HOUR, players: Table | None = None
) -> Counting:
    params = params or Params()
    snapshot = initial_snapshot(params)
    return Counting(params, 300_000, lateness_ms, snapshot, False, players or Table(), -7.0)


def test_bad_input_is_refused_with_its_reason_and_the_watermark_only_grows() -> None:
    rules = counting()
    assert rules.refusal("a", "a", T0) is not None
    assert rules.refusal("a", "b", -1) is not None
    assert rules.refusal("a", "b", MAX_TS_MS + 1) is not None
    assert rules.refusal("a", "", T0) is not None
    assert rules.watermark is None  # nothing refused moves it
    assert rules.refusal("a", "b", T0) is None
    assert rules.refusal("a", "b", T0 - 1000) is None  # late within the bound: admitted
    assert rules.watermark == T0
    assert rules.rejected == 4
    assert rules.rejected_by_reason == {"self_kill": 1, "bad_ts": 2, "bad_player": 1}


def test_lateness_bound_is_inclusive_of_watermark_less_lateness() -> None:
    rules = counting(lateness_ms=HOUR)
    assert rules.refusal("a", "b", T0) is None
    assert rules.refusal("a", "b", T0 - HOUR) is None
    refused = rules.refusal("a", "b", T0 - HOUR - 1)
    assert refused is not None and refused.reason == "late"


def test_a_repeat_inside_the_cooldown_is_a_duplicate_and_one_at_it_counts() -> None:
    params = Params()
    rules = counting(params)
    rules.track()
    rules.track()
    assert rules.refusal("a", "b", T0) is None
    assert not rules.is_repeat(rules.pair_last(0, 1, T0), T0)
    rules.count(0, 1, T0)
    inside = T0 + params.cooldown_ms - 1
    assert rules.refusal("a", "b", inside) is None
    assert rules.is_repeat(rules.pair_last(0, 1, inside), inside)
    at = T0 + params.cooldown_ms
    assert rules.refusal("a", "b", at) is None
    assert not rules.is_repeat(rules.pair_last(0, 1, at), at)
    assert not rules.is_repeat(rules.pair_last(1, 0, inside), inside)  # b→a is another pair
    assert (rules.counted, rules.duplicates) == (1, 1)


def test_snapshots_read_the_active_players_then_everyone_then_the_empty_mean() -> None:
    params = Params()
    table = Table()
    rules = counting(params, players=table)

    def take(now: int) -> Any:
        rules.take(now)
        return rules.snapshot

    assert rules.due(T0)
    empty = take(T0)
    assert (empty.taken_at, empty.mean_mu_active, empty.active_count) == (T0, -7.0, 0)
    for _ in range(3):
        rules.track()
    table.values.update({0: 1000.0, 1: 2000.0, 2: 3000.0})
    table.times.update({0: T0, 1: T0 + HOUR, 2: None})
    rules.file(0, T0)
    rules.file(1, T0 + HOUR)
    assert not rules.due(T0 + 1) and rules.due(T0 + 300_000)
    both = take(T0 + 2 * HOUR)
    assert (both.mean_mu_active, both.active_count) == (1500.0, 2)
    # player 0's activity ends at T0 + T_active; player 1's an hour later
    one = take(T0 + params.active_ms)
    assert (one.mean_mu_active, one.active_count) == (2000.0, 1)
    assert not rules.filed(0) and rules.filed(1)
    nobody = take(T0 + params.active_ms + HOUR)  # none active: every player's rating
    assert (nobody.mean_mu_active, nobody.active_count) == (2000.0, 3)


def test_a_fixed_snapshot_is_never_due() -> None:
    params = Params()
    fixed = initial_snapshot(params)
    rules = Counting(params, 0, HOUR, fixed, True, Table(), 0.0)
    assert not rules.due(T0)
    assert rules.snapshot_at(T0) is fixed


@FAST
@given(streams(), PARAMS, st.data())
def test_predicting_ahead_leaves_both_books_alike(
    events: list[Event], params: Params, data: st.DataObject
) -> None:
    """A prediction for a later time (an event that never comes) changes no book's state: the
    snapshot a later-arriving earlier event takes still sees every player active then."""
    book = RatingBook(params, calibrate_every_ms=600_000)
    generic: ModelBook[Any] = ModelBook(AdrModel(params), params, calibrate_every_ms=600_000)
    for i, (a, b, ts) in enumerate(events):
        ahead = ts + data.draw(st.integers(0, 30 * 86_400_000), label="ahead")
        if a != b and 0 <= ahead <= MAX_TS_MS:
            assert generic.predict(a, b, ahead) == book.predict(a, b, ahead)
        assert book.apply(str(i), a, b, ts) == generic.apply(str(i), a, b, ts)
    assert exact(generic.players()) == exact(book.players())
    assert exact(generic.snapshot) == exact(book.snapshot)


@FAST
@given(streams(), st.sampled_from(["elo", "glicko2", "trueskill", "weng-lin"]))
def test_every_model_book_keeps_ratingbooks_cooldown_table(events: list[Event], name: str) -> None:
    params = Params()
    book = RatingBook(params, calibrate_every_ms=600_000)
    other: ModelBook[Any] = ModelBook(model_named(name), params, calibrate_every_ms=600_000)
    for i, (a, b, ts) in enumerate(events):
        assert other.apply(str(i), a, b, ts) == book.apply(str(i), a, b, ts)
    assert sorted(other.cooldowns()) == sorted(book.cooldowns())
    assert other.watermark == book.watermark
    assert other.rejected_by_reason == book.rejected_by_reason
