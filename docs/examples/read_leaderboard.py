"""A service's side of adr-stream: read leaderboards from Redis (docs/leaderboards.md).

Plain redis-py, no adr-stream import. Every key of a namespace NS starts with "{NS}:" (the braces
are part of the key: a hash tag, so all keys of one namespace live in one Redis Cluster slot).
Run: python docs/examples/read_leaderboard.py redis://localhost:6379/0 adr alice
"""

from __future__ import annotations

import sys

import redis


def top(r: redis.Redis, ns: str, n: int) -> list[tuple[int, str, float]]:
    """(rank, player, mu) of the n best placed players; rank 1 is the best."""
    rows = r.zrevrange(f"{{{ns}}}:lb", 0, n - 1, withscores=True)
    return [(i + 1, p.decode(), mu) for i, (p, mu) in enumerate(rows)]


# Read-only scripts (EVAL_RO, Redis >= 7.0): the read-only ACL user of
# deploy/redis/acl-users.acl may run them, not EVAL or MULTI. Each reads from one state.
RANK = """
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
local fields = redis.call('HMGET', KEYS[2], 'mu', 'tier')
return {r, fields[1], fields[2]}
"""
AROUND = """
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
if not r then return false end
local lo = math.max(0, r - tonumber(ARGV[2]))
return {lo, redis.call('ZREVRANGE', KEYS[1], lo, r + tonumber(ARGV[2]), 'WITHSCORES')}
"""


def check_layout(r: redis.Redis, ns: str) -> None:
    """Refuse a layout version this code does not know (docs/leaderboards.md, Compatibility)."""
    version = r.get(f"{{{ns}}}:layout")
    if version not in (None, b"2"):
        raise SystemExit(f"{{{ns}}}:layout is layout {version!r}: upgrade this reader")


def rank(r: redis.Redis, ns: str, player: str) -> tuple[int | None, float, str | None] | None:
    """(rank or None if unplaced, mu, tier or None) of one player; None if never seen.

    One read-only script: rank and hash come from the same state (no batch lands in between)."""
    position, mu, tier = r.eval_ro(RANK, 2, f"{{{ns}}}:lb", f"{{{ns}}}:player:{player}", player)
    if mu is None:
        return None
    return (
        None if position is None else position + 1,
        float(mu),  # stored as Python's repr(float): parses back to the exact double
        tier.decode() or None,  # "" while unplaced
    )


def around(r: redis.Redis, ns: str, player: str, k: int) -> list[tuple[int, str, float]]:
    """The placed players within k ranks of `player` (empty if unplaced), atomically."""
    reply = r.eval_ro(AROUND, 1, f"{{{ns}}}:lb", player, k)
    if not reply:
        return []
    lo, flat = reply
    return [
        (lo + i + 1, flat[2 * i].decode(), float(flat[2 * i + 1])) for i in range(len(flat) // 2)
    ]


def tiers(r: redis.Redis, ns: str) -> dict[str, int]:
    """Placed players per tier label."""
    return {k.decode(): int(v) for k, v in r.hgetall(f"{{{ns}}}:tier_counts").items()}


if __name__ == "__main__":
    defaults = ["redis://localhost:6379/0", "adr", "alice"]
    url, ns, who = sys.argv[1:4] + defaults[len(sys.argv[1:4]) :]
    client = redis.Redis.from_url(url)
    check_layout(client, ns)
    print("top 10:", top(client, ns, 10))
    print(who, rank(client, ns, who), around(client, ns, who, 2))
    print("tiers:", tiers(client, ns))
