"""The Board's queries against a model of the board, for any players and scores (hypothesis), on a
real redis-server: ranks are positions by μ descending, ties by player id in descending byte
order (as ZREVRANGE orders them); `around` is the slice of K each side, `friends` the placed ids
in that order, `rank`/`tier` the hash's fields. The Go and TypeScript readers answer as the Board
does (tests/examples/test_readers.py, test_readers_acl.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import TIER_LABELS
from leaderboard import Board, PlayerNotFound
from redis_layout import Keys

_IDS = st.text(alphabet="abcé", min_size=1, max_size=3)  # small: equal μ and shared prefixes
_MU = st.sampled_from([850.0, 900.25, 1000.0, 1200.0, 1500.5])  # few values: many ties
_PLAYERS = st.dictionaries(
    _IDS, st.tuples(_MU, st.sampled_from(["", *TIER_LABELS[:3]])), max_size=12
)


@pytest.fixture(scope="module")
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    try:
        yield c
    finally:
        c.close()


def _seed(client: redis.Redis, players: dict[str, tuple[float, str]]) -> Keys:
    keys = Keys(f"model-{uuid.uuid4().hex[:10]}")
    pipe = client.pipeline()
    for pid, (mu, tier) in players.items():
        pipe.hset(keys.player(pid), mapping={"mu": repr(mu), "tier": tier})
        if tier:
            pipe.zadd(keys.lb, {pid: mu})
    pipe.execute()
    return keys


def _drop(client: redis.Redis, keys: Keys, players: dict[str, tuple[float, str]]) -> None:
    client.delete(keys.lb, *(keys.player(p) for p in players))


def _order(placed: dict[str, float]) -> list[str]:
    return sorted(placed, key=lambda p: (placed[p], p.encode()), reverse=True)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(players=_PLAYERS, k=st.integers(0, 4), asked=st.lists(_IDS, max_size=6))
def test_every_query_matches_the_model(
    client: redis.Redis, players: dict[str, tuple[float, str]], k: int, asked: list[str]
) -> None:
    keys = _seed(client, players)
    try:
        board = Board(client, keys.namespace)
        placed = {p: mu for p, (mu, tier) in players.items() if tier}
        order = _order(placed)
        assert [(e.rank, e.player, e.mu) for e in board.top(100)] == [
            (i + 1, p, placed[p]) for i, p in enumerate(order)
        ]
        for who in [*players, *asked]:
            if who not in players:
                with pytest.raises(PlayerNotFound):
                    board.rank(who)
                with pytest.raises(PlayerNotFound):
                    board.tier(who)
                with pytest.raises(PlayerNotFound):
                    board.around(who, k)
                continue
            mu, tier = players[who]
            entry = board.rank(who)
            rank = order.index(who) + 1 if who in placed else None
            assert (entry.rank, entry.mu, entry.tier) == (rank, mu, tier or None)
            assert board.tier(who).tier == (tier or None)
            if rank is None:
                with pytest.raises(PlayerNotFound):
                    board.around(who, k)
                continue
            lo = max(0, rank - 1 - k)
            assert [(e.rank, e.player) for e in board.around(who, k)] == [
                (lo + i + 1, p) for i, p in enumerate(order[lo : rank + k])
            ]
        friends = _order({p: placed[p] for p in asked if p in placed})
        assert [(e.rank, e.player, e.tier) for e in board.friends(asked)] == [
            (i + 1, p, players[p][1]) for i, p in enumerate(friends)
        ]
    finally:
        _drop(client, keys, players)
