"""`adr history` as the shipped least-privilege user `adr-history` (deploy/redis/acl-users.acl
rendered as deploy/redis/README.md says, loaded by a real redis-server with `--aclfile`): the
process keeps its lists with exactly those rules (nothing refused in the ACL log), each list gets
its time to live, and the user can neither read nor write any other key of the pool, not even
from a script, nor another pool's history."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from redis_layout import Keys
from schemas import decode_rating_change
from serve.history import HistoryStore
from stack import RedisServer, TopicAdmin
from tests.examples.test_readers_acl import PASSWORDS
from tests.http_api.conftest import NAMESPACE
from tests.http_api.test_history import _change, _produce

pytestmark = pytest.mark.integration

PLAYER = "hist-acl"
"""A player of the seeded pool's namespace that no other test of the package reads."""


def history_url(port: int) -> str:
    return f"redis://adr-history:{PASSWORDS['HISTORY_PW']}@127.0.0.1:{port}/0"


@pytest.fixture
def history_user(acl_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(history_url(acl_server.port))
    try:
        yield client
    finally:
        client.close()


def _pool_state(admin: redis.Redis, keys: Keys) -> dict[bytes, bytes | None]:
    """Every key of the pool but the history lists, as DUMP bytes (type and value)."""
    names = [k for k in admin.scan_iter(match=keys.match_all) if b":history:" not in k]
    assert names
    return {k: admin.dump(k) for k in sorted(names)}


def test_adr_history_works_as_adr_history_and_sets_the_time_to_live(
    acl_server: RedisServer,
    admin: redis.Redis,
    kafka_bootstrap: str,
    kafka_admin: TopicAdmin,
    unique_name: Callable[[str], str],
) -> None:
    keys = Keys(NAMESPACE)
    admin.acl_log_reset()
    topic = kafka_admin.create(unique_name("rating-changes"), partitions=2)
    _produce(kafka_bootstrap, topic, [(PLAYER, _change(PLAYER, s)) for s in (1, 2, 3, 4)])
    env = {**os.environ, "REDIS_URL": history_url(acl_server.port),
           "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "ADR_NAMESPACE": NAMESPACE,
           "ADR_RATING_TOPIC": topic, "ADR_HISTORY_GROUP": unique_name("g"),
           "ADR_METRICS_PORT": "0", "ADR_HISTORY_POINTS": "3",
           "ADR_HISTORY_TTL": "3600"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "adr_cli.main", "history"], env=env, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while admin.llen(keys.history(PLAYER)) < 3:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "adr history wrote nothing in 90 s"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    try:
        assert proc.returncode == 0, err[-3000:]
        kept = [decode_rating_change(_change(PLAYER, s)).seq for s in (2, 3, 4)]
        got = admin.lrange(keys.history(PLAYER), 0, -1)
        assert [int(p.split(b",")[1]) for p in got] == kept  # the newest 3, in order
        assert 3_500_000 < admin.pttl(keys.history(PLAYER)) <= 3_600_000
        assert admin.acl_log() == []  # nothing it did was refused
    finally:
        admin.delete(keys.history(PLAYER))


def test_the_history_store_keeps_its_lists_and_no_ttl_means_none(
    history_user: redis.Redis, admin: redis.Redis
) -> None:
    keys = Keys(NAMESPACE)
    changes = [decode_rating_change(_change(PLAYER, s)) for s in (1, 2)]
    try:
        assert HistoryStore(history_user, NAMESPACE, 5).append(changes) == 2
        assert admin.pttl(keys.history(PLAYER)) == -1  # ttl 0: for ever
        assert HistoryStore(history_user, NAMESPACE, 5, ttl_s=60).append(changes) == 0
        assert 0 < admin.pttl(keys.history(PLAYER)) <= 60_000  # a write renews it
        with pytest.raises(ValueError):
            HistoryStore(history_user, NAMESPACE, 5, ttl_s=-1)
    finally:
        admin.delete(keys.history(PLAYER))


def test_adr_history_cannot_touch_the_pool_state(
    history_user: redis.Redis, admin: redis.Redis
) -> None:
    keys = Keys(NAMESPACE)
    before = _pool_state(admin, keys)
    writes: list[tuple[str, tuple[object, ...]]] = [
        ("HSET", (keys.player("alice"), "mu", "9999")),
        ("HDEL", (keys.player("alice"), "tier")),
        ("ZADD", (keys.lb, "9999", "mallory")),
        ("ZREM", (keys.lb, "alice")),
        ("DEL", (keys.lb,)),
        ("UNLINK", (keys.player("bob"),)),
        ("SET", (keys.layout, "999")),
        ("HSET", (keys.snapshot, "boundaries", "[]")),
        ("RPUSH", (keys.player("alice"), "x")),  # a list command on another key
        ("PEXPIRE", (keys.lb, "1")),
        ("RENAME", (keys.history("alice"), keys.lb)),
        ("RPUSH", (Keys("other").history("alice"), "x")),  # another pool's history
        ("HGET", (keys.player("alice"), "mu")),  # not even reads
        ("ZRANGE", (keys.lb, "0", "-1")),
        ("LRANGE", (keys.history("alice"), "0", "-1")),  # its keys, but not this command
        ("KEYS", ("*",)),
        ("SCAN", ("0",)),
        ("FLUSHALL", ()),
        ("FLUSHDB", ()),
        ("CONFIG", ("SET", "maxmemory", "1")),
        ("SCRIPT", ("FLUSH",)),
        ("MULTI", ()),
        ("EVAL_RO", ("return 1", "0")),
    ]
    for command, args in writes:
        with pytest.raises(redis.exceptions.NoPermissionError):
            history_user.execute_command(command, *args)
    # A script it may run, calling a command it may run, still cannot reach another key, named
    # in KEYS or not; nor call a command it may not.
    refused = "(?i)no permissions|can't run this command|can't access"
    for key in (keys.player("alice"), keys.lb, keys.snapshot):
        with pytest.raises(redis.exceptions.ResponseError, match=refused):
            history_user.eval("return redis.call('RPUSH', KEYS[2], 'x')", 2,
                              keys.history(PLAYER), key)  # fmt: skip
        with pytest.raises(redis.exceptions.ResponseError, match=refused):
            history_user.eval(f"return redis.call('PEXPIRE', '{key}', 1)", 0)
    with pytest.raises(redis.exceptions.ResponseError, match=refused):
        history_user.eval("return redis.call('HSET', KEYS[1], 'mu', '1')", 1, keys.player("alice"))
    assert _pool_state(admin, keys) == before
    assert admin.exists(keys.history(PLAYER), Keys("other").history("alice")) == 0
    admin.acl_log_reset()  # the refusals above were on purpose
