"""The Go and TypeScript leaderboard readers against a Redis the real consumer filled, a pool of
ADR and one of another model (TrueSkill: its display rating μ − 3σ ranks): the same answers as
`adr leaderboard`'s Board (top, rank, around, tier, friends) and as ZMSCORE (friends). As the
read-only ACL user, with every exit status: test_readers_acl.py."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from consumer.config import Config
from engine import Params, model_named
from leaderboard._board import Board, Entry
from redis_layout import LAYOUT_VERSION, Keys
from schemas import kill_event
from tests.consumer import consumer_support as S


@dataclass(frozen=True)
class Filled:
    redis_url: str
    namespace: str
    board: Board
    client: redis.Redis
    players: frozenset[str]
    """Every player of the consumed events (each has a hash)."""
    model: str


@pytest.fixture(scope="module", params=["adr", "trueskill"])
def filled(
    kafka_bootstrap: str, redis_url: str, kafka_admin: Any, request: pytest.FixtureRequest
) -> Filled:
    """3000 kills of 60 players and one each of 3 newcomers, consumed into a fresh namespace by
    a consumer of the model (`adr consume --model`)."""
    topic = kafka_admin.create(f"readers-{uuid.uuid4().hex[:10]}", partitions=1)
    ns, keys, client = S.rating_pool(redis_url, lambda prefix: f"{prefix}-{uuid.uuid4().hex[:10]}")
    events = S.events(3_000, players=60, arenas=6, seed=29)
    last = events[-1].ts
    events += [  # newcomers with one kill each: tracked, not placed
        kill_event(id=f"new-{i}", arena="arena-0", attacker=f"new-{i}", victim="p1", ts=last + i)
        for i in range(3)
    ]
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    config = Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=f"g-{uuid.uuid4().hex[:10]}", rating_topic=f"{topic}-ratings",
        dlq_topic=f"{topic}-dlq",
    )  # fmt: skip
    params = Params()
    model = None if request.param == "adr" else model_named(request.param, {}, params)
    consumer = S.start_threaded(config, params, model=model)
    try:
        S.wait_applied(client, keys, topic, {0: len(events)}, 120, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()
    placed, tracked = client.zcard(keys.lb), int(client.hget(keys.pop, "count") or 0)
    assert 10 < placed < tracked, (placed, tracked)  # placed and unplaced players both exist
    players = frozenset(p for e in events for p in (e.attacker, e.victim))
    return Filled(redis_url, ns, Board(client, ns), client, players, request.param)


def _read(reader: tuple[str, list[str]], filled: Filled, *args: str) -> tuple[int, Any]:
    done = subprocess.run(
        [*reader[1], *args], capture_output=True, text=True, timeout=60,
        env={**os.environ, "REDIS_URL": filled.redis_url, "ADR_NAMESPACE": filled.namespace},
    )  # fmt: skip
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else done.stderr


def _json(entries: list[Entry]) -> list[dict[str, Any]]:
    return [{"rank": e.rank, "player": e.player, "mu": e.mu, "tier": e.tier} for e in entries]


def test_top_rank_around_and_tier_match_adr_leaderboard(
    reader: tuple[str, list[str]], filled: Filled
) -> None:
    board = filled.board
    top = board.top(1000)
    assert _read(reader, filled, "top", "10") == (0, _json(top[:10]))
    assert _read(reader, filled, "top", "1000") == (0, _json(top))
    for who in (top[0].player, top[len(top) // 2].player, top[-1].player):
        assert _read(reader, filled, "rank", who) == (0, _json([board.rank(who)])[0])
        assert _read(reader, filled, "around", who, "3") == (0, _json(board.around(who, 3)))
        assert _read(reader, filled, "tier", who) == (
            0,
            {"player": who, "tier": board.rank(who).tier},
        )
    assert _read(reader, filled, "around", top[0].player, "0") == (0, _json(top[:1]))


def test_unplaced_and_unknown_players(reader: tuple[str, list[str]], filled: Filled) -> None:
    board = filled.board
    unplaced = sorted(filled.players - {e.player for e in board.top(1000)})
    assert unplaced
    for who in unplaced[:2]:
        assert _read(reader, filled, "rank", who) == (0, _json([board.rank(who)])[0])
        assert _read(reader, filled, "rank", who)[1]["rank"] is None
        code, why = _read(reader, filled, "around", who, "2")
        assert code == 1 and "not on the leaderboard" in why  # docs/leaderboards.md, Exit status
        assert _read(reader, filled, "tier", who) == (0, {"player": who, "tier": None})
    assert _read(reader, filled, "rank", "nobody")[0] == 1
    assert _read(reader, filled, "tier", "nobody")[0] == 1
    assert _read(reader, filled, "around", "nobody", "2")[0] == 1
    assert _read(reader, filled, "top", "zero")[0] == 2


def test_the_consumer_stamped_the_layout_version_the_readers_check(filled: Filled) -> None:
    assert filled.client.get(Keys(filled.namespace).layout) == str(LAYOUT_VERSION).encode()
    assert json.loads(filled.client.get(Keys(filled.namespace).model))["model"] == filled.model


def test_rank_is_the_models_display_rating(reader: tuple[str, list[str]], filled: Filled) -> None:
    """`mu` in rank is the rating ranks use: the {NS}:lb score of a placed player, computed
    from the hash (μ − k·σ for TrueSkill) for every player, placed or not."""
    keys = Keys(filled.namespace)
    scores = dict(filled.client.zrange(keys.lb, 0, -1, withscores=True))
    for who in sorted(filled.players)[:12]:
        code, got = _read(reader, filled, "rank", who)
        assert code == 0, got
        mu, sigma = (float(v) for v in filled.client.hmget(keys.player(who), "mu", "sigma"))
        want = mu if filled.model == "adr" else mu - 3.0 * sigma  # TrueSkill's display_k: 3
        assert got["mu"] == want
        if who.encode() in scores:
            assert got["mu"] == scores[who.encode()]


def test_friends_board_is_zmscore_of_the_ids_best_first(
    reader: tuple[str, list[str]], filled: Filled
) -> None:
    top = filled.board.top(1000)
    friends = [top[5].player, "nobody", top[1].player, top[-1].player, top[1].player]
    friends += sorted(filled.players - {e.player for e in top})[:2]
    scores = filled.client.zmscore(Keys(filled.namespace).lb, friends)
    placed = {p: s for p, s in zip(friends, scores, strict=True) if s is not None}
    order = sorted(placed, key=lambda p: (placed[p], p), reverse=True)
    tiers = {e.player: e.tier for e in top}
    want = [
        {"rank": i + 1, "player": p, "mu": placed[p], "tier": tiers[p]} for i, p in enumerate(order)
    ]
    assert len(want) == 3
    assert _json(filled.board.friends(friends)) == want  # adr leaderboard friends: the same
    assert _read(reader, filled, "friends", *friends) == (0, want)
    assert _read(reader, filled, "friends", "nobody") == (0, [])
