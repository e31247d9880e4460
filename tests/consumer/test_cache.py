"""The consumer's state cache: bounded, most recently stored kept, forgets on demand."""

from __future__ import annotations

from collections import ChainMap

from hypothesis import given
from hypothesis import strategies as st

from consumer._view import Entries, Overlay, StateCache
from engine import Params, new_player

STATE = new_player(Params())


@given(
    capacity=st.integers(min_value=1, max_value=50),
    stores=st.lists(st.lists(st.integers(0, 80), max_size=30), max_size=20),
)
def test_never_over_capacity_and_the_latest_store_is_always_kept(
    capacity: int, stores: list[list[int]]
) -> None:
    cache = StateCache(capacity)
    latest: dict[str, int] = {}
    for ver, players in enumerate(stores):
        batch = {f"p{i}": (STATE, ver) for i in players}
        cache.store(batch)
        latest.update(dict.fromkeys(batch, ver))
        assert len(cache) <= capacity
        assert len(list(cache)) == len(cache) == len(set(cache))
        if len(batch) <= capacity:
            assert all(cache.entries[p] == entry for p, entry in batch.items())
        for player in cache:  # a held entry is the latest stored, never an older generation's
            assert cache.entries[player] == (STATE, latest[player])
            assert cache.entries.get(player) == (STATE, latest[player]) and player in cache


@given(
    capacity=st.integers(min_value=2, max_value=40),
    stores=st.lists(st.lists(st.integers(0, 60), max_size=10), max_size=40),
)
def test_the_most_recently_stored_half_of_capacity_is_held(
    capacity: int, stores: list[list[int]]
) -> None:
    """Two generations hold at least what an LRU of half the capacity would, less one store."""
    cache = StateCache(capacity)
    recency: dict[str, None] = {}  # players, least recently stored first
    largest = 0
    for players in stores:
        batch = {f"p{i}": (STATE, 0) for i in players}
        cache.store(batch)
        for player in batch:
            recency.pop(player, None)
            recency[player] = None
        largest = max(largest, len(batch))
        held = (capacity + 1) // 2 - largest
        if held > 0:
            assert all(player in cache for player in list(recency)[-held:])


def test_eviction_drops_the_least_recently_stored() -> None:
    cache = StateCache(10)
    cache.store({f"p{i}": (STATE, 1) for i in range(10)})
    cache.store({"p0": (STATE, 2)})  # p0 is now the most recent: its old entry goes first
    assert len(cache) == 10 and cache.entries["p0"] == (STATE, 2)
    for i, gone in ((10, "p1"), (11, "p2"), (12, "p3")):  # over capacity: the oldest goes
        cache.store({f"p{i}": (STATE, 1)})
        assert gone not in cache.entries and len(cache) == 10
    assert "p0" in cache.entries and "p4" in cache.entries


def test_capacity_zero_keeps_nothing_and_forget_drops() -> None:
    off = StateCache(0)
    off.store({"a": (STATE, 1)})
    assert len(off) == 0
    cache = StateCache(5)
    cache.store({"a": (STATE, 1), "b": (STATE, 1)})
    cache.forget(["a", "zz"])
    assert list(cache.entries) == ["b"]


@given(
    newer=st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 9), max_size=6),
    older=st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 9), max_size=8),
)
def test_overlay_reads_like_a_chain_map_newer_first(
    newer: dict[str, int], older: dict[str, int]
) -> None:
    top = Entries()
    for p, v in newer.items():
        top.put(p, STATE, v)
    cache = StateCache(100)
    cache.store({p: (STATE, v) for p, v in older.items()})
    overlay, chained = Overlay(top, cache), ChainMap(top, cache.entries)  # type: ignore[arg-type]
    for player in "abcdefghz":
        assert overlay.get(player) == chained.get(player)
        assert (player in overlay) == (player in chained)
    assert dict(overlay) == dict(chained)
    assert len(overlay) == len(chained)
    assert bool(overlay) == bool(chained)
