"""`consumer.Config`: one typed object for `adr consume`, from ADR_* environment and flags."""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
from collections.abc import Mapping

from adr_cli.params import add_param_argument, param_overrides
from consumer._errors import ConsumerError
from engine import ParamError

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
    batch_size: int = 1000
    batch_wait_ms: int = 50
    """How long one read waits for a batch to fill; bounds the latency a quiet topic adds."""
    max_age_ms: int = 3_600_000
    max_future_ms: int = 60_000
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
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 5.0
    instance_id: str = dataclasses.field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}"
    )
    params: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Engine parameter overrides (`--param NAME=VALUE`), checked by engine.Params."""

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.relay_batch < 1 or self.relay_max_in_flight < 1:
            raise ConsumerError("batch sizes must be >= 1")
        if self.relay_pump_ms < 0:
            raise ConsumerError("relay_pump_ms must be >= 0")
        if self.max_players < 1:
            raise ConsumerError("max_players must be >= 1")
        if self.state_cache_players < 0:
            raise ConsumerError("state_cache_players must be >= 0")
        if self.batch_wait_ms < 0 or self.max_age_ms < 0 or self.max_future_ms < 0:
            raise ConsumerError("durations must be >= 0")
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
    "batch_size": ("ADR_BATCH_SIZE", int),
    "batch_wait_ms": ("ADR_BATCH_WAIT_MS", int),
    "max_age_ms": ("ADR_MAX_AGE_MS", int),
    "max_future_ms": ("ADR_MAX_FUTURE_MS", int),
    "metrics_port": ("ADR_METRICS_PORT", int),
    "metrics_host": ("ADR_METRICS_HOST", str),
    "relay_batch": ("ADR_RELAY_BATCH", int),
    "relay_max_in_flight": ("ADR_RELAY_MAX_IN_FLIGHT", int),
    "relay_pump_ms": ("ADR_RELAY_PUMP_MS", int),
    "state_cache_players": ("ADR_STATE_CACHE_PLAYERS", int),
    "outbox_claim_idle_ms": ("ADR_OUTBOX_CLAIM_IDLE_MS", int),
    "max_players": ("ADR_MAX_PLAYERS", int),
    "instance_id": ("ADR_INSTANCE_ID", str),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `adr consume`; each defaults to its environment variable, then Config's."""
    defaults = Config()
    for dest, (env, typ) in _ENV.items():
        flag = "--" + dest.replace("_", "-")
        shown = "hostname-pid" if dest == "instance_id" else getattr(defaults, dest)
        parser.add_argument(
            flag, dest=dest, type=typ, default=None, help=f"(env {env}; default {shown})"
        )
    add_param_argument(parser)


def from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Config:
    """Config from parsed flags over environment variables over defaults."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for dest, (var, typ) in _ENV.items():
        flag_value = getattr(args, dest, None)
        if flag_value is not None:
            values[dest] = flag_value
        elif var in env:
            try:
                values[dest] = typ(env[var])
            except ValueError as exc:
                raise ConsumerError(f"bad {var}={env[var]!r}: {exc}") from exc
    try:
        values["params"] = param_overrides(getattr(args, "param", []) or [], env)
    except ParamError as exc:
        raise ConsumerError(str(exc)) from exc
    return Config(**values)  # type: ignore[arg-type]
