"""`tierjob.Config`: one typed object for `adr calibrate`, from ADR_* environment and flags."""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
import uuid
from collections.abc import Mapping

from engine import ParamError, Params
from runtime import (
    KafkaSettings,
    RuntimeConfigError,
    add_kafka_arguments,
    env_value,
    kafka_settings_from_args,
    redact_url,
)
from runtime.params import add_param_argument, param_overrides
from tierjob._errors import TierJobError

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
ONE_SHOT_LEASE_TTL_S = 60.0
"""A one-shot run (CronJob) keeps its lease this long: concurrent one-shot replicas publish once."""


@dataclasses.dataclass(frozen=True, slots=True)
class Config:
    """Everything `adr calibrate` needs; the algorithm's parameters are `params` (engine.Params)."""

    redis_url: str = DEFAULT_REDIS_URL
    bootstrap_servers: str = DEFAULT_BOOTSTRAP
    namespace: str = "adr"
    topic: str = "tier-boundaries"
    every: float | None = None
    """Seconds between calibrations; None: calibrate once and exit (a Kubernetes CronJob)."""
    lease_ttl: float | None = None
    """Seconds the lease lives without renewal; None: 2 × every, or 60 s for a one-shot run."""
    metrics_port: int | None = 9109
    """Prometheus port while `every` is set (0 or None: no server); one-shot runs serve none."""
    metrics_host: str = "0.0.0.0"
    prune_chunk: int = 5000
    """Expired players removed from `{ns}:active_mu` per Lua call (bounds how long Redis blocks)."""
    kafka_timeout: float = 30.0
    """Seconds to wait for the broker to acknowledge the tier-boundaries message."""
    holder_id: str = dataclasses.field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    )
    params: Params = dataclasses.field(default_factory=Params)
    kafka: KafkaSettings = dataclasses.field(default_factory=KafkaSettings)
    """The operator's librdkafka settings (security, tuning); guarded keys cannot change."""

    def __repr__(self) -> str:
        """Every field, the Redis URL's password and secret Kafka settings masked."""
        shown = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        shown["redis_url"] = redact_url(self.redis_url)
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    def __post_init__(self) -> None:
        if not self.namespace or "{" in self.namespace or "}" in self.namespace:
            raise TierJobError(f"bad namespace {self.namespace!r}")
        if self.every is not None and self.every <= 0:
            raise TierJobError(f"--every must be > 0 seconds, got {self.every}")
        if self.lease_ttl is not None and self.lease_ttl <= 0:
            raise TierJobError(f"--lease-ttl must be > 0 seconds, got {self.lease_ttl}")
        if self.prune_chunk < 1 or self.kafka_timeout <= 0:
            raise TierJobError("--prune-chunk must be >= 1 and --kafka-timeout > 0")

    @property
    def lease_ttl_ms(self) -> int:
        """The lease's time to live: it outlasts the interval, or a standby would publish too."""
        if self.lease_ttl is not None:
            seconds = self.lease_ttl
        elif self.every is not None:
            seconds = 2 * self.every
        else:
            seconds = ONE_SHOT_LEASE_TTL_S
        return max(1, round(seconds * 1000))


# flag dest -> (environment variable, type, help)
_ENV: dict[str, tuple[str, type, str]] = {
    "redis_url": ("REDIS_URL", str, "Redis holding the rating state (or REDIS_URL_FILE)"),
    "bootstrap_servers": ("KAFKA_BOOTSTRAP_SERVERS", str, "Kafka bootstrap servers"),
    "namespace": ("ADR_NAMESPACE", str, "Redis key namespace {ns}; the topic's message key"),
    "topic": ("ADR_TIER_TOPIC", str, "compacted topic for tier-boundaries v1 (created if missing)"),
    "every": ("ADR_CALIBRATE_EVERY", float, "seconds between calibrations; unset: run once"),
    "lease_ttl": (
        "ADR_CALIBRATE_LEASE_TTL",
        float,
        "seconds the lease outlives its last renewal; unset: 2 x --every, or 60 for one run",
    ),
    "metrics_port": ("ADR_METRICS_PORT", int, "Prometheus port with --every (0: none)"),
    "metrics_host": ("ADR_METRICS_HOST", str, "Prometheus bind address"),
    "prune_chunk": ("ADR_CALIBRATE_PRUNE_CHUNK", int, "expired players removed per Lua call"),
    "kafka_timeout": ("ADR_KAFKA_TIMEOUT", float, "seconds to wait for the broker's ack"),
    "holder_id": ("ADR_INSTANCE_ID", str, "this replica's lease holder id"),
}

_EPILOG = (
    "exit status (one run): 0 published, or another replica holds the lease; 1 Redis error or "
    "the topic missed the message (Redis has the snapshot); 2 usage. With --every: runs until "
    "SIGTERM/SIGINT, then 0."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `adr calibrate`; each defaults to its environment variable, then Config's."""
    parser.epilog = _EPILOG
    defaults = Config()
    for dest, (env, typ, text) in _ENV.items():
        flag = "--" + dest.replace("_", "-")
        shown = "hostname-pid-random" if dest == "holder_id" else getattr(defaults, dest)
        if shown is None:
            help_text = f"{text} (env {env})"
        else:
            help_text = f"{text} (env {env}; default {shown})"
        parser.add_argument(flag, dest=dest, type=typ, default=None, help=help_text)
    add_kafka_arguments(parser)
    add_param_argument(parser)


def params_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> Params:
    """engine.Params from ADR_PARAMS then --param overrides (the consumer must use the same)."""
    try:
        overrides = param_overrides(
            getattr(args, "param", []) or [], environ, getattr(args, "profile", None)
        )
        return Params.from_overrides(overrides)
    except ParamError as exc:
        raise TierJobError(str(exc)) from exc


def from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Config:
    """Config from parsed flags over environment variables over defaults."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for dest, (var, typ, _) in _ENV.items():
        flag_value = getattr(args, dest, None)
        if flag_value is not None:
            values[dest] = flag_value
            continue
        try:
            raw = env_value(env, var)
            if raw:
                values[dest] = typ(raw)
        except RuntimeConfigError as exc:
            raise TierJobError(str(exc)) from exc
        except ValueError as exc:
            raise TierJobError(f"bad {var}={raw!r}: {exc}") from exc
    values["params"] = params_from_args(args, env)
    try:
        values["kafka"] = kafka_settings_from_args(args, env)
    except RuntimeConfigError as exc:
        raise TierJobError(str(exc)) from exc
    return Config(**values)  # type: ignore[arg-type]
