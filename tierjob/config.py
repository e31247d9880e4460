"""`tierjob.Config`: one typed object for `adr calibrate`, from flags, ADR_* environment and an
optional TOML file (runtime.settings: each setting field names its variable and help line)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
import uuid
from collections.abc import Mapping

from engine import Params
from runtime import KafkaSettings
from runtime.service import add_service_arguments, service_config
from runtime.settings import setting, settings_repr
from tierjob._errors import TierJobError

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
ONE_SHOT_LEASE_TTL_S = 60.0
"""A one-shot run (CronJob) keeps its lease this long: concurrent one-shot replicas publish once."""


@dataclasses.dataclass(frozen=True, slots=True)
class Config:
    """Everything `adr calibrate` needs; the algorithm's parameters are `params` (engine.Params)."""

    redis_url: str = setting(
        DEFAULT_REDIS_URL, env="REDIS_URL", help="Redis holding the rating state", secret=True
    )
    bootstrap_servers: str = setting(
        DEFAULT_BOOTSTRAP, env="KAFKA_BOOTSTRAP_SERVERS", help="Kafka bootstrap servers"
    )
    namespace: str = setting(
        "adr", env="ADR_NAMESPACE", help="Redis key namespace {ns}; the topic's message key"
    )
    topic: str = setting(
        "tier-boundaries",
        env="ADR_TIER_TOPIC",
        help="compacted topic for tier-boundaries v1 (created if missing)",
    )
    every: float | None = setting(
        None, env="ADR_CALIBRATE_EVERY", help="seconds between calibrations; unset: run once"
    )
    """Seconds between calibrations; None: calibrate once and exit (a Kubernetes CronJob)."""
    lease_ttl: float | None = setting(
        None,
        env="ADR_CALIBRATE_LEASE_TTL",
        help="seconds the lease outlives its last renewal; unset: 2 x --every, or 60 for one run",
    )
    """Seconds the lease lives without renewal; None: 2 × every, or 60 s for a one-shot run."""
    metrics_port: int | None = setting(
        9109, env="ADR_METRICS_PORT", help="Prometheus port with --every (0: none)"
    )
    """Prometheus port while `every` is set (0 or None: no server); one-shot runs serve none."""
    metrics_host: str = setting("0.0.0.0", env="ADR_METRICS_HOST", help="Prometheus bind address")
    read_chunk: int = setting(
        1000, env="ADR_CALIBRATE_READ_CHUNK", help="active players read per Lua call"
    )
    """Members of A whose μ one read-only Lua call reads: bounds how long one call blocks Redis
    (about 3 µs of Redis CPU per member measured, so about 3 ms a call; docs/benchmarks.md)."""
    kafka_timeout: float = setting(
        30.0, env="ADR_KAFKA_TIMEOUT", help="seconds to wait for the broker's ack"
    )
    """Seconds to wait for the broker to acknowledge the tier-boundaries message."""
    holder_id: str = setting(
        env="ADR_INSTANCE_ID",
        help="this replica's lease holder id",
        shown="hostname-pid-random",
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}",
    )
    params: Params = dataclasses.field(default_factory=Params)
    kafka: KafkaSettings = dataclasses.field(default_factory=KafkaSettings)
    """The operator's librdkafka settings (security, tuning); guarded keys cannot change."""

    def __repr__(self) -> str:
        """Every field, the Redis URL's password and secret Kafka settings masked."""
        return settings_repr(self)

    def __post_init__(self) -> None:
        if not self.namespace or "{" in self.namespace or "}" in self.namespace:
            raise TierJobError(f"bad namespace {self.namespace!r}")
        if self.every is not None and self.every <= 0:
            raise TierJobError(f"--every must be > 0 seconds, got {self.every}")
        if self.lease_ttl is not None and self.lease_ttl <= 0:
            raise TierJobError(f"--lease-ttl must be > 0 seconds, got {self.lease_ttl}")
        if self.read_chunk < 1 or self.kafka_timeout <= 0:
            raise TierJobError("--read-chunk must be >= 1 and --kafka-timeout > 0")

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


_EPILOG = (
    "exit status (one run): 0 published, or another replica holds the lease; 1 Redis error or "
    "the topic missed the message (Redis has the snapshot); 2 usage; 5 {ns}:layout is unknown "
    "to this release or 'rebuilding' (adr rebuild has not switched it yet): nothing read or "
    "published. With --every: runs until SIGTERM/SIGINT, then 0 (such runs are refused)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `adr calibrate`; each defaults to its environment variable, then Config's."""
    add_service_arguments(parser, Config, _EPILOG)


def from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Config:
    """Config from parsed flags over environment variables over the config file over defaults."""
    return service_config(
        Config, args, environ, TierJobError, section="calibrate", checked_params=True
    )
