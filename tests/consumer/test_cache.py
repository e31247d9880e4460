"""The consumer's state cache: bounded, most recently stored kept, forgets on demand."""

from __future__ import annotations

from collections import ChainMap

from hypothesis import given
from hypothesis import strategies as st

from consumer._cache import Overlay, StateCache
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
    for ver, players in enumerate(stores):
        batch = {f"p{i}": (STATE, ver) for i in players}
        cache.store(batch)
        assert len(cache) <= capacity
        if len(batch) <= capacity - capacity // 10:
            assert all(cache.entries[p] == entry for p, entry in batch.items())


def test_eviction_drops_the_least_recently_stored() -> None:
    cache = StateCache(10)
    cache.store({f"p{i}": (STATE, 1) for i in range(10)})
    cache.store({"p0": (STATE, 2)})  # p0 is now the most recent
    cache.store({"new": (STATE, 1)})  # over capacity: the oldest tenth (+1) goes
    assert "p0" in cache.entries and "new" in cache.entries
    assert "p1" not in cache.entries and "p2" not in cache.entries
    assert cache.entries["p0"] == (STATE, 2)


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
    top = {p: (STATE, v) for p, v in newer.items()}
    cache = StateCache(100)
    cache.store({p: (STATE, v) for p, v in older.items()})
    overlay, chained = Overlay(top, cache), ChainMap(top, cache.entries)  # type: ignore[arg-type]
    for player in "abcdefghz":
        assert overlay.get(player) == chained.get(player)
        assert (player in overlay) == (player in chained)
    assert dict(overlay) == dict(chained)
    assert len(overlay) == len(chained)
    assert bool(overlay) == bool(chained)
