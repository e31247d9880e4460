"""`adr history`: run the rating-history reader (serve/history.py) until SIGTERM or SIGINT.

Exit status: 0 stopped by a signal, 2 a setting that cannot be used, 3 Redis or Kafka failed at
start.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
import time
from collections.abc import Mapping

import redis
from prometheus_client import CollectorRegistry

from runtime import (
    KafkaSettings,
    ProbeServerError,
    RuntimeConfigError,
    add_kafka_arguments,
    connect,
    kafka_settings_from_args,
    redact_text,
)
from runtime.http import serve_probes
from runtime.service import SECTIONS
from runtime.settings import add_settings_arguments, setting, settings_from_args, settings_repr
from serve.history import HistoryMetrics, HistoryReader, HistoryStore

EXIT_OK, EXIT_USAGE, EXIT_UNAVAILABLE = 0, 2, 3
_log = logging.getLogger("adr.history")


@dataclasses.dataclass(frozen=True, slots=True)
class HistoryConfig:
    """Everything `adr history` needs."""

    redis_url: str = setting(
        "redis://127.0.0.1:6379/0",
        env="REDIS_URL",
        help="Redis of the rating pool (a user that may write {ns}:history:*)",
        secret=True,
    )
    bootstrap_servers: str = setting(
        "127.0.0.1:9092", env="KAFKA_BOOTSTRAP_SERVERS", help="Kafka bootstrap servers"
    )
    namespace: str = setting("adr", env="ADR_NAMESPACE", help="the rating pool")
    topic: str = setting("rating-changes", env="ADR_RATING_TOPIC", help="the rating-changes topic")
    group: str = setting("adr-history", env="ADR_HISTORY_GROUP", help="Kafka consumer group")
    points: int = setting(50, env="ADR_HISTORY_POINTS", help="changes kept per player (newest)")
    batch: int = setting(500, env="ADR_HISTORY_BATCH", help="messages per read and write")
    ttl: float = setting(
        30 * 86_400.0,
        env="ADR_HISTORY_TTL",
        help="seconds a player's list lives after its last change (0: for ever)",
    )
    metrics_port: int = setting(
        9110, env="ADR_METRICS_PORT", help="port of /metrics, /healthz, /readyz (0: none)"
    )
    metrics_host: str = setting("0.0.0.0", env="ADR_METRICS_HOST", help="its bind address")
    kafka: KafkaSettings = dataclasses.field(default_factory=KafkaSettings)

    def __repr__(self) -> str:
        return settings_repr(self)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "exit status: 0 stopped, 2 bad settings, 3 Redis or Kafka failed at start"
    add_settings_arguments(parser, HistoryConfig)
    add_kafka_arguments(parser)


def config_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> HistoryConfig:
    """Flags over the environment over the config file's `[history]` table and top level over
    the defaults; RuntimeConfigError with the reason if something cannot be read."""
    return HistoryConfig(
        **settings_from_args(HistoryConfig, args, environ, section="history", sections=SECTIONS),
        kafka=kafka_settings_from_args(args, environ),
    )


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer, KafkaException

    try:
        config = config_from_args(args)
        if config.points < 1 or config.batch < 1:
            raise RuntimeConfigError("--points and --batch must be >= 1")
        if not config.ttl >= 0:
            raise RuntimeConfigError("--ttl must be >= 0")
        client = connect(config.redis_url, config.namespace)
        consumer = Consumer(
            config.kafka.apply(
                {"auto.offset.reset": "earliest"},
                {
                    "bootstrap.servers": config.bootstrap_servers,
                    "group.id": config.group,
                    "enable.auto.commit": False,
                },
            )
        )
    except (RuntimeConfigError, KafkaException) as exc:
        print(f"adr history: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    try:
        client.ping()
    except redis.RedisError as exc:
        print(f"adr history: Redis: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    registry = CollectorRegistry()
    store = HistoryStore(client, config.namespace, config.points, config.ttl)
    reader = HistoryReader(consumer, store, HistoryMetrics(registry), batch=config.batch)
    if config.metrics_port:
        try:
            serve_probes(
                registry, config.metrics_host, config.metrics_port,
                healthy=lambda: time.monotonic() - reader.last_batch_at < 60,
                ready=lambda: (True, f"topic {config.topic}"),
            )  # fmt: skip
        except ProbeServerError as exc:
            print(f"adr history: {exc}", file=sys.stderr)
            return EXIT_USAGE
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: reader.stopping.set())
    consumer.subscribe([config.topic])
    _log.info("reading", extra={"config": repr(config), "pid": os.getpid()})
    try:
        reader.run()
    finally:
        consumer.close()
        client.close()
    return EXIT_OK
