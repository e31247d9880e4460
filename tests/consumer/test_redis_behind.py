"""Redis holding less than it acknowledged: a running consumer notices and goes back.

A redis-server restarted from an older RDB snapshot stands in for every way Redis loses
acknowledged writes (a failover to an asynchronous replica, AOF `everysec` after a crash): each
leaves an earlier, consistent prefix of the batch writes, offsets included.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import consumer_support as S
import msgspec
import pytest
import redis
from consumer_servers import DurableRedis

from consumer.config import Config
from engine import Params, Snapshot, tier_label
from redis_layout import Keys
from schemas import RatingChange, change_order, decode_rating_change

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


NEWER = Snapshot(
    taken_at=None,
    mean_mu_active=990.0,
    boundaries=tuple(1360.0 - 25.0 * k for k in range(14)),
    active_count=520,
)
"""A tier snapshot published after the lost writes: the events applied again are rated on it, so
the changes they make differ from the lost ones in body, not in (player, seq)."""


def _restored_with_newer_snapshot(saved: Path, dump: Path, workdir: Path, keys: Keys) -> None:
    """Write to `dump` the state of `saved` plus a newer tier snapshot (the tier job published
    while Redis was behind), prepared on a server of its own that no consumer reaches."""
    side = SnapshotRedis(workdir)
    side.workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(saved, side.dump)
    side.start()
    try:
        client = redis.Redis.from_url(side.url)
        S.publish_snapshot(client, keys, NEWER, version=2)
        client.save()
        client.close()
        shutil.copy(side.dump, dump)
    finally:
        side.stop()


def _read_latest(
    changes: list[RatingChange], rule: Callable[[RatingChange], Any]
) -> dict[str, RatingChange]:
    """What a reader holds per player: each change above the one held (by `rule`) replaces it."""
    held: dict[str, RatingChange] = {}
    for c in changes:
        if c.player not in held or rule(c) > rule(held[c.player]):
            held[c.player] = c
    return held


def _assert_lost_changes_outranked(
    run: LosingRun, lost: list[Any], before: int, lost_epoch: int = 0
) -> None:
    """Every change of the `lost` events emitted again carries the raised epoch (the wall clock
    at least, as of `before`, and above `lost_epoch`, the one the lost changes carried), their
    bodies differ; a reader by (epoch, seq) ends at exactly Redis's players, one by seq alone
    does not."""
    client, keys = run.client, run.keys
    epoch = int(client.get(keys.epoch))
    assert epoch >= before and epoch > lost_epoch  # raised above both
    changes = [
        decode_rating_change(m.value()) for m in S.read_topic(run.bootstrap, f"{run.topic}-ratings")
    ]
    lost_ids = {e.id for e in lost}
    first = [c for c in changes if c.source_id in lost_ids and c.epoch == lost_epoch]
    again = [c for c in changes if c.source_id in lost_ids and c.epoch != lost_epoch]
    assert first and {c.id for c in again} == {c.id for c in first}
    assert {c.epoch for c in again} == {epoch}  # every re-emitted change ranks above
    assert all(c.epoch == 0 for c in changes if c.source_id not in lost_ids)
    bodies = {(c.player, c.seq): c for c in first}
    assert any(
        bodies[c.player, c.seq] != msgspec.structs.replace(c, epoch=lost_epoch) for c in again
    )

    stored = S.redis_players(client, keys)
    held = _read_latest(changes, change_order)
    assert set(held) == set(stored)
    for player, (state, ver) in stored.items():
        c = held[player]
        assert (c.seq, c.mu_after, c.sigma_after) == (ver, state.mu, state.sigma), player
        assert c.tier_after == (tier_label(state.tier) or None), player
    by_seq = _read_latest(changes, lambda c: c.seq)  # seq alone keeps lost bodies
    assert any(by_seq[p].mu_after != s.mu for p, (s, _v) in stored.items())


@dataclass
class LosingRun:
    """A consumer on its own RDB-only Redis that is made to lose acknowledged writes."""

    server: SnapshotRedis
    bootstrap: str
    topic: str
    keys: Keys
    config: Config
    client: redis.Redis
    consumer: S.ThreadedConsumer | None = None

    def start(self) -> None:
        self.consumer = S.start_threaded(self.config, PARAMS)

    def stop(self) -> None:
        """Stop the consumer (it commits its positions on the way out)."""
        consumer, self.consumer = self.consumer, None
        if consumer is not None:
            consumer.stop()

    def applied(self, events: list[Any], upto: int) -> None:
        """Produce `events` (none: just wait) and wait until Redis holds every offset below
        `upto` and every rating change was sent: they reached readers."""
        if events:
            S.produce(self.bootstrap, self.topic, S.encoded(events))
        assert self.consumer is not None
        alive = self.consumer.thread.is_alive
        S.wait_applied(self.client, self.keys, self.topic, {0: upto}, 120, alive=alive)
        S.wait_outbox_empty(self.client, self.keys, 60)

    def save(self, to: Path) -> None:
        self.client.save()
        shutil.copy(self.server.dump, to)

    def lose_all_since(self, saved: Path, workdir: Path) -> None:
        """Redis stops without saving and comes back with `saved` and a newer tier snapshot."""
        self.client.close()
        self.server.stop()
        _restored_with_newer_snapshot(saved, self.server.dump, workdir, self.keys)
        self.server.start()
        self.client = redis.Redis.from_url(self.server.url)


@pytest.fixture
def losing(kafka_bootstrap: str, kafka_admin, unique_name, tmp_path: Path, consumer_config):
    server = SnapshotRedis(tmp_path / "redis")
    server.start()
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, server.url, unique_name)
    config = consumer_config(server.url, ns, topic, batch_size=200, backoff_max_s=0.5)
    run = LosingRun(server, kafka_bootstrap, topic, keys, config, client)
    try:
        yield run
    finally:
        run.stop()
        run.client.close()
        server.stop()


def test_changes_applied_again_after_a_rewind_rank_above_the_lost_ones_and_readers_end_at_redis(
    losing: LosingRun, tmp_path: Path
) -> None:
    events = S.events(6_000, players=400, arenas=40, seed=78)
    kept, lost = events[:3000], events[3000:]
    losing.start()
    losing.applied(kept, 3000)
    losing.save(tmp_path / "saved.rdb")
    losing.applied(lost, 6000)  # the lost changes reached readers
    before = time.time_ns() // 1_000_000
    losing.lose_all_since(tmp_path / "saved.rdb", tmp_path / "side")
    assert losing.consumer is not None
    rewinds = losing.consumer.pipeline.metrics.redis_rewinds
    S.wait_until(lambda: rewinds._value.get() >= 1, 30, "the consumer to notice")
    losing.applied([], 6000)
    losing.stop()
    _assert_lost_changes_outranked(losing, lost, before)


def test_redis_restored_while_no_consumer_ran_is_noticed_at_assignment_and_the_epoch_raised(
    losing: LosingRun, tmp_path: Path
) -> None:
    """Commits follow Redis: a consumer starting on a Redis behind the group's committed offsets
    raises the epoch before it applies anything again, above the one the commits recorded even
    where that one is ahead of the wall clock (raised by an instance whose clock ran ahead, then
    lost with the rest: the restore holds no epoch)."""
    events = S.events(4_000, players=300, arenas=30, seed=79)
    kept, lost = events[:2000], events[2000:]
    losing.start()
    losing.applied(kept, 2000)
    losing.save(tmp_path / "saved.rdb")
    ahead = time.time_ns() // 1_000_000 + 10**9  # about 12 days ahead
    losing.client.set(losing.keys.epoch, ahead)
    losing.applied(lost, 4000)
    losing.stop()  # commits its positions on the way out
    before = time.time_ns() // 1_000_000
    losing.lose_all_since(tmp_path / "saved.rdb", tmp_path / "side")
    assert S.applied_offsets(losing.client, losing.keys, losing.topic) == {0: 2000}
    losing.start()  # the same group
    losing.applied([], 4000)
    losing.stop()
    _assert_lost_changes_outranked(losing, lost, before, ahead)
