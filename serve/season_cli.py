"""`adr season close --season ID --next ID` and `adr season list`: archive the live board's final
standings under a season id and name the next season (serve/seasons.py); list the seasons.

Exit status: 0 done, 1 the season is archived already, 2 usage, 3 Redis unreachable or failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import redis

from runtime import RuntimeConfigError, connect, redact_text
from runtime.settings import add_settings_arguments, setting, settings_from_args, settings_repr
from serve.seasons import SeasonError, check_season_id, close_season, closed_seasons, current_season

EXIT_OK, EXIT_EXISTS, EXIT_USAGE, EXIT_REDIS = 0, 1, 2, 3


@dataclasses.dataclass(frozen=True, slots=True)
class _Pool:
    redis_url: str = setting(
        "redis://127.0.0.1:6379/0",
        env="REDIS_URL",
        help="Redis of the rating pool (a user that may write it)",
        secret=True,
    )
    namespace: str = setting("adr", env="ADR_NAMESPACE", help="the rating pool")

    def __repr__(self) -> str:
        return settings_repr(self)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "exit status: 0 done, 1 season archived already, 2 usage, 3 Redis failed"
    add_settings_arguments(parser, _Pool, config_file=False)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", help="what to do")
    actions.required = True
    close = actions.add_parser(
        "close", help="archive the final standings and start the next season"
    )
    close.add_argument("--season", required=True, help="the id of the season that ends")
    close.add_argument("--next", required=True, dest="next_id", help="the next season's id")
    actions.add_parser("list", help="the closed seasons and the current one, as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        pool = _Pool(**settings_from_args(_Pool, args))
        client = connect(pool.redis_url, pool.namespace)
        if args.action == "close":
            check_season_id(args.season)
            check_season_id(args.next_id)
    except (RuntimeConfigError, SeasonError) as exc:
        print(f"adr season: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.action == "close":
            players = close_season(client, pool.namespace, args.season, args.next_id)
            print(json.dumps({"closed": args.season, "players": players, "current": args.next_id}))
        else:
            current = current_season(client, pool.namespace)
            print(json.dumps({
                "current": None if current is None else dataclasses.asdict(current),
                "closed": [dataclasses.asdict(s) for s in closed_seasons(client, pool.namespace)],
            }))  # fmt: skip
    except SeasonError as exc:
        print(f"adr season: {exc}", file=sys.stderr)
        return EXIT_EXISTS
    except redis.RedisError as exc:
        print(f"adr season: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_REDIS
    finally:
        client.close()
    return EXIT_OK
