"""deploy/redis/acl-users.acl: the consumer, the tier job and the leaderboard reader each work
with exactly their ACL rules on a real redis-server, and the reader cannot write."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import consumer_support as S
import msgspec
import pytest
import redis

from consumer.config import Config
from engine import Params
from redis_layout import LAYOUT_VERSION, Keys
from stack.secured import acl_setuser_commands, plain_redis

SECRET = {
    "consumer": "c-9d2f",
    "tierjob": "t-41aa",
    "reader": "r-77e0",
    "history": "h-05c3",
    "meta": "m-e19b",
}
EVENTS = 3_000


def _url(port: int, role: str) -> str:
    return f"redis://adr-{role}:{SECRET[role]}@127.0.0.1:{port}/0"


def test_each_process_works_with_exactly_its_rules(
    kafka_bootstrap: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    server = plain_redis(tmp_path / "redis")
    server.start()
    admin = redis.Redis(port=server.port)
    try:
        ns = unique_name("ns")
        commands = acl_setuser_commands(ns, SECRET)
        assert [c[2] for c in commands] == [
            "adr-consumer", "adr-tierjob", "adr-reader", "adr-history", "adr-meta"
        ]  # fmt: skip
        for command in commands:
            admin.execute_command(*command)
        admin.execute_command("ACL", "SETUSER", "admin", "on", ">adm", "~*", "&*", "+@all")
        admin.execute_command("ACL", "SETUSER", "default", "off")  # nobody else gets in
        admin = redis.Redis(port=server.port, username="admin", password="adm")
        keys = Keys(ns)
        snapshot = msgspec.structs.replace(S.SNAPSHOT, taken_at=time.time_ns() // 1_000_000)
        S.publish_snapshot(admin, keys, snapshot)  # boundaries, so that players get placed
        calibrate = [
            sys.executable, "-m", "adr_cli.main", "calibrate", "--redis-url",
            _url(server.port, "tierjob"), "--bootstrap-servers", kafka_bootstrap,
            "--namespace", ns, "--topic", unique_name("tiers"),
        ]  # fmt: skip
        topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
        events = S.events(EVENTS, players=300, arenas=10, seed=5)
        S.produce(kafka_bootstrap, topic, S.encoded(events))
        config = Config(
            bootstrap_servers=kafka_bootstrap,
            redis_url=_url(server.port, "consumer"),
            namespace=ns,
            topic=topic,
            group=unique_name("g"),
            rating_topic=f"{topic}-ratings",
            dlq_topic=f"{topic}-dlq",
        )
        consumer = S.start_threaded(config, Params())
        watcher = redis.Redis(port=server.port, username="adr-reader", password=SECRET["reader"])
        try:
            S.wait_applied(watcher, keys, topic, {0: EVENTS}, 120, alive=consumer.thread.is_alive)
        finally:
            consumer.stop()
        done = subprocess.run(calibrate, capture_output=True, text=True, timeout=120)  # one run
        assert done.returncode == 0, done.stderr[-3000:]
        assert int(admin.hget(keys.snapshot, "version")) > 1  # the tier job published anew

        assert admin.get(keys.layout) == str(LAYOUT_VERSION).encode()  # stamped by adr-consumer

        def board(*query: str) -> object:
            done = subprocess.run(
                [sys.executable, "-m", "adr_cli.main", "leaderboard", "--redis-url",
                 _url(server.port, "reader"), "--namespace", ns, "--json", *query],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert done.returncode == 0, (query, done.stderr)
            return json.loads(done.stdout)

        # every query of `adr leaderboard`, on the state the consumer wrote (all readers, all
        # queries and exit codes: tests/examples/test_readers_acl.py)
        top = board("top", "5")
        assert isinstance(top, list) and len(top) == 5
        first, second = top[0]["player"], top[1]["player"]
        assert board("rank", second) == top[1]
        assert board("around", second, "1") == top[:3]
        assert board("tier", first) == {"player": first, "tier": top[0]["tier"]}
        assert board("friends", second, "nobody", first) == [
            {**top[0], "rank": 1},
            {**top[1], "rank": 2},
        ]
        tiers = board("tiers")
        assert isinstance(tiers, dict) and tiers["placed"] >= 5

        assert admin.acl_log() == []  # no process was refused anything

        with pytest.raises(redis.exceptions.NoPermissionError):
            watcher.hset(keys.snapshot, "version", "999")
        for command in (("EVAL", "return 1", 0), ("MULTI",), ("SCRIPT", "LOAD", "return 1")):
            with pytest.raises(redis.exceptions.NoPermissionError):
                watcher.execute_command(*command)
        outsider = redis.Redis(
            port=server.port, username="adr-consumer", password=SECRET["consumer"]
        )
        with pytest.raises(redis.exceptions.NoPermissionError):
            outsider.set("other-pool:x", "1")
        with pytest.raises(redis.exceptions.NoPermissionError):
            outsider.flushall()
    finally:
        server.stop()
