"""`adr leaderboard`: top, rank, around, tier, friends, tiers against a seeded Redis (real
server), tables and --json, exit codes (as the read-only ACL user: tests/examples/
test_readers_acl.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from adr_cli.main import main
from engine import TIER_LABELS
from redis_layout import Keys

# (player, μ, tier label or "" while unplaced); bob and carol tie on μ.
PLAYERS = [
    ("alice", 1500.5, "1H"),
    ("bob", 1200.0, "2M"),
    ("carol", 1200.0, "2M"),
    ("dave", 900.25, "5L"),
    ("erin", 850.0, "5L"),
    ("frank", 1000.0, ""),
]


@pytest.fixture
def board(redis_client: redis.Redis, unique_name) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    keys = Keys.of(unique_name("lb"))
    pipe = redis_client.pipeline()
    counts: dict[str, int] = {}
    for pid, mu, tier in PLAYERS:
        pipe.hset(keys.player(pid), mapping={"mu": repr(mu), "tier": tier})
        if tier:
            pipe.zadd(keys.lb, {pid: mu})
            counts[tier] = counts.get(tier, 0) + 1
    pipe.hset(keys.tier_counts, mapping=counts)
    pipe.hset(keys.pop, mapping={"count": len(PLAYERS)})
    pipe.execute()
    url = redis_client.connection_pool.connection_kwargs
    yield f"redis://{url['host']}:{url['port']}/{url.get('db', 0)}", keys.namespace
    written = [keys.player(pid) for pid, _, _ in PLAYERS]
    redis_client.delete(*written, keys.lb, keys.tier_counts, keys.pop)


def adr(capsys: pytest.CaptureFixture[str], board: tuple[str, str], *argv: str):  # type: ignore[no-untyped-def]
    url, ns = board
    code = main(["leaderboard", "--redis-url", url, "--namespace", ns, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_top_lists_the_best_placed_players_with_their_tiers(capsys, board) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = adr(capsys, board, "--json", "top", "3")
    assert code == 0
    assert json.loads(out) == [
        {"rank": 1, "player": "alice", "mu": 1500.5, "tier": "1H"},
        {"rank": 2, "player": "carol", "mu": 1200.0, "tier": "2M"},  # ties: Redis order
        {"rank": 3, "player": "bob", "mu": 1200.0, "tier": "2M"},
    ]
    code, out, _ = adr(capsys, board, "top", "100")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["RANK", "PLAYER", "MU", "TIER"]
    assert [line.split()[1] for line in lines[1:]] == ["alice", "carol", "bob", "dave", "erin"]
    assert lines[4].split() == ["4", "dave", "900.25", "5L"]


def test_rank_is_one_based_and_an_unplaced_player_has_none(capsys, board) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = adr(capsys, board, "rank", "dave", "--json")
    assert (code, json.loads(out)) == (0, {"rank": 4, "player": "dave", "mu": 900.25, "tier": "5L"})
    code, out, _ = adr(capsys, board, "rank", "frank", "--json")
    assert (code, json.loads(out)) == (
        0,
        {"rank": None, "player": "frank", "mu": 1000.0, "tier": None},
    )
    code, out, _ = adr(capsys, board, "rank", "frank")
    assert out.splitlines()[1].split() == ["-", "frank", "1000.00", "No", "Tier"]


def test_unknown_player_exits_1_with_the_reason_on_stderr(capsys, board) -> None:  # type: ignore[no-untyped-def]
    code, out, err = adr(capsys, board, "rank", "nobody")
    assert (code, out) == (1, "") and "nobody" in err
    code, out, err = adr(capsys, board, "around", "frank", "2")
    assert (code, out) == (1, "") and "not on the leaderboard" in err
    code, out, err = adr(capsys, board, "around", "nobody", "2")
    assert (code, out) == (1, "") and "not on the leaderboard" in err


def test_around_shows_k_ranks_each_side_clipped_at_the_top(capsys, board) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = adr(capsys, board, "--json", "around", "bob", "1")
    assert code == 0
    assert [(e["rank"], e["player"]) for e in json.loads(out)] == [
        (2, "carol"),
        (3, "bob"),
        (4, "dave"),
    ]
    code, out, _ = adr(capsys, board, "--json", "around", "alice", "2")
    assert [(e["rank"], e["player"]) for e in json.loads(out)] == [
        (1, "alice"),
        (2, "carol"),
        (3, "bob"),
    ]
    code, out, _ = adr(capsys, board, "--json", "around", "erin", "0")
    assert [(e["rank"], e["player"]) for e in json.loads(out)] == [(5, "erin")]


def test_tiers_counts_placed_players_per_label_against_target_shares(capsys, board) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = adr(capsys, board, "--json", "tiers")
    data = json.loads(out)
    assert code == 0 and (data["placed"], data["tracked"]) == (5, 6)
    rows = {r["tier"]: r for r in data["rows"]}
    assert list(rows) == list(TIER_LABELS)
    assert (rows["2M"]["players"], rows["2M"]["share"]) == (2, 0.4)
    assert rows["3M"]["players"] == 0
    assert all(r["target_share"] == 1 / 15 for r in data["rows"])
    code, out, _ = adr(capsys, board, "tiers")
    assert "2M" in out and "40.00%" in out and "placed 5 of 6 tracked players" in out


def test_target_shares_follow_the_tier_shares_parameter(capsys, board) -> None:  # type: ignore[no-untyped-def]
    shares = ",".join(["1/10"] * 5 + ["1/20"] * 10)
    code, out, _ = adr(capsys, board, "--param", f"tier_shares={shares}", "--json", "tiers")
    assert code == 0
    assert [r["target_share"] for r in json.loads(out)["rows"]] == [0.1] * 5 + [0.05] * 10


def test_usage_errors_exit_2(capsys, board) -> None:  # type: ignore[no-untyped-def]
    for argv in (["top", "0"], ["around", "bob", "-1"], ["frobnicate"], []):
        with pytest.raises(SystemExit) as exc:
            adr(capsys, board, *argv)
        assert exc.value.code == 2
    code, _, err = adr(capsys, board, "--param", "nonsense=1", "tiers")
    assert code == 2 and "nonsense" in err


def test_unreachable_redis_exits_3(capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(["leaderboard", "--redis-url", "redis://127.0.0.1:1/0", "top", "3"])
    _, err = capsys.readouterr()
    assert code == 3 and "adr leaderboard" in err


def test_tier_names_a_players_tier_and_none_while_unplaced(capsys, board) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = adr(capsys, board, "--json", "tier", "dave")
    assert (code, json.loads(out)) == (0, {"player": "dave", "tier": "5L"})
    code, out, _ = adr(capsys, board, "--json", "tier", "frank")
    assert (code, json.loads(out)) == (0, {"player": "frank", "tier": None})
    code, out, _ = adr(capsys, board, "tier", "frank")
    assert out.splitlines() == ["PLAYER  TIER", "frank   No Tier"]
    code, out, err = adr(capsys, board, "tier", "nobody")
    assert (code, out) == (1, "") and "nobody" in err


def test_friends_are_the_placed_ones_among_the_ids_best_first(capsys, board) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = adr(
        capsys, board, "--json", "friends", "erin", "frank", "bob", "x", "carol", "bob"
    )
    assert code == 0
    assert json.loads(out) == [  # bob and carol tie: by id descending, as ZREVRANGE orders them
        {"rank": 1, "player": "carol", "mu": 1200.0, "tier": "2M"},
        {"rank": 2, "player": "bob", "mu": 1200.0, "tier": "2M"},
        {"rank": 3, "player": "erin", "mu": 850.0, "tier": "5L"},
    ]
    code, out, _ = adr(capsys, board, "--json", "friends", "frank", "nobody")
    assert (code, json.loads(out)) == (0, [])
    with pytest.raises(SystemExit) as exc:
        adr(capsys, board, "friends")
    assert exc.value.code == 2


def test_a_layout_version_it_does_not_know_exits_5(capsys, board, redis_client) -> None:  # type: ignore[no-untyped-def]
    keys = Keys.of(board[1])
    for stored in ("3", "x"):
        redis_client.set(keys.layout, stored)
        try:
            code, out, err = adr(capsys, board, "top", "3")
        finally:
            redis_client.delete(keys.layout)
        assert (code, out) == (5, "") and keys.layout in err and "upgrade the reader" in err
    redis_client.set(keys.layout, "2")
    try:
        assert adr(capsys, board, "rank", "alice")[0] == 0
    finally:
        redis_client.delete(keys.layout)


def test_a_refused_command_exits_4(capsys, board, redis_client) -> None:  # type: ignore[no-untyped-def]
    url, ns = board
    user, password = f"ro-{ns}", "pw-1"
    redis_client.execute_command(
        "ACL", "SETUSER", user, "on", f">{password}", "resetkeys", "%R~{elsewhere}:*", "+@read"
    )
    try:
        host = url.removeprefix("redis://")
        code = main(["leaderboard", "--redis-url", f"redis://{user}:{password}@{host}",
                     "--namespace", ns, "top", "3"])  # fmt: skip
        _, err = capsys.readouterr()
        assert code == 4 and "permission denied" in err and "no permissions" in err
        code = main(["leaderboard", "--redis-url", f"redis://{user}:wrong@{host}",
                     "--namespace", ns, "top", "3"])  # fmt: skip
        _, err = capsys.readouterr()
        assert code == 4 and "permission denied" in err
    finally:
        redis_client.execute_command("ACL", "DELUSER", user)
