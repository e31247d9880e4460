"""The calibration lease: one replica publishes; a replica whose lease is gone writes nothing."""

from __future__ import annotations

import random
import time

import pytest
import redis
from _tierjob_support import T0, expected_snapshot, player, write_players

from engine import Params, PlayerState
from redis_layout import Keys, decode_snapshot
from tierjob import Calibrator, Config, LeaseLost, SnapshotMovedOn
from tierjob._population import PopulationReader
from tierjob._publish import RedisPublisher

PARAMS = Params()


def seeded_players() -> dict[str, PlayerState]:
    rng = random.Random(11)
    return {
        f"p{i}": player(PARAMS, rng.uniform(0, 4000), tuple(T0 - 1000 - j for j in range(5)))
        for i in range(40)
    }


@pytest.fixture
def ns(ns: str, redis_client: redis.Redis) -> str:
    """The namespace, holding `seeded_players()`."""
    write_players(redis_client, Keys.of(ns), seeded_players(), PARAMS)
    return ns


def replica(client: redis.Redis, ns: str, name: str, ttl: float = 30.0) -> Calibrator:
    return Calibrator(client, Config(namespace=ns, holder_id=name, lease_ttl=ttl))


def version(client: redis.Redis, ns: str) -> int:
    found = decode_snapshot(client.hgetall(Keys.of(ns).snapshot))
    return 0 if found is None else found[0]


def test_only_the_holder_publishes(redis_client: redis.Redis, ns: str) -> None:
    a, b = replica(redis_client, ns, "a"), replica(redis_client, ns, "b")
    outcomes = [(a.run_once(T0 + i).outcome, b.run_once(T0 + i).outcome) for i in range(3)]
    assert outcomes == [("published", "not_holder")] * 3
    assert version(redis_client, ns) == 3
    assert redis_client.get(Keys.of(ns).lease) == b"a"


def test_a_standby_takes_over_once_the_lease_expires(redis_client: redis.Redis, ns: str) -> None:
    a, b = replica(redis_client, ns, "a", ttl=0.3), replica(redis_client, ns, "b", ttl=0.3)
    first = a.run_once(T0)
    assert b.run_once(T0 + 1).outcome == "not_holder"
    time.sleep(0.4)
    second = b.run_once(T0 + 2)
    assert second.outcome == "published" and second.version == 2
    assert a.run_once(T0 + 3).outcome == "not_holder"
    # The new holder smooths against the snapshot the old one published.
    assert first.snapshot is not None
    assert second.snapshot == expected_snapshot(seeded_players(), T0 + 2, first.snapshot, PARAMS)


def test_a_paused_replica_cannot_unlink_or_publish(redis_client: redis.Redis, ns: str) -> None:
    keys = Keys.of(ns)
    a = replica(redis_client, ns, "a")
    published = a.run_once(T0)
    assert published.snapshot is not None
    # "a" pauses; its lease expires and "b" takes it.
    redis_client.set(keys.lease, "b")
    stale = RedisPublisher(redis_client, keys, "a")
    with pytest.raises(LeaseLost):
        stale.publish(published.snapshot, previous_version=1)
    redis_client.set(keys.pruned_to, "1")  # an earlier release's key: only the holder unlinks
    with pytest.raises(LeaseLost):
        PopulationReader(redis_client, keys, "a", 100).read(T0 - 10**10)
    assert version(redis_client, ns) == 1
    assert redis_client.get(keys.pruned_to) == b"1"
    assert a.run_once(T0 + 1).outcome == "not_holder"


def test_a_publication_based_on_an_old_snapshot_is_refused(
    redis_client: redis.Redis, ns: str
) -> None:
    keys = Keys.of(ns)
    result = replica(redis_client, ns, "a").run_once(T0)
    assert result.snapshot is not None
    with pytest.raises(SnapshotMovedOn):
        RedisPublisher(redis_client, keys, "a").publish(result.snapshot, previous_version=0)
    assert version(redis_client, ns) == 1


def test_release_gives_up_only_ones_own_lease(redis_client: redis.Redis, ns: str) -> None:
    keys = Keys.of(ns)
    a, b = replica(redis_client, ns, "a"), replica(redis_client, ns, "b")
    assert a.lease.hold() and not b.lease.hold()
    assert not b.lease.release() and redis_client.get(keys.lease) == b"a"
    assert a.lease.release() and redis_client.get(keys.lease) is None
    assert b.lease.hold()
    ttl = redis_client.pttl(keys.lease)
    assert 0 < ttl <= 30_000


def spread_activity(client: redis.Redis, keys: Keys) -> None:
    """40 active players with distinct activity times."""
    players = {
        f"s{i}": player(PARAMS, 1000.0 + i, tuple(T0 - 1000 * i - j for j in range(5)))
        for i in range(40)
    }
    write_players(client, keys, players, PARAMS)


def test_a_long_read_renews_the_lease_between_pages(redis_client: redis.Redis, ns: str) -> None:
    keys = Keys.of(ns)
    redis_client.delete(keys.activity)  # only these 40 are active
    spread_activity(redis_client, keys)
    lease = replica(redis_client, ns, "a").lease
    assert lease.hold()
    renewals: list[int] = []

    def renew() -> bool:
        renewals.append(redis_client.pttl(keys.lease))
        return lease.hold()

    reader = PopulationReader(redis_client, keys, "a", 3, renew=renew)
    population = reader.read(T0 - 8 * 86_400_000)
    assert population.active_mus == [1000.0 + i for i in range(40)]
    assert population.pages == 14  # 3 per Lua call, the last one short
    assert len(renewals) == 13


def test_a_read_stops_when_the_renewal_fails(redis_client: redis.Redis, ns: str) -> None:
    keys = Keys.of(ns)
    redis_client.delete(keys.activity)  # only these 40 are active
    spread_activity(redis_client, keys)
    assert replica(redis_client, ns, "a").lease.hold()
    reader = PopulationReader(redis_client, keys, "a", 3, renew=lambda: False)
    with pytest.raises(LeaseLost):
        reader.read(T0 - 8 * 86_400_000)
