"""`cooldowns()` of both books: each pair the cooldown table holds, with its newest counted time
(what `adr rebuild` writes as the consumer's cooldown records)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import AdrModel, ModelBook, Params, RatingBook

PLAYERS = [f"p{i}" for i in range(6)]
kills = st.lists(
    st.tuples(st.sampled_from(PLAYERS), st.sampled_from(PLAYERS), st.integers(0, 400_000)),
    max_size=300,
)


@settings(max_examples=60, deadline=None)
@given(kills)
def test_cooldowns_are_the_newest_counted_time_of_each_pair_still_held(events) -> None:  # type: ignore[no-untyped-def]
    params = Params()
    book = RatingBook(params, lateness_ms=30_000)
    generic = ModelBook(AdrModel(params), params, lateness_ms=30_000)
    newest: dict[tuple[str, str], int] = {}
    ts_now = 0
    for i, (a, b, step) in enumerate(events):
        ts_now += step // 50
        verdict = book.apply(str(i), a, b, ts_now)
        assert generic.apply(str(i), a, b, ts_now) == verdict
        if verdict.kind == "counted":
            newest[(a, b)] = ts_now
    got = {(a, b): t for a, b, t in book.cooldowns()}
    assert got == {(a, b): t for a, b, t in generic.cooldowns()}
    # every pair still held has its newest time; none is invented
    assert all(newest[pair] == t for pair, t in got.items())
    # a pair counted within the horizon the table must keep is held
    watermark = book.watermark
    if watermark is not None:
        horizon = watermark - 30_000 - params.pair_memory_ms
        assert {p for p, t in newest.items() if t > horizon} <= set(got)
