"""What a Kafka error means for the consumer: one classification for every client it runs.

The rating-change relay (consumer/_relay.py), the dead-letter copies (consumer/_dead_letters.py)
and the group member reading kill events (consumer/_lifecycle.py) all meet the broker's refusals:
an ACL change, a deleted topic, a broker down or fenced, a quota, a message too large, a timeout.
Each error, whether raised by `produce()`, reported in a delivery report, returned by `consume()`
or passed to the error callback, is classified here once, into a `Cause` (the bounded `cause`
label of the metrics and the log lines) and an `Action` (what the caller does about it):

- `WAIT`: the path waits and retries; nothing else stops. Ratings go on, rating changes wait in
  the outbox, a dead letter's partition waits at it. What fixes it is outside the process (an
  ACL granted, a topic created, a broker back): a restart would not help, so none happens.
- `SET_ASIDE`: this one message can never be taken (larger than a limit, refused as invalid):
  the relay quarantines it, a dead letter's partition stops at it; everything else goes on.
- `RENEW`: the client is unusable (librdkafka's fatal errors: an idempotent producer fenced or
  out of sequence): new clients are made; the outbox and Redis's offsets lose nothing.
- `EXIT`: neither waiting nor new clients can help, because the process's own configuration or
  the broker's version is wrong for it (an unsupported request version, an invalid setting):
  the consumer exits with `EXIT_KAFKA` and the cause (consumer/cli.py, docs/operations.md).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Final

from confluent_kafka import KafkaError, KafkaException


class Cause(enum.StrEnum):
    """Why the broker or the client refused (the `cause` label: a bounded set)."""

    NOT_AUTHORIZED = "not_authorized"
    """An ACL denies the principal the topic, the group or the cluster operation."""
    AUTHENTICATION = "authentication"
    """SASL or TLS authentication failed (wrong or rotated credentials, a certificate)."""
    TOPIC_MISSING = "topic_missing"
    """The topic (or partition) does not exist, and the broker does not create it."""
    TOO_LARGE = "too_large"
    """The message is over the producer's, broker's or topic's size limit."""
    INVALID_RECORD = "invalid_record"
    """The broker refused the record itself (a policy, a corrupt or invalid record)."""
    TIMED_OUT = "timed_out"
    """No answer within the client's timeout (a message's, a request's)."""
    BROKER_UNAVAILABLE = "broker_unavailable"
    """No broker or no leader reachable (down, restarting, a partition moving, the network)."""
    NOT_ENOUGH_REPLICAS = "not_enough_replicas"
    """Fewer in-sync replicas than the topic's `min.insync.replicas`: acks=all cannot succeed."""
    QUOTA = "quota"
    """A broker quota throttles the client."""
    FENCED = "fenced"
    """The client's identity was taken over or lost (a fenced producer or static member, an
    idempotent producer's sequence lost): only a new client goes on."""
    UNSUPPORTED = "unsupported"
    """The broker does not support what the client asks (version, feature), or a setting is
    invalid: nothing the process can change at run time."""
    OTHER = "other"
    """Anything else (logged with the librdkafka error name)."""


class Action(enum.Enum):
    """What the caller does about a fault (the module's docstring)."""

    WAIT = "wait"
    SET_ASIDE = "set_aside"
    RENEW = "renew"
    EXIT = "exit"


@dataclasses.dataclass(frozen=True, slots=True)
class Fault:
    """One classified Kafka error."""

    cause: Cause
    action: Action
    code: str
    """librdkafka's name of the error (e.g. TOPIC_AUTHORIZATION_FAILED), for the log line."""
    error: str
    """The error's text, for the log line."""

    @property
    def retriable(self) -> bool:
        """The same request can succeed later without anything new in the process."""
        return self.action is Action.WAIT

    @property
    def fatal(self) -> bool:
        """The client (RENEW) or the process (EXIT) cannot go on as it is."""
        return self.action in (Action.RENEW, Action.EXIT)


_CAUSES: Final[dict[int, Cause]] = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED: Cause.NOT_AUTHORIZED,
    KafkaError.GROUP_AUTHORIZATION_FAILED: Cause.NOT_AUTHORIZED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: Cause.NOT_AUTHORIZED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Cause.NOT_AUTHORIZED,
    KafkaError.SASL_AUTHENTICATION_FAILED: Cause.AUTHENTICATION,
    KafkaError._AUTHENTICATION: Cause.AUTHENTICATION,
    KafkaError._SSL: Cause.AUTHENTICATION,
    KafkaError.UNKNOWN_TOPIC_OR_PART: Cause.TOPIC_MISSING,
    KafkaError._UNKNOWN_TOPIC: Cause.TOPIC_MISSING,
    KafkaError._UNKNOWN_PARTITION: Cause.TOPIC_MISSING,
    KafkaError.UNKNOWN_TOPIC_ID: Cause.TOPIC_MISSING,
    KafkaError.INCONSISTENT_TOPIC_ID: Cause.TOPIC_MISSING,
    KafkaError.MSG_SIZE_TOO_LARGE: Cause.TOO_LARGE,
    KafkaError.RECORD_LIST_TOO_LARGE: Cause.TOO_LARGE,
    KafkaError.INVALID_MSG_SIZE: Cause.TOO_LARGE,
    KafkaError.INVALID_MSG: Cause.INVALID_RECORD,
    KafkaError.INVALID_RECORD: Cause.INVALID_RECORD,
    KafkaError.POLICY_VIOLATION: Cause.INVALID_RECORD,
    KafkaError.INVALID_TIMESTAMP: Cause.INVALID_RECORD,
    KafkaError._MSG_TIMED_OUT: Cause.TIMED_OUT,
    KafkaError._TIMED_OUT: Cause.TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT: Cause.TIMED_OUT,
    KafkaError._TRANSPORT: Cause.BROKER_UNAVAILABLE,
    KafkaError._ALL_BROKERS_DOWN: Cause.BROKER_UNAVAILABLE,
    KafkaError._RESOLVE: Cause.BROKER_UNAVAILABLE,
    KafkaError.BROKER_NOT_AVAILABLE: Cause.BROKER_UNAVAILABLE,
    KafkaError.LEADER_NOT_AVAILABLE: Cause.BROKER_UNAVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION: Cause.BROKER_UNAVAILABLE,
    KafkaError.NETWORK_EXCEPTION: Cause.BROKER_UNAVAILABLE,
    KafkaError.KAFKA_STORAGE_ERROR: Cause.BROKER_UNAVAILABLE,
    KafkaError.COORDINATOR_NOT_AVAILABLE: Cause.BROKER_UNAVAILABLE,
    KafkaError.NOT_COORDINATOR: Cause.BROKER_UNAVAILABLE,
    KafkaError.NOT_ENOUGH_REPLICAS: Cause.NOT_ENOUGH_REPLICAS,
    KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Cause.NOT_ENOUGH_REPLICAS,
    KafkaError._ISR_INSUFF: Cause.NOT_ENOUGH_REPLICAS,
    KafkaError.THROTTLING_QUOTA_EXCEEDED: Cause.QUOTA,
    KafkaError.PRODUCER_FENCED: Cause.FENCED,
    KafkaError._FENCED: Cause.FENCED,
    KafkaError.INVALID_PRODUCER_EPOCH: Cause.FENCED,
    KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER: Cause.FENCED,
    KafkaError.UNKNOWN_PRODUCER_ID: Cause.FENCED,
    KafkaError.INVALID_PRODUCER_ID_MAPPING: Cause.FENCED,
    KafkaError.FENCED_INSTANCE_ID: Cause.FENCED,
    KafkaError.UNSUPPORTED_VERSION: Cause.UNSUPPORTED,
    KafkaError.UNSUPPORTED_FOR_MESSAGE_FORMAT: Cause.UNSUPPORTED,
    KafkaError._UNSUPPORTED_FEATURE: Cause.UNSUPPORTED,
    KafkaError.INVALID_REQUIRED_ACKS: Cause.UNSUPPORTED,
    KafkaError._INVALID_ARG: Cause.UNSUPPORTED,
}
_ACTIONS: Final[dict[Cause, Action]] = {
    Cause.TOO_LARGE: Action.SET_ASIDE,
    Cause.INVALID_RECORD: Action.SET_ASIDE,
    Cause.FENCED: Action.RENEW,
    Cause.UNSUPPORTED: Action.EXIT,
}
"""Every other cause waits (Action.WAIT)."""
CAUSES: Final = tuple(c.value for c in Cause)
"""Every `cause` label value."""


def classify(err: KafkaError | KafkaException | BaseException | None) -> Fault:
    """The fault `err` stands for: a KafkaError, or a KafkaException carrying one (what
    `produce()` and `consume()` raise). Anything else is `OTHER`, to wait on.

    librdkafka's fatal flag wins over the table: a fatal error needs new clients (RENEW)
    whatever its code, unless the code says that new clients cannot help either (EXIT)."""
    if isinstance(err, KafkaException):
        err = err.args[0] if err.args else None
    if not isinstance(err, KafkaError):
        text = "" if err is None else f"{type(err).__name__}: {err}"
        return Fault(Cause.OTHER, Action.WAIT, "", text)
    code = err.code()
    cause = _CAUSES.get(code, Cause.OTHER)
    action = _ACTIONS.get(cause, Action.WAIT)
    if (err.fatal() or code == KafkaError._FATAL) and action is not Action.EXIT:
        action = Action.RENEW
    return Fault(cause, action, err.name(), err.str())
