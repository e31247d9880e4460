"""Seasons in the consumer's batches (consumer/_batch.py, apply.lua, consumer/_season_read.py):
whatever the batch boundaries, and with a season closed between two batches or between a batch's
read and its write (the write then conflicts on the schedule's version and the batch is rated
again), the pool ends bit for bit as RatingBook with the final schedule: each player's soft reset
applied once, S, P, and the live board of the season the pool is in. The in-memory store for
many random runs (hypothesis), the Lua store on a real redis-server with `adr season close`'s
own function for a few."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import consumer_support as S
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consumer._intake import Accepted
from consumer._memory_store import MemoryStore
from consumer._store import Store
from engine import (
    Params,
    PlayerState,
    RatingBook,
    SeasonReset,
    SeasonSchedule,
    SeasonStart,
    season_start_ms,
    sigma_units,
    tier_label,
)
from redis_layout import Conflict, Keys
from redis_layout.player_codec import READ_FIELDS, decode_player
from schemas import kill_event
from serve.seasons import SeasonError, close_season, season_schedule

from consumer._batch import rate_batch  # isort: skip

TOPIC = "kills"
MIN = 60_000
PARAMS = Params.from_overrides({"n_min": "3", "n_active": "2", "p_min": "3", "sigma_place": "300"})
RESET = SeasonReset(0.5, 90.0)


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
    store: MemoryStore | Store, keys: Keys, run: Run, close: Callable[[], bool]
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
            plan = rate_batch(batch, {0: end}, view, keys, PARAMS)
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


def _book(run: Run, schedule: SeasonSchedule) -> RatingBook:
    book = RatingBook(PARAMS, fixed_snapshot=S.SNAPSHOT, seasons=schedule)
    for item in run.events:
        e = item.event
        book.apply(e.id, e.attacker, e.victim, e.ts)
    return book


def _board(book: RatingBook) -> dict[str, PlayerState]:
    """The live board the pool must show: placed players whose newest counted event is in the
    season the pool is in."""
    since = season_start_ms(book.seasons, book.ladder)
    return {
        p: s
        for p, s in book.players().items()
        if s.tier and (since is None or s.recent[-1] >= since)
    }


class _MemoryCloser:
    """`adr season close` on the in-memory pool: the next season starts after every accepted
    event time, toward a mean that differs per close; refused while the last one has not
    started (as the script refuses)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def __call__(self) -> bool:
        pool = self.store.held
        if pool.ladder != len(pool.seasons.starts):
            return False
        start = max(pool.watermarks.values(), default=-1) + 1
        k = len(pool.seasons.starts)
        pool.seasons = SeasonSchedule(
            (*pool.seasons.starts, SeasonStart(f"s{k + 2}", start, 990.0 + 7.5 * k, RESET)),
            version=pool.season_version + 1,
        )
        pool.season_version += 1
        return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.integers(2, 200), st.integers(3, 12))
def test_batches_and_closes_anywhere_end_as_the_book(seed: int, n: int, players: int) -> None:
    run = _run(seed, n, players)
    store = MemoryStore(S.SNAPSHOT)
    keys = Keys("mem")
    raced, refused = _consume(store, keys, run, _MemoryCloser(store))
    assert refused == raced  # each close between a read and its write: that batch again
    pool = store.held
    book = _book(run, pool.seasons)
    assert {p: s for p, (s, _ver) in pool.players.items()} == book.players()
    assert pool.sigma_units_total == book.total_sigma_units
    assert pool.player_count == len(book)
    assert pool.ladder == book.ladder
    assert pool.leaderboard == {p: repr(s.mu) for p, s in _board(book).items()}


@pytest.mark.integration
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_on_redis_with_the_real_close_the_pool_and_its_board_are_the_books(
    redis_url: str, unique_name: Callable[[str], str], seed: int
) -> None:
    client = redis.Redis.from_url(redis_url)
    keys = Keys(unique_name("seasons"))
    S.publish_snapshot(client, keys, S.SNAPSHOT)
    store = Store(client, keys, TOPIC, PARAMS)
    run = _run(seed, 600, 25)
    run.cuts = list(range(40, 601, 40))
    run.close_before, run.close_racing = {2, 6, 10}, {4, 8, 12}
    closes = iter(range(100))

    def close() -> bool:
        k = next(closes)
        try:
            close_season(client, keys.namespace, f"s{k}", f"s{k + 1}", topics=(TOPIC,),
                         reset=RESET, pool_mean=1000.0 + k)  # fmt: skip
        except SeasonError as exc:  # the last season scheduled has not started: refused
            assert "no counted event yet" in str(exc)
            return False
        return True

    raced, refused = _consume(store, keys, run, close)
    schedule = season_schedule(client, keys.namespace)
    assert len(schedule.starts) >= 3 and refused == raced >= 1
    book = _book(run, schedule)
    stored = {}
    for raw in client.scan_iter(match=keys.match_players, count=1000):
        decoded = decode_player(client.hmget(raw, READ_FIELDS))
        assert decoded is not None
        stored[raw.decode()[len(keys.player_prefix) :]] = decoded[0]
    assert stored == book.players()  # bit for bit
    pop = client.hgetall(keys.pop)
    assert (int(pop[b"sigma_hi"]) << 32) + int(pop[b"sigma_lo"]) == book.total_sigma_units
    assert int(client.hget(keys.season_schedule, "ladder") or 0) == book.ladder >= 1
    board = _board(book)
    assert {m.decode(): s for m, s in client.zrange(keys.lb, 0, -1, withscores=True)} == {
        p: s.mu for p, s in board.items()
    }
    counts = {k.decode(): int(v) for k, v in client.hgetall(keys.tier_counts).items() if int(v)}
    want: dict[str, int] = {}
    for s in board.values():
        want[tier_label(s.tier)] = want.get(tier_label(s.tier), 0) + 1
    assert counts == want
    assert sum(sigma_units(s.sigma, PARAMS) for s in book.players().values()) == (
        book.total_sigma_units
    )
    client.close()
