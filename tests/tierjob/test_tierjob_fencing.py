"""A tier-job replica paused past its lease cannot put an older snapshot after a newer one on the
compacted tier-boundaries topic, and every reader of the snapshot hash (tier job, consumer) uses
the one codec with one set of checks."""

from __future__ import annotations

import pytest
import redis
from _tierjob_support import T0, read_topic, write_random_players

from consumer._errors import CorruptState
from consumer._store import Store
from engine import Params, Snapshot, initial_snapshot
from redis_layout import Keys, encode_snapshot
from schemas import decode_tier_boundaries
from tierjob import Calibrator, Config, TopicPublisher

PARAMS = Params()


@pytest.fixture
def ns(ns: str, redis_client: redis.Redis) -> str:
    """The namespace, holding 40 players who last played just before T0."""
    write_random_players(redis_client, ns, PARAMS, 40, seed=3, last_ts=T0 - 1000)
    return ns


def _replica(client: redis.Redis, ns: str, name: str, bootstrap: str, topic: str) -> Calibrator:
    config = Config(
        namespace=ns, holder_id=name, lease_ttl=30.0, bootstrap_servers=bootstrap, topic=topic,
        kafka_timeout=20.0,
    )  # fmt: skip
    publisher = TopicPublisher(bootstrap, topic, config.kafka_timeout)
    publisher.ensure_topic()
    return Calibrator(client, config, publisher)


@pytest.fixture
def replicas(
    redis_client: redis.Redis, kafka_bootstrap: str, ns: str, unique_name
) -> tuple[str, Calibrator, Calibrator]:  # type: ignore[no-untyped-def]
    """(topic, a, b): two replicas of the namespace publishing to one topic; a has published
    version 1."""
    topic = unique_name("tb")
    a = _replica(redis_client, ns, "a", kafka_bootstrap, topic)
    b = _replica(redis_client, ns, "b", kafka_bootstrap, topic)
    assert a.run_once(T0).outcome == "published"
    return topic, a, b


def _versions(bootstrap: str, topic: str) -> list[int]:
    # Read to the end, not to `expect`: an extra (older) message would show up too.
    return [decode_tier_boundaries(m.value()).version for m in read_topic(bootstrap, topic)]


def test_a_replica_paused_between_redis_and_the_topic_does_not_send_its_older_snapshot(
    redis_client: redis.Redis, kafka_bootstrap: str, ns: str, replicas
) -> None:  # type: ignore[no-untyped-def]
    topic, a, b = replicas

    publish = a._publisher.publish

    def publish_then_pause(snapshot: Snapshot, previous: int) -> int:
        version = publish(snapshot, previous)  # version 2 in Redis
        # a pauses here past its lease; b takes over and publishes version 3 everywhere
        redis_client.delete(Keys.of(ns).lease)
        assert b.run_once(T0 + 2000).version == 3
        return version

    a._publisher.publish = publish_then_pause  # type: ignore[method-assign]
    late = a.run_once(T0 + 1000)
    assert (late.outcome, late.version) == ("moved_on", 2)
    assert _versions(kafka_bootstrap, topic) == [1, 3]


def test_a_replica_paused_inside_its_transaction_is_fenced_by_the_next_publisher(
    redis_client: redis.Redis, kafka_bootstrap: str, ns: str, replicas
) -> None:  # type: ignore[no-untyped-def]
    topic, a, b = replicas
    is_current = a._publisher.is_current
    paused = []

    def check_then_pause(version: int) -> bool:
        answer = is_current(version)  # True: version 2 is the newest in Redis now
        if not paused:
            paused.append(version)
            # a pauses after its check, before its commit; b publishes version 3: its producer's
            # initialisation fences a's, whose commit then fails
            redis_client.delete(Keys.of(ns).lease)
            assert b.run_once(T0 + 2000).version == 3
        return answer

    a._publisher.is_current = check_then_pause  # type: ignore[method-assign]
    late = a.run_once(T0 + 1000)
    assert paused == [2]
    assert (late.outcome, late.version) == ("moved_on", 2)  # re-checked after being fenced
    assert _versions(kafka_bootstrap, topic) == [1, 3]
    # a stays usable: its next publication goes out after b's
    redis_client.delete(Keys.of(ns).lease)
    assert a.run_once(T0 + 3000).version == 4
    assert _versions(kafka_bootstrap, topic) == [1, 3, 4]


def _publish(client: redis.Redis, keys: Keys, version: int, boundaries: str) -> None:
    snap = Snapshot(taken_at=T0, mean_mu_active=1010.0, boundaries=None, active_count=500)
    fields = encode_snapshot(snap) | {"version": str(version), "boundaries": boundaries}
    client.hset(keys.snapshot, mapping=fields)


def test_the_consumer_reads_the_snapshot_with_the_tier_jobs_codec(
    redis_client: redis.Redis, ns: str
) -> None:
    keys = Keys.of(ns)
    good = [1400.0 - 25.0 * k for k in range(14)]
    bad: list[CorruptState] = []
    store = Store(redis_client, Keys(ns), "t", PARAMS, on_corrupt=bad.append)
    assert store.read_view([], [], [0]).snapshot == initial_snapshot(PARAMS)  # none published

    _publish(redis_client, keys, 1, str(good))
    assert store.read_view([], [], [0]).snapshot.boundaries == tuple(good)
    # Forms the consumer's own parser used to accept and the tier job's codec rejects:
    # increasing boundaries, space-separated text, non-finite values.
    for version, text in enumerate(
        [str(good[::-1]), " ".join(map(str, good)), str([*good[:13], float("inf")])], start=2
    ):
        _publish(redis_client, keys, version, text)
        for _batch in range(2):  # the last good one stays in use, reported once per version
            assert store.read_view([], [], [0]).snapshot.boundaries == tuple(good)
    assert [e.what for e in bad] == ["snapshot"] * 3
    assert all("unreadable snapshot hash" in e.detail for e in bad)

    fixed = [b - 1.0 for b in good]
    _publish(redis_client, keys, 5, str(fixed))
    assert store.read_view([], [], [0]).snapshot.boundaries == tuple(fixed)
