"""ModelBook (any RatingModel, RatingBook's rules): with ADR it is RatingBook bit for bit; with
every model it is the consumer-style replay through the model (cooldown, lateness, snapshots)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from engine import COUNTED, AdrModel, ModelBook, Params, RatingBook, model_named
from tests.engine.test_engine_properties import FAST, PARAMS, Event, exact, streams

EVERY_MS = 600_000


def both(
    events: list[Event], params: Params, lateness_ms: int
) -> tuple[RatingBook, ModelBook[Any]]:
    book = RatingBook(params, calibrate_every_ms=EVERY_MS, lateness_ms=lateness_ms)
    generic = ModelBook(
        AdrModel(params), params, calibrate_every_ms=EVERY_MS, lateness_ms=lateness_ms
    )
    for i, (a, b, ts) in enumerate(events):
        if len(book):
            assert generic.predict(a, b, ts) == book.predict(a, b, ts) if a != b else True
        assert book.apply(str(i), a, b, ts) == generic.apply(str(i), a, b, ts)
    return book, generic


@FAST
@given(streams(), PARAMS, st.sampled_from([0, 300_000, 3_600_000]))
def test_model_book_with_adr_is_rating_book_bit_for_bit(
    events: list[Event], params: Params, lateness_ms: int
) -> None:
    book, generic = both(events, params, lateness_ms)
    assert exact(generic.players()) == exact(book.players())
    assert exact(generic.snapshot) == exact(book.snapshot)
    assert generic.total_sigma_units == book.total_sigma_units
    assert (generic.counted, generic.duplicates, generic.rejected) == (
        book.counted, book.duplicates, book.rejected,
    )  # fmt: skip
    assert generic.rejected_by_reason == book.rejected_by_reason
    assert generic.watermark == book.watermark


@FAST
@given(streams(), st.sampled_from(["elo", "glicko2", "trueskill", "weng-lin"]))
def test_model_book_counts_the_same_events_for_every_model(events: list[Event], name: str) -> None:
    """Which events count is the pool's rule, not the model's: the same as ADR's."""
    params = Params()
    adr = ModelBook(AdrModel(params), params, calibrate_every_ms=EVERY_MS)
    other = ModelBook(model_named(name), params, calibrate_every_ms=EVERY_MS)
    for i, (a, b, ts) in enumerate(events):
        verdict = other.apply(str(i), a, b, ts)
        assert verdict == adr.apply(str(i), a, b, ts)
        if verdict is COUNTED:
            state = other.player(a)
            assert state is not None and state.last_ts == ts
    assert sorted(other.players()) == sorted(adr.players())
