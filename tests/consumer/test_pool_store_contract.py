"""One contract for every pool store (consumer/_ports.py, `PoolStore`), run against the in-memory
store (consumer/_memory_store.py) and the Lua store (consumer/_store.py) on a real redis-server:
what a view shows, what a write leaves, and which concurrent change makes a write a Conflict that
writes nothing. Every case runs for every rating model (engine.MODELS: ADR's write, and the
scored write of the others, each with its own loop and codec). The lifecycle's unit tests run
on the in-memory store; this suite is what lets them stand for the Lua one."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consumer._batch import Plan, View, rate_batch
from consumer._intake import Accepted, batch_reads
from consumer._memory_store import MemoryStore
from consumer._model_batch import rate_model_batch
from consumer._ports import PoolStore
from consumer._store import Store
from engine import (
    MODELS,
    AdrModel,
    Params,
    RatingModel,
    Snapshot,
    initial_snapshot,
    model_named,
)
from redis_layout import Conflict, Keys, encode_snapshot
from schemas import kill_event

TOPIC = "kill-events"
PARAMS = Params()
NOW = time.time_ns() // 1_000_000 - 600_000


SNAPSHOT = initial_snapshot(PARAMS)
"""The snapshot both stores show: no tier boundaries yet, so nobody is placed (`_placed` makes
one where a case needs players ranked)."""
PLACED = msgspec.structs.replace(
    SNAPSHOT,
    taken_at=NOW,
    mean_mu_active=1012.5,
    boundaries=tuple(1400.0 - 25.0 * k for k in range(14)),
    active_count=500,
)
"""Tier boundaries every model's players reach within a few dozen kills."""
Outbox = Callable[[], list[list[tuple[str, bytes]]]]
Ranks = Callable[[], dict[str, float]]


@dataclass
class Pool:
    """A store under test, with what the port does not show: the outbox, the leaderboard, and a
    second writer."""

    store: PoolStore
    keys: Keys
    model: RatingModel[Any]
    outbox: Outbox
    ranks: Ranks
    other: PoolStore
    """Another instance's store on the same pool (its writes are the concurrent changes)."""
    publish: Callable[[Snapshot], None]
    """The tier job's part: the snapshot every later view shows."""


@pytest.fixture(params=MODELS)
def model(request: pytest.FixtureRequest) -> RatingModel[Any]:
    return model_named(request.param, params=PARAMS)


def _memory(model: RatingModel[Any]) -> tuple[MemoryStore, Outbox, Ranks]:
    mine = MemoryStore(SNAPSHOT, model)
    return mine, lambda: mine.held.outbox, lambda: _scores(mine.held.leaderboard)


def _lua(client: redis.Redis, keys: Keys, model: RatingModel[Any]) -> tuple[Store, Outbox, Ranks]:
    decode = msgspec.msgpack.Decoder(list[tuple[str, bytes]])

    def outbox() -> list[list[tuple[str, bytes]]]:
        return [decode.decode(fields[b"m"]) for _id, fields in client.xrange(keys.outbox)]

    def ranks() -> dict[str, float]:
        return {p.decode(): s for p, s in client.zrange(keys.lb, 0, -1, withscores=True)}

    return Store(client, keys, TOPIC, PARAMS, model=model), outbox, ranks


def _scores(leaderboard: dict[str, str]) -> dict[str, float]:
    return {p: float(s) for p, s in leaderboard.items()}


@pytest.fixture(params=["memory", pytest.param("lua", marks=pytest.mark.integration)])
def pool(request: pytest.FixtureRequest, model: RatingModel[Any]) -> Iterator[Pool]:
    keys = Keys(f"contract-{time.time_ns()}")
    if request.param == "memory":
        mine, outbox, ranks = _memory(model)

        def published(snapshot: Snapshot) -> None:
            mine.snapshot = snapshot

        yield Pool(mine, keys, model, outbox, ranks, mine, published)
        return
    client = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    store, outbox, ranks = _lua(client, keys, model)

    def publish(snapshot: Snapshot) -> None:
        fields = encode_snapshot(snapshot) | {"version": str(time.time_ns())}
        client.hset(keys.snapshot, mapping=fields)  # type: ignore[arg-type]

    yield Pool(store, keys, model, outbox, ranks, _lua(client, keys, model)[0], publish)
    client.close()


def _events(*kills: tuple[str, str], partition: int = 0, first: int = 0) -> list[Accepted]:
    out = []
    for i, (a, b) in enumerate(kills, first):
        ts = NOW + i * 90_000
        event = kill_event(id=f"e{partition}-{i}", arena="x", attacker=a, victim=b, ts=ts)
        out.append(Accepted(partition, i, event))
    return out


def _read(store: PoolStore, keys: Keys, events: list[Accepted]) -> View:
    players, pairs, ids = batch_reads(events, keys)
    return store.read_view(players, pairs, sorted({e.partition for e in events}), ids=ids)


def _plan(store: PoolStore, keys: Keys, events: list[Accepted], model: RatingModel[Any]) -> Plan:
    """`events` rated on a fresh read by the pool's loop (pipeline.rating_step's choice)."""
    offsets = {e.partition: e.offset + 1 for e in events}
    view = _read(store, keys, events)
    if isinstance(model, AdrModel):
        return rate_batch(events, offsets, view, keys, PARAMS, model=model)
    return rate_model_batch(events, offsets, view, keys, PARAMS, model)


def test_a_fresh_pool_shows_nothing_stored(pool: Pool) -> None:
    events = _events(("a", "b"))
    view = _read(pool.store, pool.keys, events)
    assert view.players == {"a": (None, 0), "b": (None, 0)}
    assert view.cooldowns == {pool.keys.cooldown("a", "b"): None}
    assert view.event_ids == {pool.keys.event_id("e0-0"): None}
    assert (view.sigma_units_total, view.player_count, view.epoch) == (0, 0, 0)
    assert view.offsets == {0: None} and view.watermarks == {0: None}
    assert view.snapshot == SNAPSHOT and view.corrupt == {}
    assert pool.store.read_offsets([0, 1]) == {0: None, 1: None}


def test_a_write_leaves_what_the_plan_says(pool: Pool) -> None:
    events = _events(("a", "b"), ("b", "c"), ("a", "b"))
    plan = _plan(pool.store, pool.keys, events, pool.model)
    assert plan.counted == 3 and plan.outbox
    pool.store.write(plan)
    view = _read(pool.store, pool.keys, events)
    assert view.players == dict(plan.states.items())  # the model's states, as rated
    assert view.player_count == plan.player_count == 3
    expected_units = sum(pool.model.units(s) for s, _ver in plan.states.values())
    assert view.sigma_units_total == expected_units
    assert view.offsets == {0: 3} and pool.store.read_offsets([0]) == {0: 3}
    assert view.watermarks == {0: events[-1].event.ts}
    assert view.cooldowns == dict(plan.cooldowns)
    assert view.event_ids == {key: digest for key, digest, _ts in plan.event_ids}
    assert pool.outbox() == [list(plan.outbox)]
    assert pool.ranks() == {}  # nobody placed in a tier yet: nobody ranked
    again = _plan(
        pool.store, pool.keys, events, pool.model
    )  # the same batch again: already applied
    assert (again.counted, again.already_applied, again.players) == (0, 3, [])


def test_a_write_sent_behind_a_read_runs_after_it(pool: Pool) -> None:
    first = _events(("a", "b"))
    plan = _plan(pool.store, pool.keys, first, pool.model)
    second = _events(("a", "c"), first=1)
    players, pairs, ids = batch_reads(second, pool.keys)
    view, write = pool.store.read_view_then_write(players, pairs, [0], None, plan, ids)
    assert view.players["a"] == (None, 0) and view.offsets == {0: None}  # before the write
    write.result()
    after = _read(pool.store, pool.keys, second)
    assert after.players["a"] == plan.states["a"] and after.offsets == {0: 1}


def test_cached_players_are_taken_from_the_cache(pool: Pool) -> None:
    stale = (pool.model.new_player(), 41)
    events = _events(("a", "b"))
    players, pairs, ids = batch_reads(events, pool.keys)
    view = pool.store.read_view(players, pairs, [0], {"a": stale}, ids)
    assert view.players == {"a": stale, "b": (None, 0)}


@pytest.mark.parametrize(
    "change, what",
    [("player", "player"), ("offset", "offset"), ("epoch", "epoch"), ("event_id", "event_id")],
)
def test_a_concurrent_change_is_a_conflict_and_nothing_is_written(
    pool: Pool, change: str, what: str
) -> None:
    """Another instance writes between this one's read and its write: the write refuses (the
    Conflict names what moved) and writes nothing; a plan rated on a fresh read then applies."""
    mine = _events(("a", "b"), ("c", "d"), first=1)
    model = pool.model
    plan = _plan(pool.store, pool.keys, mine, model)
    if change == "player":  # another partition's batch rates `a`
        pool.other.write(_plan(pool.other, pool.keys, _events(("a", "e"), partition=1), model))
    elif change == "offset":  # another instance applied this partition's event before mine
        pool.other.write(_plan(pool.other, pool.keys, _events(("x", "y")), model))
    elif change == "epoch":
        assert pool.other.raise_epoch(5) == 5
    else:  # the same event id counted on another partition, by other players
        reused = Accepted(1, 0, msgspec.structs.replace(mine[1].event, attacker="x", victim="y"))
        pool.other.write(_plan(pool.other, pool.keys, [reused], model))
    before = pool.outbox()
    with pytest.raises(Conflict) as caught:
        pool.store.write(plan)
    assert caught.value.what == what
    assert pool.outbox() == before
    assert _read(pool.store, pool.keys, mine).players["c"] == (None, 0)
    pool.store.write(_plan(pool.store, pool.keys, mine, model))  # a redo on a fresh read applies
    assert pool.store.read_offsets([0]) == {0: 3}


def test_players_placed_in_a_tier_are_ranked_by_the_pools_score(pool: Pool) -> None:
    """With tier boundaries published, players who play enough are placed; each placed player is
    ranked by its model's score (ADR: μ; another model: its display rating), an unplaced one not
    at all, whichever store holds the pool."""
    pool.publish(PLACED)
    model = pool.model
    kills = [("a", "b"), ("b", "c"), ("c", "a"), ("a", "c")] * 10
    events = _events(*kills)
    for lo in range(0, len(events), 8):
        pool.store.write(_plan(pool.store, pool.keys, events[lo : lo + 8], model))
    view = _read(pool.store, pool.keys, events)
    assert view.snapshot == PLACED
    placed = {p: s for p, (s, _ver) in view.players.items() if model.tier(s)}
    assert placed, "nobody placed: the case shows nothing"
    score = (lambda s: s.mu) if isinstance(model, AdrModel) else model.display
    assert pool.ranks() == {p: score(s) for p, s in placed.items()}


def test_raising_the_epoch_goes_above_the_stored_one_and_the_least_asked(pool: Pool) -> None:
    assert pool.store.raise_epoch(0) == 1
    assert pool.store.raise_epoch(0) == 2
    assert pool.store.raise_epoch(10**12) == 10**12
    assert _read(pool.store, pool.keys, _events(("a", "b"))).epoch == 10**12


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kills=st.lists(
        st.tuples(st.sampled_from("abcde"), st.sampled_from("abcde"), st.integers(0, 200)),
        min_size=1,
        max_size=30,
    ),
    cuts=st.sets(st.integers(1, 29), max_size=4),
)
@pytest.mark.parametrize("name", MODELS)
def test_the_memory_and_lua_stores_end_alike_on_any_stream(
    redis_url: str, name: str, kills: list[tuple[str, str, int]], cuts: set[int]
) -> None:
    """Any stream of kills (repeats inside the cooldown included; self-kills left out, the
    decoder refuses them), cut into any batches, each read, rated and written by a pool of each
    model, with tier boundaries published: the two stores then show the same view and hold the
    same outbox and ranks."""
    model = model_named(name, params=PARAMS)
    events = []
    ts = NOW
    for i, (a, b, gap_s) in enumerate(k for k in kills if k[0] != k[1]):
        ts += gap_s * 1000
        events.append(
            Accepted(0, i, kill_event(id=f"p{i}", arena="x", attacker=a, victim=b, ts=ts))
        )
    if not events:
        return
    keys = Keys(f"contract-{time.time_ns()}")
    client = redis.Redis.from_url(redis_url)
    memory = _memory(model)
    memory[0].snapshot = PLACED  # tier boundaries in both: players placed and ranked
    stores: list[tuple[PoolStore, Outbox, Ranks]] = [memory, _lua(client, keys, model)]
    client.hset(keys.snapshot, mapping=encode_snapshot(PLACED) | {"version": "1"})  # type: ignore[arg-type]
    bounds = [0, *sorted(c for c in cuts if c < len(events)), len(events)]
    ends = []
    for store, outbox, ranks in stores:
        for lo, hi in itertools.pairwise(bounds):
            if hi > lo:
                store.write(_plan(store, keys, events[lo:hi], model))
        view = _read(store, keys, events)
        ends.append((view, outbox(), ranks()))
    client.close()
    (mine, mine_out, mine_ranks), (lua, lua_out, lua_ranks) = ends
    assert mine_out == lua_out
    assert mine_ranks == lua_ranks
    for field in ("players", "cooldowns", "event_ids", "offsets", "watermarks", "epoch"):
        assert getattr(mine, field) == getattr(lua, field), field
    assert (mine.sigma_units_total, mine.player_count) == (lua.sigma_units_total, lua.player_count)
