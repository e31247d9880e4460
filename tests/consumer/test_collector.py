"""The consumer's garbage-collection schedule (consumer/_collector.py) and what it relies on.

Pure unit tests: they change the process's collector settings and restore them (`stop`)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from consumer import _collector
from consumer._collector import Collector
from engine import Params, initial_snapshot, new_player, rate_kill, sigma_units


class _Node:
    """A container that can sit in a reference cycle."""

    def __init__(self) -> None:
        self.other: object = None


@pytest.fixture
def started() -> Iterator[Collector]:
    before = gc.get_threshold()
    collector = Collector()
    collector.start()
    try:
        yield collector
    finally:
        collector.stop()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_start_collects_the_young_generation_often_and_the_middle_one_never(
    started: Collector,
) -> None:
    young, middle, _ = gc.get_threshold()
    assert young == _collector._YOUNG_THRESHOLD
    assert middle >= 1 << 30
    before = gc.get_stats()
    keep = [[] for _ in range(10 * _collector._YOUNG_THRESHOLD)]  # net container allocations
    after = gc.get_stats()
    assert after[0]["collections"] - before[0]["collections"] >= 5
    assert after[1]["collections"] == before[1]["collections"]
    assert after[2]["collections"] == before[2]["collections"]
    assert len(keep) == 10 * _collector._YOUNG_THRESHOLD


def test_young_collections_free_young_cycles(started: Collector) -> None:
    ref = _cycle()
    keep = [[] for _ in range(3 * _collector._YOUNG_THRESHOLD)]
    assert ref() is None
    assert keep


def test_after_batch_collects_every_generation_once_a_minute(started: Collector) -> None:
    ref = _cycle()
    survivor = ref()
    gc.collect(0)  # reachable: moves to the middle generation
    del survivor
    keep = [[] for _ in range(3 * _collector._YOUNG_THRESHOLD)]  # young collections only
    started.after_batch()  # the minute is not over: nothing more
    assert ref() is not None
    started._next_full = 0.0
    started.after_batch()
    assert ref() is None
    assert keep


def test_what_a_rated_state_leaves_for_the_collector() -> None:
    """Rated states (and the outcome) are never tracked; their window and recent tuples are
    tracked until the first young collection visits them, which untracks them for good: each is
    visited once, so collecting often costs no more visits."""
    params = Params()
    a, b = new_player(params), new_player(params)
    units = 2 * sigma_units(params.sigma0, params)
    gc.disable()  # no automatic collection before the checks
    try:
        for ts in range(1_700_000_000_000, 1_700_000_000_000 + 30 * 70_000, 70_000):
            outcome = rate_kill(a, b, ts, units, 2, initial_snapshot(params), params)
            units += outcome.sigma_units_delta
            a, b = outcome.attacker, outcome.victim
    finally:
        gc.enable()
    assert not gc.is_tracked(outcome)
    for state in (a, b):
        assert not gc.is_tracked(state)
        assert len(state.window) == params.window
    assert gc.is_tracked(a.window) and gc.is_tracked(a.recent)  # not visited yet
    gc.collect(0)
    assert not gc.is_tracked(a.window) and not gc.is_tracked(a.recent)
