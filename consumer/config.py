"""`consumer.Config`: one typed object for `adr consume`, from ADR_* environment and flags."""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
from collections.abc import Mapping

from consumer._errors import ConsumerError
from engine import DEFAULT_LATENESS_MS, ParamError
from runtime import (
    KafkaSettings,
    RuntimeConfigError,
    add_kafka_arguments,
    env_value,
    kafka_settings_from_args,
    redact_url,
)
from runtime.params import add_param_argument, param_overrides
from schemas import DEFAULT_MAX_AGE_MS, DEFAULT_MAX_FUTURE_MS

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclasses.dataclass(frozen=True, slots=True)
class Config:
    """Everything `adr consume` needs; engine parameters stay in `engine.Params` (`params`)."""

    bootstrap_servers: str = DEFAULT_BOOTSTRAP
    redis_url: str = DEFAULT_REDIS_URL
    namespace: str = "adr"
    topic: str = "kill-events"
    group: str = "adr-consumer"
    group_instance_id: str = ""
    """Kafka static membership: a restarted instance with the same id takes its partitions back
    at once instead of waiting for the session timeout (set one per replica, e.g. the pod name)."""
    session_timeout_ms: int = 10_000
    kafka_debug: str = ""
    """librdkafka debug contexts (e.g. `cgrp,topic,fetch`), logged as JSON lines; empty: off."""
    rating_topic: str = "rating-changes"
    dlq_topic: str = "kill-events-dlq"
    dead_letter_timeout_ms: int = 30_000
    """How long the broker has to acknowledge a dead letter; one it did not take by then stops
    its partition at that message until a retry delivers it (consumer/_blocked.py)."""
    batch_size: int = 1000
    batch_wait_ms: int = 50
    """How long one read waits for a batch to fill; bounds the latency a quiet topic adds."""
    max_age_ms: int = DEFAULT_MAX_AGE_MS
    """Wall-clock guard against plainly absurd event times: older is dead-lettered
    (`ts_out_of_range`). Lateness itself is by event time (`lateness_ms`)."""
    max_future_ms: int = DEFAULT_MAX_FUTURE_MS
    """Wall-clock guard ahead: stays tight, since an event from the future would move its
    partition's watermark and make the events after it late."""
    lateness_ms: int = DEFAULT_LATENESS_MS
    """An event older than the largest event time accepted on its partition minus this is late:
    counted (`adr_events_late_total`), not rated; the engine's rule (`adr replay --lateness`)."""
    metrics_port: int = 9108
    metrics_host: str = "0.0.0.0"
    relay_batch: int = 100
    """Outbox entries (one per batch) the relay takes per pump, at most."""
    relay_max_in_flight: int = 100_000
    """The relay takes no new outbox entries while this many rating changes wait for the broker."""
    relay_pump_ms: int = 500
    """How long one pump may wait on a full producer queue before the loop goes on."""
    state_cache_players: int = 200_000
    """Player states kept in memory between batches (0: read every player each batch)."""
    max_players: int = 10_000_000
    """Players the rating pool may hold; an event that would add one beyond it is dead-lettered
    (`pool_full`). Size Redis for it: docs/operations.md, "Redis sizing"."""
    outbox_claim_idle_ms: int = 10_000
    """An outbox entry read by a relay that then died is re-sent after this long."""
    held_recheck_ms: int = 5_000
    """How often a partition held for a stored offset outside the log is checked again."""
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 5.0
    instance_id: str = dataclasses.field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}"
    )
    params: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Engine parameter overrides (`--param NAME=VALUE`), checked by engine.Params."""
    kafka: KafkaSettings = dataclasses.field(default_factory=KafkaSettings)
    """The operator's librdkafka settings (security, tuning); guarded keys cannot change."""

    def __repr__(self) -> str:
        """Every field, the Redis URL's password and secret Kafka settings masked."""
        shown = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        shown["redis_url"] = redact_url(self.redis_url)
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.relay_batch < 1 or self.relay_max_in_flight < 1:
            raise ConsumerError("batch sizes must be >= 1")
        if self.relay_pump_ms < 0:
            raise ConsumerError("relay_pump_ms must be >= 0")
        if self.max_players < 1:
            raise ConsumerError("max_players must be >= 1")
        if self.state_cache_players < 0:
            raise ConsumerError("state_cache_players must be >= 0")
        durations = (self.batch_wait_ms, self.max_age_ms, self.max_future_ms, self.lateness_ms)
        if min(*durations, self.held_recheck_ms) < 0:
            raise ConsumerError("durations must be >= 0")
        if self.dead_letter_timeout_ms < 1:
            raise ConsumerError("dead_letter_timeout_ms must be >= 1 (0 would wait forever)")
        if not self.namespace or "{" in self.namespace or "}" in self.namespace:
            raise ConsumerError(f"bad namespace {self.namespace!r}")


# flag dest -> (environment variable, type)
_ENV: dict[str, tuple[str, type]] = {
    "bootstrap_servers": ("KAFKA_BOOTSTRAP_SERVERS", str),
    "redis_url": ("REDIS_URL", str),
    "namespace": ("ADR_NAMESPACE", str),
    "topic": ("ADR_TOPIC", str),
    "group": ("ADR_GROUP", str),
    "group_instance_id": ("ADR_GROUP_INSTANCE_ID", str),
    "session_timeout_ms": ("ADR_SESSION_TIMEOUT_MS", int),
    "kafka_debug": ("ADR_KAFKA_DEBUG", str),
    "rating_topic": ("ADR_RATING_TOPIC", str),
    "dlq_topic": ("ADR_DLQ_TOPIC", str),
    "dead_letter_timeout_ms": ("ADR_DEAD_LETTER_TIMEOUT_MS", int),
    "batch_size": ("ADR_BATCH_SIZE", int),
    "batch_wait_ms": ("ADR_BATCH_WAIT_MS", int),
    "max_age_ms": ("ADR_MAX_AGE_MS", int),
    "max_future_ms": ("ADR_MAX_FUTURE_MS", int),
    "lateness_ms": ("ADR_LATENESS_MS", int),
    "metrics_port": ("ADR_METRICS_PORT", int),
    "metrics_host": ("ADR_METRICS_HOST", str),
    "relay_batch": ("ADR_RELAY_BATCH", int),
    "relay_max_in_flight": ("ADR_RELAY_MAX_IN_FLIGHT", int),
    "relay_pump_ms": ("ADR_RELAY_PUMP_MS", int),
    "state_cache_players": ("ADR_STATE_CACHE_PLAYERS", int),
    "outbox_claim_idle_ms": ("ADR_OUTBOX_CLAIM_IDLE_MS", int),
    "held_recheck_ms": ("ADR_HELD_RECHECK_MS", int),
    "max_players": ("ADR_MAX_PLAYERS", int),
    "instance_id": ("ADR_INSTANCE_ID", str),
}


# flag dest -> its one-line description in `adr consume --help`
_HELP: dict[str, str] = {
    "bootstrap_servers": "Kafka bootstrap servers",
    "redis_url": "Redis of the rating pool (URL forms: docs/operations.md)",
    "namespace": "the rating pool: Redis key prefix {ns}",
    "topic": "topic of kill events to rate",
    "group": "Kafka consumer group of the pool's consumers",
    "group_instance_id": "static membership id, one per replica (e.g. the pod name)",
    "session_timeout_ms": "Kafka group session timeout",
    "kafka_debug": "librdkafka debug contexts, e.g. cgrp,fetch (empty: off)",
    "rating_topic": "topic the rating changes go to",
    "dlq_topic": "dead-letter topic for events that cannot be rated",
    "dead_letter_timeout_ms": "how long the broker has to acknowledge a dead letter",
    "batch_size": "most events read and written per batch",
    "batch_wait_ms": "how long one read waits for a batch to fill",
    "max_age_ms": "wall-clock guard: older event times are dead-lettered",
    "max_future_ms": "wall-clock guard: event times further ahead are dead-lettered",
    "lateness_ms": "event-time lateness: older than a partition's watermark minus this is late",
    "metrics_port": "port of /metrics, /healthz and /readyz (0: none)",
    "metrics_host": "address the metrics server binds",
    "relay_batch": "most outbox entries the relay takes per pump",
    "relay_max_in_flight": "no new outbox entries while this many messages await the broker",
    "relay_pump_ms": "longest a pump waits on a full producer queue before the loop goes on",
    "max_players": "players the pool may hold; events that would add more are dead-lettered",
    "state_cache_players": "player states kept in memory between batches",
    "outbox_claim_idle_ms": "outbox entries of a dead relay are re-sent after this long",
    "held_recheck_ms": "how often a partition held for an out-of-log offset is rechecked",
    "instance_id": "this replica's name in the outbox consumer group",
}
_EPILOG = (
    "exit status: 0 stopped by SIGTERM/SIGINT after the batch in hand; 2 bad configuration "
    "(a flag, an environment variable, a Kafka setting). Failures of Kafka or Redis while "
    "running are retried, not exits."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `adr consume`; each defaults to its environment variable, then Config's."""
    parser.epilog = _EPILOG
    defaults = Config()
    for dest, (env, typ) in _ENV.items():
        flag = "--" + dest.replace("_", "-")
        shown = "hostname-pid" if dest == "instance_id" else getattr(defaults, dest)
        if dest == "redis_url":
            shown = f"{shown}; or a file named by {env}_FILE"
        text = f"{_HELP[dest]} (env {env}; default {shown})"
        parser.add_argument(flag, dest=dest, type=typ, default=None, help=text)
    add_kafka_arguments(parser)
    add_param_argument(parser)


def from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Config:
    """Config from parsed flags over environment variables over defaults."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for dest, (var, typ) in _ENV.items():
        flag_value = getattr(args, dest, None)
        if flag_value is not None:
            values[dest] = flag_value
            continue
        try:
            raw = env_value(env, var)
            if raw is not None:
                values[dest] = typ(raw)
        except RuntimeConfigError as exc:
            raise ConsumerError(str(exc)) from exc
        except ValueError as exc:
            raise ConsumerError(f"bad {var}={raw!r}: {exc}") from exc
    try:
        values["params"] = param_overrides(
            getattr(args, "param", []) or [], env, getattr(args, "profile", None)
        )
        values["kafka"] = kafka_settings_from_args(args, env)
    except (ParamError, RuntimeConfigError) as exc:
        raise ConsumerError(str(exc)) from exc
    return Config(**values)  # type: ignore[arg-type]
