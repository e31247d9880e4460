"""`adr simulate`: play game servers, publishing seeded kill events v1 to Kafka (key = arena).

The messages come from loadgen/_traffic.py (`generate(SimConfig)`, pure and seeded); `run`
paces them with a token bucket and produces them with an idempotent, compressing producer.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import signal
import sys
import time
from typing import IO, Any

from loadgen._traffic import KINDS, SimConfig, SimMessage, generate, replay_line
from runtime import (
    KafkaSettings,
    RuntimeConfigError,
    add_kafka_arguments,
    kafka_settings_from_args,
    redact_text,
)
from runtime import logs as _log
from runtime.kafka_produce import produce_waiting
from runtime.settings import add_settings_arguments, setting, settings_from_args

__all__ = [
    "add_arguments",
    "config_from_args",
    "run",
]

log = logging.getLogger("adr.simulate")
_KAFKA_LOG = _log.kafka_logger("adr.simulate.kafka")

_FLUSH_TIMEOUT_S = 30.0
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


# --- the imperative shell -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Target:
    """Where `adr simulate` publishes; what it publishes is SimConfig."""

    bootstrap_servers: str | None = setting(
        None, env="KAFKA_BOOTSTRAP_SERVERS", help="Kafka bootstrap servers"
    )
    topic: str = setting("kill-events", env="ADR_TOPIC", help="topic to publish to")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `adr simulate`."""
    d = SimConfig()
    add = parser.add_argument
    add_settings_arguments(parser, _Target, config_file=False)
    add_kafka_arguments(parser)
    parser.epilog = (
        "exit status: 0 every message delivered (or written); 1 a delivery failed or Kafka "
        "cannot be reached; 2 usage. A JSON summary goes to stdout."
    )
    add("--arenas", type=int, default=d.arenas, help=f"simulated arenas (default {d.arenas})")
    add("--players", type=int, default=d.players, help=f"simulated players (default {d.players})")
    add("--rate", type=float, default=1000.0, help="messages per second; 0 = as fast as possible")
    add("--events", "--max-messages", dest="events", type=int, default=d.events,
        help="messages to send, valid and malformed; 0 = until stopped")  # fmt: skip
    add("--seed", type=int, default=d.seed, help="seed: the same seed, the same stream")
    add("--duplicate-rate", type=float, default=d.duplicate_rate,
        help="fraction of repeat kills inside the cooldown")  # fmt: skip
    add("--malformed-rate", type=float, default=d.malformed_rate,
        help="fraction of malformed messages, cycling through every kind")  # fmt: skip
    add("--roaming", type=float, default=d.roaming, help="chance a player joins a second arena")
    add("--skill-sd", type=float, default=d.skill_sd, help="spread of the hidden skills")
    add("--start-ts", type=int, default=None,
        help="event time of the first message, ms; default: wall clock")  # fmt: skip
    add("--spacing-ms", type=float, default=d.spacing_ms,
        help="event time between messages when --start-ts is set")  # fmt: skip
    add("--cooldown-s", type=float, default=d.cooldown_ms / 1000, help="the consumer's t_cooldown")
    add("--max-age-s", type=float, default=d.max_age_ms / 1000,
        help="the consumer's accepted event age (out-of-range events fall outside it)")  # fmt: skip
    add("--out", default=None, help="also write valid events as JSON lines (adr replay input)")
    add("--no-kafka", action="store_true", help="do not produce to Kafka (use with --out)")
    add("--partitions", type=int, default=8, help="partitions if the topic must be created")
    add("--compression", default="lz4", choices=["lz4", "zstd", "snappy", "gzip", "none"],
        help="producer compression (default lz4)")  # fmt: skip
    add("--progress-every", type=float, default=5.0, help="seconds between progress lines")


def config_from_args(args: argparse.Namespace) -> SimConfig:
    """The SimConfig the flags describe (ValueError if inconsistent)."""
    same = {f.name for f in dataclasses.fields(SimConfig)} - {"cooldown_ms", "max_age_ms"}
    return SimConfig(
        **{name: getattr(args, name) for name in same},
        cooldown_ms=round(args.cooldown_s * 1000),
        max_age_ms=round(args.max_age_s * 1000),
    )


class _TokenBucket:
    """Paces to `rate` per second, bursting at most a tenth of a second; rate 0 never waits.

    Keeps a schedule rather than sleeping a fixed step, so oversleeping (a busy box) is made
    up by the following messages and the long-run rate stays `rate`. Sleeps only once a message
    is `min_sleep_s` early: one sleep per message would cost more CPU than making the message.
    """

    def __init__(self, rate: float, min_sleep_s: float = 0.002) -> None:
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.burst = max(1.0, rate / 10) * self.interval
        self.min_sleep = min_sleep_s
        self.due = time.monotonic()

    def take(self) -> None:
        if not self.interval:
            return
        now = time.monotonic()
        self.due = max(self.due + self.interval, now - self.burst)
        if self.due - now >= self.min_sleep:
            time.sleep(self.due - now)


def _producer(
    bootstrap: str, topic: str, partitions: int, compression: str, kafka: KafkaSettings
) -> Any:
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin_conf = {**kafka.apply({}, {"bootstrap.servers": bootstrap}), "logger": _KAFKA_LOG}
    admin = AdminClient(admin_conf)
    if topic not in admin.list_topics(timeout=10).topics:
        futures = admin.create_topics([NewTopic(topic, num_partitions=partitions)])
        try:
            futures[topic].result(timeout=30)
            log.info("created topic", extra={"topic": topic, "partitions": partitions})
        except KafkaException as exc:  # created meanwhile by someone else: fine
            log.info("topic not created", extra={"topic": topic, "error": str(exc)})
    ours: dict[str, Any] = {
        "client.id": "adr-simulate",
        "compression.type": compression,
        "linger.ms": 5,
        "batch.size": 1_000_000,
    }
    guarded: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        # Java's partitioner: an arena lands on the partition a Java game server would pick.
        "partitioner": "murmur2_random",
    }
    conf = {**kafka.apply(ours, guarded), "logger": _KAFKA_LOG}
    try:
        return Producer(conf)
    except KafkaException as exc:  # a librdkafka built without this codec
        if compression == "none":
            raise
        log.warning("compression unavailable", extra={"codec": compression, "error": str(exc)})
        return Producer({**conf, "compression.type": "none"})


def run(args: argparse.Namespace) -> int:
    """Produce (and/or write) the simulated stream; print a JSON summary on stdout."""
    _log.setup()
    try:
        cfg = config_from_args(args)
        kafka = kafka_settings_from_args(args)
        where = _Target(**settings_from_args(_Target, args))
    except ValueError as exc:  # RuntimeConfigError is a ValueError
        log.error("bad configuration", extra={"error": str(exc)})
        return EXIT_USAGE
    use_kafka = not args.no_kafka
    if use_kafka and not where.bootstrap_servers:
        log.error("no --bootstrap-servers (or KAFKA_BOOTSTRAP_SERVERS); use --no-kafka --out F")
        return EXIT_USAGE
    if not use_kafka and not args.out:
        log.error("--no-kafka needs --out FILE")
        return EXIT_USAGE
    producer = None
    if use_kafka:
        from confluent_kafka import KafkaException

        try:
            producer = _producer(
                where.bootstrap_servers or "", where.topic, args.partitions, args.compression, kafka
            )
        except RuntimeConfigError as exc:
            log.error("bad Kafka configuration", extra={"error": str(exc)})
            return EXIT_USAGE
        except KafkaException as exc:
            log.error("cannot reach Kafka", extra={"error": redact_text(str(exc))})
            return EXIT_FAILED
    try:
        out = open(args.out, "w", encoding="utf-8") if args.out else None  # noqa: SIM115
    except OSError as exc:
        log.error("cannot write --out", extra={"error": str(exc)})
        return EXIT_USAGE
    target = {"topic": where.topic if use_kafka else None, "out": args.out, "rate": args.rate}
    log.info("simulating", extra={**target, **dataclasses.asdict(cfg)})
    summary = _pump(cfg, args, where.topic, producer, out)
    sys.stdout.write(json.dumps(summary) + "\n")
    sys.stdout.flush()
    return EXIT_OK if summary["failed"] == 0 else EXIT_FAILED


def _pump(
    cfg: SimConfig, args: argparse.Namespace, topic: str, producer: Any, out: IO[str] | None
) -> dict[str, Any]:
    """Send the stream until done or SIGINT/SIGTERM; flush; return the summary."""
    stop: list[bool] = [False]

    def _stop(signum: int, _frame: object) -> None:
        stop[0] = True

    counts = dict.fromkeys(KINDS, 0)
    delivery = {"delivered": 0, "failed": 0}

    def _on_delivery(err: Any, _msg: Any) -> None:
        if err is None:
            delivery["delivered"] += 1
            return
        delivery["failed"] += 1
        if delivery["failed"] <= 5:
            log.error("delivery failed", extra={"error": str(err)})

    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    bucket = _TokenBucket(args.rate)
    started = time.monotonic()
    next_progress = started + args.progress_every
    sent = 0
    try:
        for msg in generate(cfg):
            if stop[0]:
                break
            bucket.take()
            if producer is not None:
                _produce(producer, topic, msg, _on_delivery)
            if out is not None and msg.event is not None:
                out.write(replay_line(msg.event) + "\n")
            counts[msg.kind] += 1
            sent += 1
            if time.monotonic() >= next_progress:
                next_progress += args.progress_every
                rate = round(sent / (time.monotonic() - started), 1)
                log.info("progress", extra={"sent": sent, **delivery, "rate_eps": rate})
    finally:
        if out is not None:
            out.close()
        undelivered = producer.flush(_FLUSH_TIMEOUT_S) if producer is not None else 0
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    elapsed = time.monotonic() - started
    return {
        "sent": sent,
        "delivered": delivery["delivered"] if producer is not None else None,
        "failed": delivery["failed"] + undelivered,
        "by_kind": counts,
        "topic": topic if producer is not None else None,
        "out": args.out,
        "seed": cfg.seed,
        "elapsed_s": round(elapsed, 3),
        "rate_eps": round(sent / elapsed, 1) if elapsed > 0 else None,
    }


def _produce(producer: Any, topic: str, msg: SimMessage, on_delivery: Any) -> None:
    """Hand one message to librdkafka, waiting for room when its queue is full."""
    produce_waiting(producer, topic, msg.value, msg.key, on_delivery=on_delivery)
    producer.poll(0)
