"""Redis holding less than it acknowledged: a running consumer notices and goes back.

A redis-server restarted from an older RDB snapshot stands in for every way Redis loses
acknowledged writes (a failover to an asynchronous replica, AOF `everysec` after a crash): each
leaves an earlier, consistent prefix of the batch writes, offsets included.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import consumer_support as S
import redis

from consumer._keys import Keys
from consumer.config import Config
from engine import Params
from stack import free_port, redis_server_bin


class SnapshotRedis:
    """redis-server persisted by RDB only, saved when the test says so (SAVE)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def dump(self) -> Path:
        return self.workdir / "dump.rdb"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = [
            redis_server_bin(), "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
            "--appendonly", "no", "--dir", str(self.workdir), "--dbfilename", "dump.rdb",
        ]  # fmt: skip
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115 - lives with the process
        self._proc = subprocess.Popen(argv, stdout=log, stderr=log)
        client = redis.Redis.from_url(self.url)
        S.wait_until(lambda: _answers(client), 20, "redis-server")
        client.close()

    def stop(self) -> None:
        """Stop without saving: what Redis had since the last SAVE is gone."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(30)
            self._proc = None


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def test_redis_restarted_from_an_older_snapshot_is_noticed_and_the_lost_part_applied_again(
    kafka_bootstrap: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    server = SnapshotRedis(tmp_path / "redis")
    server.start()
    consumer = None
    try:
        topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
        ns = unique_name("ns")
        client = redis.Redis.from_url(server.url)
        keys = Keys(ns)
        S.publish_snapshot(client, keys, S.SNAPSHOT)
        params = Params()
        events = S.events(9_000, players=600, arenas=60, seed=77)
        parts = [events[:3000], events[3000:6000], events[6000:]]
        config = Config(
            bootstrap_servers=kafka_bootstrap, redis_url=server.url, namespace=ns, topic=topic,
            group=unique_name("g"), rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
            batch_size=200, backoff_max_s=0.5,
        )  # fmt: skip
        consumer = S.start_threaded(config, params)
        alive = consumer.thread.is_alive

        S.produce(kafka_bootstrap, topic, S.encoded(parts[0]))
        S.wait_applied(client, keys, topic, {0: 3000}, 120, alive=alive)
        client.save()
        saved = tmp_path / "saved.rdb"
        shutil.copy(server.dump, saved)

        S.produce(kafka_bootstrap, topic, S.encoded(parts[1]))
        S.wait_applied(client, keys, topic, {0: 6000}, 120, alive=alive)
        client.close()
        server.stop()  # the writes since the SAVE are lost ...
        shutil.copy(saved, server.dump)
        time.sleep(0.5)
        server.start()  # ... and Redis comes back with the older state, offsets included
        client = redis.Redis.from_url(server.url)
        assert S.applied_offsets(client, keys, topic) == {0: 3000}

        rewinds = consumer.pipeline.metrics.redis_rewinds
        S.wait_until(lambda: rewinds._value.get() >= 1, 30, "the consumer to notice")
        S.produce(kafka_bootstrap, topic, S.encoded(parts[2]))
        S.wait_applied(client, keys, topic, {0: len(events)}, 120, alive=alive)
        consumer.stop()
        consumer = None

        book = S.replay(events, params, S.SNAPSHOT)
        S.assert_redis_equals_replay(client, keys, book, params, exact=True)
        client.close()
    finally:
        if consumer is not None:
            consumer.stop()
        server.stop()
