"""`adr meta set PLAYER JSON`, `adr meta get PLAYER`, `adr meta delete PLAYER`, `adr meta prune
[--dry-run]`: the studio's per-player metadata that `adr serve` returns with every row
(serve/meta.py; limits and layout in redis_layout/meta_codec.py and docs/api.md, "Per-player
metadata"). Run it as the ACL user `adr-meta`, which may write that metadata and nothing else
(and see whether a player hash exists, for prune).

`set` replaces the player's whole object (JSON from the argument, or stdin for `-`); `get` prints
it as JSON on stdout; `prune` removes the metadata of every id with no player hash and prints
each id removed (MetaStore.prune).

Exit status: 0 done (prune: also when nothing was removed), 1 the player has no metadata (get,
delete), 2 usage or metadata that breaks a limit (nothing written), 3 Redis unreachable or
failed, 4 refused by Redis (NOPERM, wrong password).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import redis

from redis_layout import CorruptValue
from redis_layout.meta_codec import BadMeta, UnknownMetaVersion, parse_meta_json
from runtime import RuntimeConfigError, connect, redact_text
from runtime.settings import add_settings_arguments, setting, settings_from_args, settings_repr
from serve.meta import PRUNE_PAGE, MetaStore, check_player_id

EXIT_OK, EXIT_NONE, EXIT_USAGE, EXIT_REDIS, EXIT_DENIED = 0, 1, 2, 3, 4


@dataclasses.dataclass(frozen=True, slots=True)
class _Pool:
    redis_url: str = setting(
        "redis://127.0.0.1:6379/0",
        env="REDIS_URL",
        help="Redis of the rating pool, as the ACL user adr-meta (deploy/redis/acl-users.acl)",
        secret=True,
    )
    namespace: str = setting("adr", env="ADR_NAMESPACE", help="the rating pool")

    def __repr__(self) -> str:
        return settings_repr(self)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "exit status: 0 done, 1 no metadata (get, delete), 2 usage or bad metadata, "
        "3 Redis failed, 4 refused by Redis"
    )
    add_settings_arguments(parser, _Pool, config_file=False)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", help="what to do")
    actions.required = True
    put = actions.add_parser("set", help="replace a player's metadata with a JSON object")
    put.add_argument("player", help="the player id")
    put.add_argument(
        "json", help="a JSON object of string, number, true/false/null values; - reads stdin"
    )
    get = actions.add_parser("get", help="print a player's metadata as JSON")
    get.add_argument("player", help="the player id")
    delete = actions.add_parser("delete", help="remove a player's metadata")
    delete.add_argument("player", help="the player id")
    prune = actions.add_parser(
        "prune",
        help="remove the metadata of every id with no player hash (players gone, ids that never "
        "played); prints each id removed",
        description="Removes the metadata of every id that has no player hash {ns}:player:<id> "
        "now: a player the pool no longer holds, and also an id whose metadata was set before "
        "its first counted kill (run --dry-run first where the studio sets metadata ahead). "
        "Paged (HSCAN), each page's removal atomic with its check; idempotent. stdout: one id "
        "per line; stderr: the counts.",
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="print the ids it would remove, remove nothing"
    )
    prune.add_argument(
        "--page",
        type=int,
        default=PRUNE_PAGE,
        metavar="N",
        help=f"entries per HSCAN page and per transaction (default {PRUNE_PAGE})",
    )


def run(args: argparse.Namespace) -> int:
    try:
        pool = _Pool(**settings_from_args(_Pool, args))
        if args.action == "prune" and args.page < 1:
            raise BadMeta("--page must be >= 1")
        player = check_player_id(args.player) if args.action != "prune" else ""
        meta = None
        if args.action == "set":
            meta = parse_meta_json(sys.stdin.buffer.read() if args.json == "-" else args.json)
        client = connect(pool.redis_url, pool.namespace)
    except (RuntimeConfigError, BadMeta) as exc:
        print(f"adr meta: {exc}", file=sys.stderr)
        return EXIT_USAGE
    store = MetaStore(client, pool.namespace)
    try:
        if args.action == "prune":
            _prune(store, args.page, args.dry_run)
        elif meta is not None:
            store.set(player, meta)
        elif args.action == "get":
            found = store.get(player)
            if found is None:
                print(f"adr meta: no metadata for {player!r}", file=sys.stderr)
                return EXIT_NONE
            print(json.dumps(found, ensure_ascii=False, sort_keys=True))
        elif not store.delete(player):
            print(f"adr meta: no metadata for {player!r}", file=sys.stderr)
            return EXIT_NONE
    except (CorruptValue, UnknownMetaVersion) as exc:
        print(f"adr meta: {exc}", file=sys.stderr)
        return EXIT_REDIS
    except (redis.exceptions.NoPermissionError, redis.exceptions.AuthenticationError) as exc:
        print(f"adr meta: refused: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_DENIED
    except redis.RedisError as exc:
        print(f"adr meta: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_REDIS
    finally:
        client.close()
    return EXIT_OK


def _prune(store: MetaStore, page: int, dry_run: bool) -> None:
    """Each id removed (or that would be) on stdout as it goes, the counts on stderr."""
    n = 0
    for player in store.prune(page, dry_run=dry_run):
        print(player.decode(errors="backslashreplace"), flush=True)
        n += 1
    what = "would be removed (dry run)" if dry_run else "removed"
    print(f"adr meta prune: {n} entries of ids with no player hash {what}", file=sys.stderr)
