"""The consumer's root exception, and corrupt state read back from Redis."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from consumer._kafka_faults import Fault


class ConsumerError(Exception):
    """Root of every error `consumer` raises (bad configuration, unusable Redis data)."""


class CorruptState(ConsumerError):
    """A value read back from Redis that does not decode (docs/operations.md, "Hostile input").

    `what` names the kind of value and is the label of `adr_corrupt_state_total`: `player`,
    `cooldown` (the events that need one are dead-lettered as `corrupt_state`), `snapshot` (the
    last good one stays in use), `outbox` (the entry is moved to the quarantine stream), `pop`,
    `offsets`, `epoch` (nothing can go on without them: the step is retried with backoff until
    repaired). A key the write needs holding another type is a Redis refusal (WRONGTYPE,
    consumer/_retry.py), except a player's: its events are dead-lettered.
    """

    def __init__(self, what: str, key: str, detail: str) -> None:
        super().__init__(f"corrupt {what} {key}: {detail}")
        self.what = what
        self.key = key
        self.detail = detail


class RedisBehind(ConsumerError):
    """Redis holds an earlier offset for a partition than this instance wrote and saw
    acknowledged, or an earlier pool epoch than it saw (`what` = "epoch", partition -1): it lost
    acknowledged writes (a restart from an older snapshot, a failover to an asynchronous
    replica, AOF `everysec` after a crash)."""

    def __init__(
        self, partition: int, stored: int | None, confirmed: int, what: str = "offset"
    ) -> None:
        where = "the pool" if what == "epoch" else f"partition {partition}"
        noun = "epoch" if what == "epoch" else "next offset"
        super().__init__(
            f"{where}: Redis holds {noun} {stored}, this instance wrote or saw {confirmed}"
        )
        self.what = what
        self.partition = partition
        self.stored = stored
        self.confirmed = confirmed


class FatalClientError(ConsumerError):
    """A Kafka client failed for good (e.g. a static member fenced across a broker restart): the
    batch in hand is not applied and the pipeline's one handler (`Pipeline.run`) writes the batch
    held, then recreates the clients. Nothing is lost: Redis holds the offsets, and the outbox
    entries the old producer did not confirm are claimed again."""

    def __init__(self, error: object) -> None:
        super().__init__(f"fatal kafka client error: {error}")
        self.error = error


class StopRequested(ConsumerError):
    """A stop (SIGTERM) was asked for while Redis did not answer a step: the step is given up
    instead of retried, so that the process ends within its grace period. Nothing is lost: the
    batch in hand was not confirmed, and Redis's offsets bring it to the next owner."""

    def __init__(self, what: str) -> None:
        super().__init__(f"stop requested while redis did not answer ({what})")
        self.what = what


class KafkaUnrecoverable(ConsumerError):
    """Kafka refuses what neither waiting nor new clients can change: the broker does not
    support a request the client needs, or a setting is invalid (consumer/_kafka_faults.py,
    `Action.EXIT`). `adr consume` exits with EXIT_KAFKA (consumer/cli.py)."""

    def __init__(self, topic: str, fault: Fault) -> None:
        super().__init__(
            f"kafka refuses {topic!r} for good: {fault.code} ({fault.cause.value}): {fault.error}"
        )
        self.topic = topic
        self.fault = fault
