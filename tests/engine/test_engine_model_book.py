"""ModelBook (any RatingModel, RatingBook's rules): with ADR it is RatingBook bit for bit; with
every model it is the consumer-style replay through the model (cooldown, lateness, snapshots)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import (
    COUNTED,
    MODELS,
    AdrModel,
    ModelBook,
    ParamError,
    Params,
    RatingBook,
    model_named,
    profile_overrides,
)
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


class _CountingAdr(AdrModel):
    """ADR that counts `display` calls: taking a snapshot calls it for every active player."""

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self.displays = 0

    def display(self, state: Any) -> float:
        self.displays += 1
        return super().display(state)


@FAST
@given(streams(), PARAMS)
def test_predicting_first_changes_nothing(events: list[Event], params: Params) -> None:
    """`adr evaluate --events` predicts every kill before applying it: the book must end as if
    it had only applied."""
    plain = ModelBook(AdrModel(params), params, calibrate_every_ms=EVERY_MS)
    predicted = ModelBook(AdrModel(params), params, calibrate_every_ms=EVERY_MS)
    for i, (a, b, ts) in enumerate(events):
        if a != b:
            predicted.predict(a, b, ts)
        assert predicted.apply(str(i), a, b, ts) == plain.apply(str(i), a, b, ts)
    assert exact(predicted.players()) == exact(plain.players())
    assert exact(predicted.snapshot) == exact(plain.snapshot)


def test_a_due_snapshot_is_taken_once_for_predict_then_apply() -> None:
    """The snapshot due at an event is taken by `predict` and reused by that event's `apply`
    (it visits every active player: taking it twice doubled a log's evaluation time)."""
    params = Params()
    books = [ModelBook(_CountingAdr(params), params, calibrate_every_ms=EVERY_MS) for _ in "ab"]
    players = [f"p{i}" for i in range(12)]
    for book in books:  # enough events for everyone to be active (n_active each)
        for k in range(200):
            a, b = players[k % 12], players[(k * 5 + 1) % 12]
            if a != b:
                book.apply(str(k), a, b, 1_000 * 61 * k)
    applied_only, predicted_first = books
    due = 1_000 * 61 * 200 + EVERY_MS  # past the interval: a snapshot is due
    applied_only.model.displays = predicted_first.model.displays = 0
    assert applied_only.apply("x", "p0", "p3", due) is COUNTED
    predicted_first.predict("p0", "p3", due)
    assert predicted_first.apply("x", "p0", "p3", due) is COUNTED
    assert applied_only.model.displays >= 12  # the snapshot visited the 12 active players
    assert predicted_first.model.displays == applied_only.model.displays
    assert exact(predicted_first.players()) == exact(applied_only.players())


GENERAL = Params.from_overrides(profile_overrides("general"))  # pair_decay = 86400 s


@pytest.mark.parametrize("name", [m for m in MODELS if m != "adr"])
def test_a_model_other_than_adr_refuses_adrs_pair_decay_when_built(name: str) -> None:
    """pair_decay weighs a kill by the pair's load, which no other model has: refused when the
    model is built with such params (every entry point builds it through model_named), not
    silently dropped; without params (a reader building the model) nothing is checked."""
    with pytest.raises(ParamError, match=f"pair_decay=86400 .* the model '{name}' does not keep"):
        model_named(name, {}, GENERAL)
    model_named(name, {}, Params.from_overrides(profile_overrides("recommended")))
    model_named(name)


def test_modelbook_refuses_pair_decay_when_built_rather_than_at_the_first_kill() -> None:
    """ModelBook keeps no pair loads: with ADR, rate_kill raised at the first counted kill
    (adr evaluate --events --profile general failed midway); now the book refuses at start.
    ADR's own book keeps the loads and runs it."""
    adr = model_named("adr", {}, GENERAL)
    with pytest.raises(ParamError, match="ModelBook"):
        ModelBook(adr, GENERAL)
    book = RatingBook(GENERAL)
    assert book.apply("e1", "a", "b", 1_000_000) is COUNTED
    Params().refuse_pair_decay("anything")  # the paper's parameters: nothing to refuse
