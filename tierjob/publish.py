"""Publish a snapshot: the `{ns}:snapshot` hash (fenced by the lease), then `tier-boundaries`.

Redis is what the consumers read (at their next batch); the compacted topic, keyed by namespace,
is for everyone else. A replica that paused between the two could send an older message after a
newer one: readers of the topic keep the message with the highest `version`.
"""

from __future__ import annotations

from typing import Final

import redis
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from engine import TIER_LABELS, Params, Snapshot
from runtime import KafkaSettings
from runtime.logs import kafka_logger
from schemas import encode_tier_boundaries, tier_boundaries
from tierjob import _scripts
from tierjob._errors import PublishError, TierJobError
from tierjob._keys import Keys
from tierjob.population import LeaseLost
from tierjob.snapshot_codec import encode_snapshot

KAFKA_LOG: Final = kafka_logger("adr.tierjob.kafka")


class SnapshotMovedOn(TierJobError):
    """Another publication landed after this run read the previous snapshot: this one is dropped."""


class RedisPublisher:
    """Writes `{ns}:snapshot` as version = previous + 1, only while holding the lease."""

    def __init__(self, client: redis.Redis, keys: Keys, holder_id: str) -> None:
        self._keys = keys
        self._holder = holder_id
        self._publish = client.register_script(_scripts.PUBLISH)

    def publish(self, snapshot: Snapshot, previous_version: int) -> int:
        """The new version; LeaseLost or SnapshotMovedOn when it must not be written."""
        fields = encode_snapshot(snapshot)
        answer = int(
            self._publish(
                keys=[self._keys.lease, self._keys.snapshot],
                args=[
                    self._holder,
                    previous_version,
                    fields["computed_at"],
                    fields["active_count"],
                    fields["mean_mu_active"],
                    fields["boundaries"],
                ],
            )
        )
        if answer == _scripts.NOT_HOLDER:
            raise LeaseLost("lease lost before publishing")
        if answer == _scripts.SNAPSHOT_MOVED_ON:
            raise SnapshotMovedOn(f"snapshot version moved past {previous_version}")
        return answer


def tier_boundaries_message(version: int, snapshot: Snapshot, params: Params) -> bytes:
    """The tier-boundaries v1 message (schemas/) for a published snapshot."""
    return encode_tier_boundaries(
        tier_boundaries(
            version=version,
            computed_at=snapshot.taken_at if snapshot.taken_at is not None else 0,
            active_count=snapshot.active_count,
            mean_mu_active=snapshot.mean_mu_active,
            boundaries=snapshot.boundaries,
            labels=TIER_LABELS,
            tier_shares=[float(share) for share in params.tier_shares],
        )
    )


class TopicPublisher:
    """Produces tier-boundaries messages to the compacted topic, one per publication."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        timeout_s: float,
        kafka: KafkaSettings | None = None,
    ) -> None:
        self.topic = topic
        self._timeout = timeout_s
        self._kafka = kafka or KafkaSettings()
        self._bootstrap = bootstrap_servers
        guarded = {
            "bootstrap.servers": bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
        }
        ours = {"linger.ms": 0, "message.timeout.ms": max(1000, int(timeout_s * 1000))}
        self._producer = Producer({**self._kafka.apply(ours, guarded), "logger": KAFKA_LOG})

    def ensure_topic(self) -> None:
        """Create the topic (one partition, cleanup.policy=compact) unless it exists."""
        conf = {
            **self._kafka.apply({}, {"bootstrap.servers": self._bootstrap}),
            "logger": KAFKA_LOG,
        }
        admin = AdminClient(conf)
        new = NewTopic(self.topic, num_partitions=1, config={"cleanup.policy": "compact"})
        future = admin.create_topics([new], operation_timeout=self._timeout)[self.topic]
        try:
            future.result(timeout=self._timeout)
        except KafkaException as exc:
            if exc.args and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return
            raise PublishError(f"cannot create topic {self.topic!r}: {exc}") from exc
        except TimeoutError as exc:
            raise PublishError(f"no broker answered within {self._timeout} s") from exc

    def send(self, key: str, value: bytes) -> None:
        """Produce one message and wait for the broker's acknowledgement (PublishError if none)."""
        errors: list[KafkaError] = []

        def on_delivery(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                errors.append(err)

        try:
            self._producer.produce(
                self.topic, key=key.encode(), value=value, on_delivery=on_delivery
            )
        except (KafkaException, BufferError) as exc:
            raise PublishError(f"cannot produce to {self.topic!r}: {exc}") from exc
        if self._producer.flush(self._timeout) > 0:
            raise PublishError(f"no acknowledgement from {self.topic!r} within {self._timeout} s")
        if errors:
            raise PublishError(f"delivery to {self.topic!r} failed: {errors[0]}")

    def close(self) -> None:
        self._producer.flush(self._timeout)
