"""`adr calibrate`: take the population snapshot from Redis and publish it, once or every N s.

Once (a Kubernetes CronJob): prints a JSON summary of the run on stdout; exit 0 when it published
or another replica holds the lease, 1 on an error (Redis, or the topic missed the message), 2 on
bad usage, 5 when `{ns}:layout` is a layout this release does not know or `rebuilding` (the
readers' status, docs/leaderboards.md: nothing read or published). With `--every S`: calibrates
every S seconds on the wall clock, serves Prometheus metrics on `--metrics-port`, survives errors
(logged, counted; an unknown layout as `adr_errors_swallowed_total{where="layout"}`, so a run
after a rebuild's switch publishes), stops on SIGTERM / SIGINT.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from types import FrameType

import redis
from confluent_kafka import KafkaException

from redis_layout.layout import UnknownLayout
from runtime import ProbeServerError, RuntimeConfigError, connect, redact_text
from runtime import logs as _log
from tierjob._calibration import CalibrationResult, Calibrator
from tierjob._errors import TierJobError
from tierjob._metrics import Metrics
from tierjob._publish import TopicPublisher
from tierjob.config import Config, add_arguments, from_args

__all__ = ["add_arguments", "run"]  # what adr_cli.main calls

_MIN_STALL_S = 120.0
log = logging.getLogger("adr.calibrate")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_LAYOUT = 5
"""docs/leaderboards.md's "unknown layout": the readers' status for the same check."""


def run(args: argparse.Namespace) -> int:
    _log.setup()
    try:
        config = from_args(args)
    except TierJobError as exc:
        print(f"adr calibrate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        topic = TopicPublisher(
            config.bootstrap_servers, config.topic, config.kafka_timeout, config.kafka
        )
    except (KafkaException, RuntimeConfigError) as exc:  # librdkafka refused a setting
        print(f"adr calibrate: bad Kafka configuration: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    client = connect(config.redis_url, config.namespace)
    calibrator = Calibrator(client, config, topic)
    try:
        if config.every is None:
            return _once(calibrator, topic)
        return _forever(calibrator, topic, config)
    finally:
        topic.close()
        client.close()


def _ensure_topic(topic: TopicPublisher) -> bool:
    """Create the topic if missing; a broker outage must not stop the Redis publication."""
    try:
        topic.ensure_topic()
    except TierJobError as exc:
        log.error("cannot create the tier-boundaries topic", extra={"error": str(exc)})
        return False
    return True


def _once(calibrator: Calibrator, topic: TopicPublisher) -> int:
    _ensure_topic(topic)
    try:
        result = calibrator.run_once()
    except UnknownLayout as exc:
        log.error("calibration refused: unknown layout", extra={"error": str(exc)})
        return EXIT_LAYOUT
    except (TierJobError, redis.RedisError) as exc:
        log.error("calibration failed", extra={"error": str(exc)})
        return EXIT_FAILED
    _log_result(result)
    print(json.dumps(result.summary()), flush=True)
    return EXIT_FAILED if result.topic_error is not None else EXIT_OK


def _forever(calibrator: Calibrator, topic: TopicPublisher, config: Config) -> int:
    assert config.every is not None
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("stopping", extra={"signal": signum})
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    metrics = Metrics()
    if config.metrics_port:
        # A run may take a while on a large population; three intervals without one is a stall.
        try:
            metrics.serve(
                config.metrics_port, config.metrics_host, max(3 * config.every, _MIN_STALL_S)
            )
        except ProbeServerError as exc:
            print(f"adr calibrate: {exc}", file=sys.stderr)
            return EXIT_USAGE
    log.info(
        "calibrating",
        extra={
            "every_s": config.every,
            "namespace": config.namespace,
            "holder": config.holder_id,
            "lease_ttl_ms": config.lease_ttl_ms,
        },
    )
    topic_ready = False
    next_at = time.monotonic()
    while not stop.is_set():
        if not topic_ready:
            topic_ready = _ensure_topic(topic)
            if not topic_ready:
                metrics.errors.labels("topic_setup").inc()
        try:
            result = calibrator.run_once()
        except UnknownLayout as exc:  # e.g. a rebuild not switched yet: refused until it is
            metrics.failed("layout")
            metrics.tick(ok=False)
            log.error("calibration refused: unknown layout", extra={"error": str(exc)})
        except (TierJobError, redis.RedisError) as exc:
            metrics.failed("calibrate")
            metrics.tick(ok=False)
            log.error("calibration failed", extra={"error": str(exc)})
        else:
            metrics.observe(result)
            metrics.tick(ok=topic_ready and result.topic_error is None)
            _log_result(result)
        # Fixed rate on the monotonic clock; a run longer than the interval skips the missed ticks.
        next_at += config.every
        now = time.monotonic()
        if next_at < now:
            next_at = now + config.every
        stop.wait(next_at - now)
    return EXIT_OK


def _log_result(result: CalibrationResult) -> None:
    summary = result.summary()
    if result.outcome == "published":
        level = logging.WARNING if result.topic_error else logging.INFO
        log.log(level, "published", extra=summary)
    else:
        log.info(result.outcome.replace("_", " "), extra=summary)
