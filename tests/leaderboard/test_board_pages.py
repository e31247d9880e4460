"""The Board's pages (cursor after a position), its tie policies and the player profile, against a
model of the board on a real redis-server (hypothesis): walking the pages gives the board in order;
between two pages the board may change, and a row that did not move is neither repeated nor
skipped; shared ranks are one plus the players strictly above."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard import Board, PlayerNotFound
from redis_layout import Keys
from redis_layout.history_codec import HistoryPoint, encode_history_point

_IDS = st.text(alphabet="abcé\x00", min_size=1, max_size=3)  # é: multi-byte; \x00: lowest byte
_MU = st.sampled_from([850.0, 900.25, 1000.0, 1200.0, 1500.5])  # few values: many ties
_BOARD = st.dictionaries(_IDS, _MU, max_size=14)
_SLOW = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    try:
        yield c
    finally:
        c.close()


def _keys() -> Keys:
    return Keys(f"pages-{uuid.uuid4().hex[:10]}")


def _order(board: dict[str, float]) -> list[str]:
    return sorted(board, key=lambda p: (board[p], p.encode()), reverse=True)


def _put(client: redis.Redis, keys: Keys, board: dict[str, float]) -> None:
    if board:
        client.zadd(keys.lb, board)
    for pid, mu in board.items():
        client.hset(keys.player(pid), mapping={"mu": repr(mu), "tier": "3M"})


@_SLOW
@given(board=_BOARD, n=st.integers(1, 5), ties=st.sampled_from(["unique", "shared"]))
def test_walking_the_pages_gives_the_board_in_order_with_its_ranks(
    client: redis.Redis, board: dict[str, float], n: int, ties: str
) -> None:
    keys = _keys()
    _put(client, keys, board)
    try:
        reader = Board(client, keys.namespace, ties)  # type: ignore[arg-type]
        seen: list[tuple[int | None, str, float]] = []
        after = None
        for _ in range(len(board) + 2):
            page = reader.page(after, n)
            seen += [(e.rank, e.player, e.mu) for e in page.entries]
            assert len(page.entries) <= n
            if page.next_after is None:
                break
            after = page.next_after
        order = _order(board)
        if ties == "unique":
            expected = [(i + 1, p, board[p]) for i, p in enumerate(order)]
        else:
            expected = [
                (1 + sum(1 for q in board if board[q] > board[p]), p, board[p]) for p in order
            ]
        assert seen == expected
        assert [(e.rank, e.player) for e in reader.top(len(board) + 1)] == [
            (r, p) for r, p, _ in expected
        ]
    finally:
        client.delete(keys.lb, *(keys.player(p) for p in board))


@_SLOW
@given(
    board=_BOARD,
    n=st.integers(1, 4),
    moves=st.dictionaries(_IDS, st.one_of(st.none(), _MU), max_size=5),
)
def test_a_row_that_did_not_move_between_pages_is_neither_repeated_nor_skipped(
    client: redis.Redis, board: dict[str, float], n: int, moves: dict[str, float | None]
) -> None:
    """Between the first page and the second, `moves` change scores, add players (a None
    removes one: not something the consumer does, but a harder case for the cursor)."""
    keys = _keys()
    _put(client, keys, board)
    try:
        reader = Board(client, keys.namespace)
        first = reader.page(None, n)
        if first.next_after is None:
            return
        after_mu, after_id = first.next_after
        for pid, mu in moves.items():
            if mu is None:
                client.zrem(keys.lb, pid)
            else:
                client.zadd(keys.lb, {pid: mu})
        now = {p: mu for p, mu in board.items() if moves.get(p, mu) is not None}
        now.update({p: mu for p, mu in moves.items() if mu is not None})
        second = reader.page(first.next_after, len(now) + 1)
        cut = (after_mu, after_id.encode())
        # Exactly the rows strictly after the cursor's position in the new board, in order.
        expected = [p for p in _order(now) if (now[p], p.encode()) < cut]
        assert [e.player for e in second.entries] == expected
        unmoved = {p for p in board if p not in moves}
        shown = [e.player for e in first.entries] + [e.player for e in second.entries]
        for p in unmoved:
            assert shown.count(p) == 1
        for e in second.entries:  # ranks are positions in the new board
            assert e.rank == _order(now).index(e.player) + 1
    finally:
        client.delete(keys.lb, *(keys.player(p) for p in {*board, *moves}))


@_SLOW
@given(board=_BOARD.filter(bool), k=st.integers(0, 3), data=st.data())
def test_shared_ranks_of_rank_around_and_friends(
    client: redis.Redis, board: dict[str, float], k: int, data: st.DataObject
) -> None:
    keys = _keys()
    _put(client, keys, board)
    try:
        shared = Board(client, keys.namespace, "shared")
        who = data.draw(st.sampled_from(sorted(board)))
        above = {p: sum(1 for q in board if board[q] > board[p]) for p in board}
        assert shared.rank(who).rank == above[who] + 1
        order = _order(board)
        i = order.index(who)
        window = order[max(0, i - k) : i + k + 1]
        assert [(e.player, e.rank) for e in shared.around(who, k)] == [
            (p, above[p] + 1) for p in window
        ]
        friends = data.draw(st.lists(st.sampled_from(sorted(board)), max_size=5))
        fr = {p: board[p] for p in friends}
        assert [(e.player, e.rank) for e in shared.friends(friends)] == [
            (p, 1 + sum(1 for q in fr if fr[q] > fr[p])) for p in _order(fr)
        ]
    finally:
        client.delete(keys.lb, *(keys.player(p) for p in board))


def test_a_bad_tie_policy_is_refused(client: redis.Redis) -> None:
    with pytest.raises(ValueError, match="tie policy"):
        Board(client, "x", "dense")  # type: ignore[arg-type]


def test_profile_reads_the_hash_the_rank_and_the_newest_history(client: redis.Redis) -> None:
    keys = _keys()
    client.zadd(keys.lb, {"a": 1300.5, "b": 1200.0, "c": 1200.0, "d": 1200.0})
    client.hset(
        keys.player("c"),
        mapping={
            "mu": "1200.0",
            "sigma": "90.5",
            "tier": "2M",
            "n": "40",
            "last_ts": "1700",
            "ver": "41",
        },
    )
    client.hset(keys.player("u"), mapping={"mu": "1000.0", "sigma": "350.0", "tier": "", "n": "2"})
    points = [HistoryPoint(0, s, 100 * s, 1000.0 + s, 300.0 - s, None) for s in range(1, 6)]
    client.rpush(keys.history("c"), *(encode_history_point(p) for p in points))
    try:
        c = Board(client, keys.namespace).profile("c", 3)
        assert (c.rank, c.mu, c.sigma, c.tier, c.events, c.last_ts, c.version) == (
            3,
            1200.0,
            90.5,
            "2M",
            40,
            1700,
            41,
        )
        assert c.history == points[-3:]
        assert Board(client, keys.namespace, "shared").profile("c", 0).rank == 2
        u = Board(client, keys.namespace).profile("u", 10)
        assert (u.rank, u.tier, u.events, u.last_ts, u.version, u.history) == (
            None,
            None,
            2,
            None,
            0,
            [],
        )
        with pytest.raises(PlayerNotFound):
            Board(client, keys.namespace).profile("nobody", 10)
    finally:
        client.delete(keys.lb, keys.player("c"), keys.player("u"), keys.history("c"))
