"""Seasons in the consumer's batches (consumer/_batch.py, consumer/_model_batch.py, apply.lua,
consumer/_season_read.py), for every rating model: whatever the batch boundaries, and with a
season closed between two batches or between a batch's read and its write (the write then
conflicts on the schedule's version and the batch is rated again), the pool ends bit for bit as
the book with the final schedule (RatingBook for ADR, ModelBook for another model): each
player's soft reset applied once, S, P, and the live board of the season the pool is in (its
scores and its own tier counts). The in-memory store for many random runs (hypothesis), the Lua
store on a real redis-server with `adr season close`'s own function for a few."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import consumer_support as S
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consumer._intake import Accepted
from consumer._memory_store import MemoryStore
from consumer._model_batch import rate_model_batch
from consumer._store import Store
from engine import (
    AdrModel,
    ModelBook,
    Params,
    RatingBook,
    RatingModel,
    SeasonReset,
    SeasonSchedule,
    SeasonStart,
    Snapshot,
    model_named,
    model_parameters,
    tier_label,
)
from redis_layout import Conflict, Keys, model_stamp, stamp_model
from redis_layout.player_codec import READ_FIELDS, decode_fields, decode_player, float_text
from schemas import kill_event
from serve.seasons import SeasonError, close_season, season_schedule

from consumer._batch import rate_batch  # isort: skip

TOPIC = "kills"
MIN = 60_000
PARAMS = Params.from_overrides({"n_min": "3", "n_active": "2", "p_min": "3", "sigma_place": "300"})
RESET = SeasonReset(0.5, 90.0)
NAMES = ("adr", "elo", "glicko2", "trueskill", "weng-lin")


@dataclass
class Rated:
    """A pool's model and what goes with it in these tests: the snapshot its tiers are placed
    on, the close's reset and pool means, the book that is the reference."""

    model: RatingModel[Any]
    snapshot: Snapshot
    reset: SeasonReset
    mean0: float
    """The first close's pool mean (each later one a little higher: each close its own)."""
    step: float

    @classmethod
    def named(cls, name: str) -> Rated:
        if name == "adr":
            return cls(AdrModel(PARAMS), S.SNAPSHOT, RESET, 990.0, 7.5)
        model = model_named(name, {"tier_n_min": "3"})
        new = model.new_player()
        mu = float(model.to_fields(new)[0])
        start = mu - (mu - model.display(new)) / 4.0
        step = model.config.tier_h_req / 8.0  # type: ignore[attr-defined]
        snapshot = Snapshot(
            taken_at=None, mean_mu_active=start, active_count=0,
            boundaries=tuple(start + step * (6.5 - k) for k in range(14)),
        )  # fmt: skip
        # a raise of 4/5 of the model's default (Elo: none), a mean off the initial rating
        reset = SeasonReset(0.5, model.default_sigma_raise() * 0.8)
        return cls(model, snapshot, reset, mu - 2.5, step)

    def rate(self, batch: list[Accepted], offsets: dict[int, int], view: Any, keys: Keys) -> Any:
        if isinstance(self.model, AdrModel):
            return rate_batch(batch, offsets, view, keys, PARAMS)
        return rate_model_batch(batch, offsets, view, keys, PARAMS, self.model)

    def book(self, run: Run, schedule: SeasonSchedule) -> RatingBook | ModelBook[Any]:
        book: RatingBook | ModelBook[Any]
        if isinstance(self.model, AdrModel):
            book = RatingBook(PARAMS, fixed_snapshot=self.snapshot, seasons=schedule)
        else:
            book = ModelBook(self.model, PARAMS, fixed_snapshot=self.snapshot, seasons=schedule)
        for item in run.events:
            e = item.event
            book.apply(e.id, e.attacker, e.victim, e.ts)
        return book

    def board(self, book: RatingBook | ModelBook[Any]) -> dict[str, Any]:
        """The live board the pool must show: placed players whose largest counted event is in
        the season the pool is in (by the engine's own rule, RatingModel.in_season)."""
        model = self.model
        return {
            p: s
            for p, s in book.players().items()
            if model.tier(s) and model.in_season(s, book.seasons, book.ladder)
        }

    def score(self, state: Any) -> str:
        """The board's score as the write sends it: ADR's μ, another model's display rating."""
        if isinstance(self.model, AdrModel):
            return repr(state.mu)
        return float_text(self.model.display(state))


@dataclass
class Run:
    """A stream and where its batches end, where a season is closed before a batch's read and
    where between its read and its write."""

    events: list[Accepted]
    cuts: list[int]
    close_before: set[int]
    close_racing: set[int]


def _run(seed: int, n: int, players: int) -> Run:
    rng = random.Random(seed)
    t = time.time_ns() // 1_000_000 - 50 * MIN  # inside the write's wall-clock horizon
    events = []
    for i in range(n):
        t += rng.randrange(-3 * MIN, 6 * MIN)
        a, b = rng.sample(range(players), 2)
        if rng.random() < 0.1 and events:
            a_, b_ = events[-1].event.attacker, events[-1].event.victim  # a repeat kill
            ev = kill_event(id=f"e{i}", arena="x", attacker=a_, victim=b_, ts=t)
        else:
            ev = kill_event(id=f"e{i}", arena="x", attacker=f"p{a}", victim=f"p{b}", ts=t)
        events.append(Accepted(0, i, ev))
    cuts = [*sorted(set(rng.sample(range(1, n), min(n - 1, rng.randrange(1, 12))))), n]
    batches = range(len(cuts))
    return Run(
        events,
        cuts,
        {i for i in batches if rng.random() < 0.3},
        {i for i in batches if rng.random() < 0.2},
    )


def _batch_reads(keys: Keys, batch: list[Accepted]) -> tuple[list[str], list[str], list[str]]:
    players = sorted({p for e in batch for p in (e.event.attacker, e.event.victim)})
    pairs = sorted({keys.cooldown(e.event.attacker, e.event.victim) for e in batch})
    ids = sorted({keys.event_id(e.event.id) for e in batch})
    return players, pairs, ids


def _consume(
    store: MemoryStore | Store, keys: Keys, run: Run, close: Callable[[], bool], rated: Rated
) -> tuple[int, int]:
    """The batches through read, rate and write, a close where the run says (`close` says
    whether it was done or refused); returns how many closes were done between a read and its
    write, and how many writes conflicted on the season (each batch so refused was rated
    again)."""
    raced, refused, start = 0, 0, 0
    for i, end in enumerate(run.cuts):
        batch = run.events[start:end]
        if i in run.close_before:
            close()
        racing = i in run.close_racing
        while True:
            players, pairs, ids = _batch_reads(keys, batch)
            view = store.read_view(players, pairs, [0], None, ids)
            plan = rated.rate(batch, {0: end}, view, keys)
            if racing:
                raced += close()
                racing = False
            try:
                store.write(plan)
            except Conflict as exc:
                assert exc.what == "season"
                refused += 1
                continue
            break
        start = end
    return raced, refused


class _MemoryCloser:
    """`adr season close` on the in-memory pool: the next season starts after every accepted
    event time, toward a mean that differs per close; refused while the last one has not
    started (as the script refuses)."""

    def __init__(self, store: MemoryStore, rated: Rated) -> None:
        self.store = store
        self.rated = rated

    def __call__(self) -> bool:
        pool = self.store.held
        if pool.ladder != len(pool.seasons.starts):
            return False
        start = max(pool.watermarks.values(), default=-1) + 1
        k = len(pool.seasons.starts)
        rated = self.rated
        mean = rated.mean0 + rated.step * k
        pool.seasons = SeasonSchedule(
            (*pool.seasons.starts, SeasonStart(f"s{k + 2}", start, mean, rated.reset)),
            version=pool.season_version + 1,
        )
        pool.season_version += 1
        return True


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NAMES), st.integers(0, 2**32), st.integers(2, 200), st.integers(3, 12))
def test_batches_and_closes_anywhere_end_as_the_book(
    name: str, seed: int, n: int, players: int
) -> None:
    run = _run(seed, n, players)
    rated = Rated.named(name)
    store = MemoryStore(rated.snapshot, rated.model)
    keys = Keys("mem")
    raced, refused = _consume(store, keys, run, _MemoryCloser(store, rated), rated)
    assert refused == raced  # each close between a read and its write: that batch again
    pool = store.held
    book = rated.book(run, pool.seasons)
    assert {p: s for p, (s, _ver) in pool.players.items()} == book.players()
    assert pool.sigma_units_total == book.total_sigma_units
    assert pool.player_count == len(book)
    assert pool.ladder == book.ladder
    assert pool.leaderboard == {p: rated.score(s) for p, s in rated.board(book).items()}


@pytest.mark.integration
@pytest.mark.parametrize(
    ("seed", "name"), [(1, "adr"), (2, "adr"), (3, "adr"), (4, "glicko2"), (5, "trueskill"),
                       (6, "elo"), (7, "weng-lin")],
)  # fmt: skip
def test_on_redis_with_the_real_close_the_pool_and_its_board_are_the_books(
    redis_url: str, unique_name: Callable[[str], str], seed: int, name: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    keys = Keys(unique_name("seasons"))
    rated = Rated.named(name)
    model = rated.model
    S.publish_snapshot(client, keys, rated.snapshot)
    if isinstance(model, AdrModel):
        store = Store(client, keys, TOPIC, PARAMS)
    else:  # the pool records its model: the close builds it from there (its mean, its reset)
        stamp_model(client, keys, model_stamp(name, model_parameters(model)))
        store = Store(client, keys, TOPIC, PARAMS, model=model)
    run = _run(seed, 600, 25)
    run.cuts = list(range(40, 601, 40))
    run.close_before, run.close_racing = {2, 6, 10}, {4, 8, 12}
    closes = iter(range(100))

    def close() -> bool:
        k = next(closes)
        try:  # the pool mean the close reads: the published one (ADR), the board's (another)
            close_season(client, keys.namespace, f"s{k}", f"s{k + 1}", topics=(TOPIC,),
                         reset=rated.reset)  # fmt: skip
        except SeasonError as exc:  # the last season scheduled has not started: refused
            assert "no counted event yet" in str(exc)
            return False
        return True

    raced, refused = _consume(store, keys, run, close, rated)
    schedule = season_schedule(client, keys.namespace)
    assert len(schedule.starts) >= 3 and refused == raced >= 1
    book = rated.book(run, schedule)
    stored = {}
    for raw in client.scan_iter(match=keys.match_players, count=1000):
        values = client.hmget(raw, READ_FIELDS)
        if isinstance(model, AdrModel):
            decoded = decode_player(values)
        else:
            fields = decode_fields(values)
            decoded = None if fields is None else (model.from_fields(fields[0]), fields[1])
        assert decoded is not None
        stored[raw.decode()[len(keys.player_prefix) :]] = decoded[0]
    assert stored == book.players()  # bit for bit
    pop = client.hgetall(keys.pop)
    assert (int(pop.get(b"sigma_hi", 0)) << 32) + int(pop.get(b"sigma_lo", 0)) == (
        book.total_sigma_units
    )
    assert int(client.hget(keys.season_schedule, "ladder") or 0) == book.ladder >= 1
    board = rated.board(book)
    assert {m.decode(): s for m, s in client.zrange(keys.lb, 0, -1, withscores=True)} == {
        p: float(rated.score(s)) for p, s in board.items()
    }
    counts = {k.decode(): int(v) for k, v in client.hgetall(keys.tier_counts).items() if int(v)}
    want: dict[str, int] = {}
    for s in board.values():
        want[tier_label(model.tier(s))] = want.get(tier_label(model.tier(s)), 0) + 1
    assert counts == want and board
    assert sum(model.units(s) for s in book.players().values()) == book.total_sigma_units
    assert book.players() != rated.book(run, SeasonSchedule()).players()  # resets were taken
    client.close()


@pytest.mark.integration
@pytest.mark.parametrize("name", ["elo", "glicko2", "trueskill", "weng-lin"])
def test_a_deleted_schedule_then_a_new_season_resets_the_model_pools_veterans(
    redis_url: str, unique_name: Callable[[str], str], name: str
) -> None:
    """The operator deletes `{ns}:season_schedule` of a model pool two seasons in (the players
    store season 2) and closes a new season (the schedule's one start): each veteran's first
    event of it takes that start's reset, as in an ADR pool, and stores the schedule's number,
    1; a player without an event since keeps the number it had (nothing written). Before the
    engine read a number past the schedule from the player's last kill, the veterans stayed in
    season 2 and took no reset (docs/models.md, "A stored season past the schedule")."""
    client = redis.Redis.from_url(redis_url)
    keys = Keys(unique_name("deleted"))
    rated = Rated.named(name)
    model = rated.model
    S.publish_snapshot(client, keys, rated.snapshot)
    stamp_model(client, keys, model_stamp(name, model_parameters(model)))
    store = Store(client, keys, TOPIC, PARAMS, model=model)
    t0 = time.time_ns() // 1_000_000 - 50 * MIN  # inside the write's wall-clock horizon
    offset = 0

    def batch(*kills: tuple[str, str, int]) -> None:
        nonlocal offset
        items = []
        for a, b, minute in kills:
            ev = kill_event(id=f"e{offset}", arena="x", attacker=a, victim=b, ts=t0 + minute * MIN)
            items.append(Accepted(0, offset, ev))
            offset += 1
        players, pairs, ids = _batch_reads(keys, items)
        view = store.read_view(players, pairs, [0], None, ids)
        store.write(rated.rate(items, {0: offset}, view, keys))

    def close(season: str, next_id: str) -> SeasonSchedule:
        close_season(client, keys.namespace, season, next_id, topics=(TOPIC,), reset=rated.reset)
        return season_schedule(client, keys.namespace)

    def stored(player: str) -> Any:
        fields = decode_fields(client.hmget(keys.player(player), READ_FIELDS))
        assert fields is not None
        return model.from_fields(fields[0])

    batch(("a", "b", 0), ("c", "d", 1))
    close("s1", "s2")
    batch(("a", "b", 5), ("c", "d", 6))
    close("s2", "s3")
    batch(("a", "b", 10), ("c", "d", 11))
    assert {stored(p).season for p in "abcd"} == {2}
    client.delete(keys.season_schedule)  # the operator
    schedule = close("s3", "s4")  # the new schedule: one start, after minute 11
    assert len(schedule.starts) == 1
    before = {p: stored(p) for p in "abcd"}
    batch(("a", "b", 15))
    for p in "ab":  # the start's reset (the state moved), then the kill
        crossed = model.season_step(before[p], t0 + 15 * MIN, schedule)
        assert crossed.season == 1 and crossed != before[p]
        assert stored(p).season == 1, p
    assert stored("c") == before["c"] and stored("c").season == 2
    client.close()
