"""`adr season close --season ID --next ID [--next-start-ms T | --next-start-in S]`, `adr season
list` and `adr season schedule`: archive the live board's final standings under a season id, name
the next season and schedule its start (serve/seasons.py); list the seasons; print the season
schedule (the file `adr replay --seasons` reads).

Exit status: 0 done, 1 refused (the season is archived already, the start is not after the
accepted events, the last scheduled season has not started, a --sigma-raise for an Elo pool), 2
usage, 3 Redis unreachable or failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time

import redis

from engine import EngineError, SeasonReset
from redis_layout.season_schedule import encode_schedule
from runtime import RuntimeConfigError, connect, redact_text
from runtime.settings import add_settings_arguments, setting, settings_from_args, settings_repr
from serve.seasons import (
    SeasonError,
    check_season_id,
    close_season,
    closed_seasons,
    current_season,
    season_schedule,
)

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
    topic: str = setting(
        "kill-events",
        env="ADR_TOPIC",
        help="the kill-events topic the pool's consumers read (its watermarks bound the start)",
    )

    def __repr__(self) -> str:
        return settings_repr(self)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "exit status: 0 done, 1 refused (archived already, start not after the accepted "
        "events, last season not started, --sigma-raise for an elo pool), 2 usage, 3 Redis "
        "failed"
    )
    add_settings_arguments(parser, _Pool, config_file=False)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", help="what to do")
    actions.required = True
    close = actions.add_parser(
        "close", help="archive the final standings and start the next season"
    )
    close.add_argument("--season", required=True, help="the id of the season that ends")
    close.add_argument("--next", required=True, dest="next_id", help="the next season's id")
    start = close.add_mutually_exclusive_group()
    start.add_argument(
        "--next-start-ms",
        type=int,
        metavar="T",
        help="the event time (ms since the Unix epoch) the next season starts at; it must be "
        "after every event time the pool has accepted (default: just after them)",
    )
    start.add_argument(
        "--next-start-in",
        type=float,
        metavar="SECONDS",
        help="the next season starts this long after now (event time = wall clock)",
    )
    defaults = SeasonReset()
    close.add_argument(
        "--keep",
        type=float,
        default=defaults.keep,
        help="share of the distance from the pool mean a player keeps, in [0, 1] "
        f"(default {defaults.keep})",
    )
    close.add_argument(
        "--sigma-raise",
        type=float,
        default=None,
        metavar="C",
        help="uncertainty added in quadrature, sigma' = sqrt(sigma^2 + C^2), in the model's own "
        f"scale, up to its initial uncertainty for a model other than adr (default: 2/7 of the "
        f"initial uncertainty: {defaults.sigma_raise} for adr and glicko2, 2.38 for trueskill "
        "and weng-lin; elo has none: 0, the only value it takes)",
    )
    close.add_argument(
        "--pool-mean",
        type=float,
        metavar="MU",
        help="the mean the reset pulls toward, in the model's scale (default, adr: the tier "
        "job's published mean of the active players, else mu0; another model: the mean "
        "rating (the mu field) of the players on the live board, else its initial rating)",
    )
    actions.add_parser("list", help="the closed seasons and the current one, as JSON")
    actions.add_parser(
        "schedule", help="the season schedule as JSON (the file adr replay --seasons reads)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        pool = _Pool(**settings_from_args(_Pool, args))
        client = connect(pool.redis_url, pool.namespace)
        if args.action == "close":
            check_season_id(args.season)
            check_season_id(args.next_id)
            SeasonReset(args.keep, args.sigma_raise or 0.0)  # checked before Redis is read
            if args.pool_mean is not None and not math.isfinite(args.pool_mean):
                raise SeasonError("--pool-mean must be a finite number")
            start_ms = args.next_start_ms
            if args.next_start_in is not None:
                if not 0 <= args.next_start_in < 10**9:
                    raise SeasonError("--next-start-in must be a number of seconds >= 0")
                start_ms = time.time_ns() // 1_000_000 + round(args.next_start_in * 1000)
    except (RuntimeConfigError, SeasonError, EngineError) as exc:
        print(f"adr season: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.action == "close":
            players = close_season(
                client, pool.namespace, args.season, args.next_id, start_ms=start_ms,
                keep=args.keep, sigma_raise=args.sigma_raise, pool_mean=args.pool_mean,
                topics=(pool.topic,),
            )  # fmt: skip
            start = season_schedule(client, pool.namespace).starts[-1]
            print(json.dumps({
                "closed": args.season, "players": players, "current": args.next_id,
                "starts_at_ms": start.start_ms, "pool_mean": start.pool_mean,
                "keep": start.reset.keep, "sigma_raise": start.reset.sigma_raise,
            }))  # fmt: skip
        elif args.action == "schedule":
            print(encode_schedule(season_schedule(client, pool.namespace)))
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
