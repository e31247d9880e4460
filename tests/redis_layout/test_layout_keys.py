"""Key names (redis_layout.Keys): one hash tag per pool, and SCAN patterns that match exactly the
pool's keys on a real Redis."""

from __future__ import annotations

from collections.abc import Callable

import redis

from redis_layout import Keys


def test_keys_share_the_namespace_hash_tag() -> None:
    keys = Keys("pool1")
    assert keys.player("p") == "{pool1}:player:p"
    assert keys.lb == "{pool1}:lb" and keys.pop == "{pool1}:pop"
    assert keys.offsets("kill-events") == "{pool1}:offsets:kill-events"
    # the attacker's length keeps ("ab", "c") and ("a", "bc") apart
    assert keys.cooldown("ab", "c") != keys.cooldown("a", "bc")
    assert keys.tag == "{pool1}" and keys.outbox_quarantine == "{pool1}:outbox:quarantine"


def test_scan_patterns_match_the_pools_keys_only(
    redis_client: redis.Redis, unique_name: Callable[..., str]
) -> None:
    base = unique_name("ns")
    pool, odd = Keys(base), Keys(base + "*[x]?")  # glob characters are matched literally
    other = Keys(base + "x")
    for keys in (pool, odd, other):
        redis_client.set(keys.player("a"), 1)
        redis_client.set(keys.cooldown("a", "b"), 1)
        redis_client.set(keys.lb, 1)
    try:
        for keys in (pool, odd):
            found = {k.decode() for k in redis_client.scan_iter(match=keys.match_all)}
            assert found == {keys.player("a"), keys.cooldown("a", "b"), keys.lb}
            players = {k.decode() for k in redis_client.scan_iter(match=keys.match_players)}
            assert players == {keys.player("a")}
            cooldowns = {k.decode() for k in redis_client.scan_iter(match=keys.match_cooldowns)}
            assert cooldowns == {keys.cooldown("a", "b")}
    finally:
        for keys in (pool, odd, other):
            redis_client.delete(keys.player("a"), keys.cooldown("a", "b"), keys.lb)
