"""`adr leaderboard`: the live leaderboard from Redis, for people (tables) and scripts (--json).

stdout carries the data, stderr the errors. Exit status (docs/leaderboards.md, "Exit status",
the table the Go and TypeScript readers of examples/ follow too): 0 found, 1 player not found (or,
for `around`, not placed yet), 2 usage, 3 Redis unreachable or an unreadable answer, 4 permission
denied (NOPERM, a wrong user or password), 5 a layout version this release does not know.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence

import redis

from engine import ParamError
from leaderboard._board import Board, Entry, PlayerTier, TierTable
from leaderboard._errors import PlayerNotFound
from redis_layout import LayoutError, UnknownLayout
from runtime import RuntimeConfigError, connect, redact_text
from runtime.params import add_param_argument
from runtime.service import engine_params
from runtime.settings import add_settings_arguments, setting, settings_from_args, settings_repr

_DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_REDIS = 3
EXIT_DENIED = 4
EXIT_LAYOUT = 5

_EPILOG = (
    "exit status: 0 found, 1 player not found / not placed, 2 usage, 3 Redis unreachable or "
    "error, 4 permission denied, 5 unknown layout version (docs/leaderboards.md)"
)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class _Pool:
    """The rating pool the leaderboard reads."""

    redis_url: str = setting(
        _DEFAULT_REDIS_URL, env="REDIS_URL", help="Redis of the rating pool", secret=True
    )
    namespace: str = setting("adr", env="ADR_NAMESPACE", help="the rating pool")

    def __repr__(self) -> str:
        return settings_repr(self)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    add_settings_arguments(parser, _Pool, config_file=False)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_param_argument(parser)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", help="what to read")
    actions.required = True

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        sp = actions.add_parser(name, help=help_text, description=help_text, epilog=_EPILOG)
        sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
        return sp

    top = action("top", "the N best placed players")
    top.add_argument("n", type=_positive, metavar="N", help="how many players")
    rank = action("rank", "one player's rank, μ and tier")
    rank.add_argument("player", metavar="PLAYER", help="the player's id")
    around = action("around", "the placed players within K ranks of PLAYER")
    around.add_argument("player", metavar="PLAYER", help="the player's id")
    around.add_argument("k", type=_non_negative, metavar="K", help="ranks above and below")
    tier = action("tier", "one player's tier label (null while unplaced)")
    tier.add_argument("player", metavar="PLAYER", help="the player's id")
    friends = action("friends", "the placed players among the ids, best first")
    friends.add_argument("players", nargs="+", metavar="ID", help="player ids (a friends list)")
    action("tiers", "placed players per tier against the target shares")


def run(args: argparse.Namespace) -> int:
    try:
        pool = _Pool(**settings_from_args(_Pool, args))
        namespace = pool.namespace
        params = engine_params(args, os.environ)
        client = connect(pool.redis_url, namespace)
    except (ParamError, RuntimeConfigError) as exc:
        print(f"adr leaderboard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    board = Board(client, namespace)
    try:
        if args.action == "top":
            data: object = board.top(args.n)
        elif args.action == "rank":
            data = board.rank(args.player)
        elif args.action == "around":
            data = board.around(args.player, args.k)
        elif args.action == "tier":
            data = board.tier(args.player)
        elif args.action == "friends":
            data = board.friends(args.players)
        else:
            data = board.tiers(params.tier_shares)
    except PlayerNotFound as exc:
        print(f"adr leaderboard: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except UnknownLayout as exc:
        print(f"adr leaderboard: {exc}", file=sys.stderr)
        return EXIT_LAYOUT
    except (redis.exceptions.NoPermissionError, redis.exceptions.AuthenticationError) as exc:
        print(f"adr leaderboard: permission denied: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_DENIED
    except (redis.RedisError, LayoutError, ValueError) as exc:
        print(f"adr leaderboard: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_REDIS
    finally:
        client.close()
    if args.json:
        print(json.dumps(_jsonable(data)))
    else:
        print("\n".join(_table(data, "MU" if board.model == "adr" else "RATING")))
    return EXIT_OK


def _jsonable(data: object) -> object:
    if isinstance(data, list):
        return [dataclasses.asdict(e) for e in data]
    return dataclasses.asdict(data)  # type: ignore[call-overload]


def _table(data: object, rating: str = "MU") -> list[str]:
    if isinstance(data, TierTable):
        return _tier_table(data)
    if isinstance(data, PlayerTier):
        return _aligned([("PLAYER", "TIER"), (data.player, data.tier or "No Tier")], right=set())
    entries: list[Entry] = data if isinstance(data, list) else [data]  # type: ignore[list-item]
    return _entry_table(entries, rating)


def _entry_table(entries: Sequence[Entry], rating: str = "MU") -> list[str]:
    """RANK, PLAYER, the rating ranks use (`rating`: MU in an ADR pool, RATING, the model's
    display rating, in another), TIER."""
    rows = [("RANK", "PLAYER", rating, "TIER")]
    rows += [
        (
            "-" if e.rank is None else str(e.rank),
            e.player,
            f"{e.mu:.2f}",
            e.tier or "No Tier",
        )
        for e in entries
    ]
    return _aligned(rows, right={0, 2})


def _tier_table(table: TierTable) -> list[str]:
    rows = [("TIER", "PLAYERS", "SHARE", "TARGET")]
    rows += [
        (r.tier, str(r.players), f"{r.share:.2%}", f"{r.target_share:.2%}") for r in table.rows
    ]
    lines = _aligned(rows, right={1, 2, 3})
    lines.append(f"placed {table.placed} of {table.tracked} tracked players")
    return lines


def _aligned(rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]
