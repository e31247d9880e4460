"""Publish a snapshot: the `{ns}:snapshot` hash (fenced by the lease), then `tier-boundaries`.

Redis is what the consumers read (at their next batch); the compacted topic, keyed by namespace,
is for everyone else. The topic is fenced too, so that a replica paused between the two (past its
lease) cannot put an older snapshot after a newer one, which compaction would then keep:

- Every replica produces to the topic through a Kafka transactional producer with one
  transactional.id per topic and namespace. Initialising one (`init_transactions`) fences every
  producer of that id initialised before it: the broker refuses their further writes and commits.
- Inside its transaction, after initialising, a replica checks that Redis's snapshot version is
  still the one it published, and sends nothing otherwise.

So a message of version v is committed only if, after its producer was initialised, v was still
the newest in Redis; a replica that published v+1 later either finds the first producer already
fenced or fences it with its own initialisation, before its commit. A producer that finds itself
fenced is recreated (fencing the other) and checks again. Readers read committed messages only
(`isolation.level=read_committed`, the default of librdkafka; Java clients must set it) and, as
a second line, keep the message with the highest `version`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import redis
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from engine import TIER_LABELS, Params, Snapshot
from redis_layout import Keys, encode_snapshot, scripts
from runtime import KafkaSettings
from runtime.logs import kafka_logger
from schemas import encode_tier_boundaries, tier_boundaries
from tierjob._errors import PublishError, TierJobError
from tierjob._population import LeaseLost

KAFKA_LOG: Final = kafka_logger("adr.tierjob.kafka")
_SEND_ATTEMPTS: Final = 3
"""Fenced this many times in a row (replicas taking turns): give up this run."""


class SnapshotMovedOn(TierJobError):
    """Another publication landed after this run read the previous snapshot: this one is dropped."""


class RedisPublisher:
    """Writes `{ns}:snapshot` as version = previous + 1, only while holding the lease."""

    def __init__(self, client: redis.Redis, keys: Keys, holder_id: str) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts.Fenced(client, keys, holder_id)

    def publish(self, snapshot: Snapshot, previous_version: int) -> int:
        """The new version; LeaseLost or SnapshotMovedOn when it must not be written."""
        answer = self._scripts.publish(previous_version, encode_snapshot(snapshot))
        if answer == scripts.NOT_HOLDER:
            raise LeaseLost("lease lost before publishing")
        if answer == scripts.SNAPSHOT_MOVED_ON:
            raise SnapshotMovedOn(f"snapshot version moved past {previous_version}")
        return answer

    def is_current(self, version: int) -> bool:
        """Whether `version` is still the newest snapshot in Redis."""
        current = self._client.hget(self._keys.snapshot, "version")
        return current is not None and int(current) == version


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
    """Produces tier-boundaries messages to the compacted topic, one transaction per publication,
    fenced as the module docstring says."""

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
        timeout_ms = max(1000, int(timeout_s * 1000))
        guarded: dict[str, object] = {
            "bootstrap.servers": bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "transaction.timeout.ms": timeout_ms,
            "message.timeout.ms": timeout_ms,
        }
        # Checked now, so that a conflicting operator setting stops the job at start.
        self._settings = self._kafka.apply({"linger.ms": 0}, guarded)
        self._producer: Producer | None = None

    def _transactional(self, key: str) -> Producer:
        """This replica's producer for `key`, initialised (which fences every earlier one)."""
        if self._producer is None:
            transactional_id = f"adr-tierjob:{self.topic}:{key}"
            if self._kafka.settings.get("transactional.id", transactional_id) != transactional_id:
                raise PublishError("transactional.id is the tier job's own: remove it")
            producer = Producer(
                {**self._settings, "transactional.id": transactional_id, "logger": KAFKA_LOG}
            )
            try:
                producer.init_transactions(self._timeout)
            except KafkaException as exc:
                producer.poll(0)  # serve librdkafka's log lines (its logger runs on poll)
                raise PublishError(f"cannot start a transaction on {self.topic!r}: {exc}") from exc
            self._producer = producer
        return self._producer

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

    def send(
        self, key: str, value: bytes, still_current: Callable[[], bool] = lambda: True
    ) -> bool:
        """Produce one message in a transaction and commit it; False (nothing sent) when
        `still_current()`, asked inside the transaction, says a newer snapshot exists.
        PublishError when the broker did not take it."""
        for _attempt in range(_SEND_ATTEMPTS):
            producer = self._transactional(key)
            try:
                producer.begin_transaction()
                try:
                    current = still_current()
                except Exception:
                    self._abandon(producer)
                    raise
                if not current:
                    producer.abort_transaction(self._timeout)
                    return False
                producer.produce(self.topic, key=key.encode(), value=value)
                producer.commit_transaction(self._timeout)
                return True
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                fatal = isinstance(err, KafkaError) and err.fatal()
                if not fatal:
                    self._abandon(producer)
                    raise PublishError(f"cannot publish to {self.topic!r}: {exc}") from exc
                self._producer = None  # fenced by another replica: fence it back, check again
                KAFKA_LOG.warning("tier-boundaries producer fenced", extra={"error": str(exc)})
            except BufferError as exc:
                self._abandon(producer)
                raise PublishError(f"cannot produce to {self.topic!r}: {exc}") from exc
        raise PublishError(f"fenced {_SEND_ATTEMPTS} times in a row on {self.topic!r}")

    def _abandon(self, producer: Producer) -> None:
        """After a failed transaction: abort it if possible, else start afresh next time."""
        try:
            producer.abort_transaction(self._timeout)
        except KafkaException:
            self._producer = None

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(self._timeout)
