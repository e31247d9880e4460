"""The consumer, the tier job and the leaderboard on managed Redis deployments, through the URL
forms of runtime.connect: two rating pools in a three-primary Redis Cluster, and a
Sentinel-monitored primary failing over in the middle of a run. The final state equals the
engine's replay in both."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import consumer_support as S
import msgspec

from consumer._keys import Keys
from consumer.config import Config
from engine import Params
from runtime import connect, pool_slot
from stack.secured import RedisCluster, SentinelSet

EVENTS = 4_000


def _snapshot():  # a published snapshot the tier job also accepts (it needs a taken_at)
    return msgspec.structs.replace(S.SNAPSHOT, taken_at=time.time_ns() // 1_000_000)


def _run_pool(kafka_bootstrap: str, kafka_admin, unique_name, url: str, ns: str, seed: int):
    """Publish a snapshot, rate EVENTS events of one topic into pool `ns`; return the replay."""
    client = connect(url, ns)
    keys = Keys(ns)
    snapshot = _snapshot()
    S.publish_snapshot(client, keys, snapshot)
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    events = S.events(EVENTS, players=400, arenas=10, seed=seed)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    config = Config(bootstrap_servers=kafka_bootstrap, redis_url=url, namespace=ns, topic=topic,
                    group=unique_name("g"), rating_topic=f"{topic}-ratings",
                    dlq_topic=f"{topic}-dlq")  # fmt: skip
    consumer = S.start_threaded(config, Params())
    try:
        S.wait_applied(client, keys, topic, {0: EVENTS}, 120, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()
    return client, keys, S.replay(events, Params(), snapshot)


def _adr(*argv: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "adr_cli.main", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_two_pools_on_a_three_primary_cluster(
    kafka_bootstrap: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    cluster = RedisCluster(tmp_path / "cluster")
    cluster.start()
    try:
        owners: dict[int, str] = {}
        probe = connect(cluster.url, "probe")
        del probe
        while len(owners) < 2:  # two pools whose slots live on different primaries
            ns = unique_name("pool")
            port = connect(cluster.url, ns).connection_pool.connection_kwargs["port"]
            owners.setdefault(port, ns)
        for seed, ns in enumerate(owners.values(), start=1):
            client, keys, book = _run_pool(
                kafka_bootstrap, kafka_admin, unique_name, cluster.url, ns, seed
            )
            S.assert_redis_equals_replay(client, keys, book, Params(), exact=True)
            calibrated = _adr("calibrate", "--redis-url", cluster.url, "--namespace", ns,
                              "--bootstrap-servers", kafka_bootstrap,
                              "--topic", unique_name("tiers"))  # fmt: skip
            assert calibrated.returncode == 0, calibrated.stderr[-2000:]
            board = _adr("leaderboard", "--redis-url", cluster.url, "--namespace", ns,
                         "--json", "top", "3")  # fmt: skip
            assert board.returncode == 0, board.stderr
            assert len(json.loads(board.stdout)) == 3
            assert pool_slot(ns) == client.execute_command("CLUSTER", "KEYSLOT", keys.snapshot)
    finally:
        cluster.stop()


def test_sentinel_failover_in_the_middle_of_a_run_equals_the_replay(
    kafka_bootstrap: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    pair = SentinelSet(tmp_path / "sentinel")
    pair.start()
    try:
        ns = unique_name("pool")
        client = connect(pair.url, ns)
        keys = Keys(ns)
        snapshot = _snapshot()
        S.publish_snapshot(client, keys, snapshot)
        topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
        events = S.events(2 * EVENTS, players=400, arenas=10, seed=7)
        config = Config(bootstrap_servers=kafka_bootstrap, redis_url=pair.url, namespace=ns,
                        topic=topic, group=unique_name("g"), rating_topic=f"{topic}-ratings",
                        dlq_topic=f"{topic}-dlq")  # fmt: skip
        consumer = S.start_threaded(config, Params())
        try:
            S.produce(kafka_bootstrap, topic, S.encoded(events[:EVENTS]))
            S.wait_applied(client, keys, topic, {0: EVENTS}, 120, alive=consumer.thread.is_alive)
            pair.failover()  # the consumer keeps writing while the replica is promoted
            S.produce(kafka_bootstrap, topic, S.encoded(events[EVENTS:]))
            S.wait_until(
                lambda: client.connection_pool.get_master_address()[1] == pair.replica.port,
                60,
                "the replica promoted",
            )
            S.wait_applied(
                client, keys, topic, {0: 2 * EVENTS}, 120, alive=consumer.thread.is_alive
            )
        finally:
            consumer.stop()
        book = S.replay(events, Params(), snapshot)
        S.assert_redis_equals_replay(client, keys, book, Params(), exact=True)
    finally:
        pair.stop()
