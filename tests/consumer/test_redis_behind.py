"""Redis holding less than it acknowledged: a running consumer notices and goes back.

A redis-server restarted from an older RDB snapshot stands in for every way Redis loses
acknowledged writes (a failover to an asynchronous replica, AOF `everysec` after a crash): each
leaves an earlier, consistent prefix of the batch writes, offsets included.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import consumer_support as S
import redis
from consumer_servers import DurableRedis

from engine import Params

PARAMS = Params()


@dataclass
class SnapshotRedis(DurableRedis):
    """redis-server persisted by RDB only, saved when the test says so (SAVE)."""

    settings: tuple[str, ...] = ("--appendonly", "no", "--dbfilename", "dump.rdb")

    @property
    def dump(self) -> Path:
        return self.workdir / "dump.rdb"

    def stop(self, timeout: float = 30.0) -> None:
        """Stop without saving: what Redis had since the last SAVE is gone."""
        self.kill()


def test_redis_restarted_from_an_older_snapshot_is_noticed_and_the_lost_part_applied_again(
    kafka_bootstrap: str, kafka_admin, unique_name, tmp_path: Path, consumer_config
) -> None:
    server = SnapshotRedis(tmp_path / "redis")
    server.start()
    consumer = None
    try:
        topic, ns, keys, client = S.pool_on_topic(kafka_admin, server.url, unique_name)
        events = S.events(9_000, players=600, arenas=60, seed=77)
        parts = [events[:3000], events[3000:6000], events[6000:]]
        config = consumer_config(server.url, ns, topic, batch_size=200, backoff_max_s=0.5)
        consumer = S.start_threaded(config, PARAMS)
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

        book = S.replay(events, PARAMS, S.SNAPSHOT)
        S.assert_redis_equals_replay(client, keys, book, PARAMS, exact=True)
        client.close()
    finally:
        if consumer is not None:
            consumer.stop()
        server.stop()
