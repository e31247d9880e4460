"""`adr simulate`: play game servers, publishing seeded kill events v1 to Kafka (key = arena).

`generate(SimConfig)` is pure: the same seed (and `start_ts`) yields the same messages, labelled
with their kind, so tests, benchmarks and `adr replay` files reuse it. `run` paces the messages
with a token bucket and produces them with an idempotent, compressing producer.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import random
import signal
import sys
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import IO, Any

import msgspec

from adr_cli import logs as _log
from schemas import DEFAULT_MAX_AGE_MS, MAX_ID_BYTES, MAX_MESSAGE_BYTES, KillEvent, kill_event

log = logging.getLogger("adr.simulate")

MALFORMED_KINDS: tuple[str, ...] = (
    "undecodable", "not_a_map", "missing_field", "wrong_type", "unknown_version",
    "bad_id", "self_kill", "ts_out_of_range", "too_large",
)  # fmt: skip
"""Each malformed kind is named after the `schemas.Reason` the decoder rejects it with."""
KINDS: tuple[str, ...] = ("kill", "duplicate", *MALFORMED_KINDS)
"""`kill`: counted by the cooldown rule in production order; `duplicate`: a repeat inside it."""

_REQUIRED = ("v", "id", "arena", "attacker", "victim", "ts")
REPLAY_FIELDS = ("id", "arena", "attacker", "victim", "ts")
_RECENT_KILLS = 64  # repeat kills re-play one of the last few counted kills
_OUT_OF_RANGE_MARGIN_MS = 86_400_000  # out-of-range events are a day older than the window
_TRUNCATE_BYTES = 3
_FLUSH_TIMEOUT_S = 30.0
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclasses.dataclass(frozen=True, slots=True)
class SimConfig:
    """The simulated world and load (`adr simulate` flags)."""

    arenas: int = 8
    players: int = 1000
    events: int = 0
    """Messages to send (valid and malformed); 0 = until stopped."""
    seed: int = 0
    duplicate_rate: float = 0.05
    malformed_rate: float = 0.0
    roaming: float = 0.1
    """Chance that a player also plays in a second arena."""
    skill_sd: float = 1.0
    """Hidden skills ~ Normal(0, skill_sd); P(i kills j) = 1 / (1 + exp(s_j − s_i))."""
    start_ts: int | None = None
    """Event time of the first message (ms); None = the wall clock at generation."""
    spacing_ms: float = 100.0
    """Event time between consecutive messages when `start_ts` is set."""
    cooldown_ms: int = 60_000
    """t_cooldown of the consumer, to place repeat kills inside it and label duplicates."""
    max_age_ms: int = DEFAULT_MAX_AGE_MS
    """The consumer's accepted event age, to place out-of-range events outside it."""

    def __post_init__(self) -> None:
        problems = [
            (self.arenas >= 1, "arenas >= 1"),
            (self.players >= 2, "players >= 2"),
            (self.events >= 0, "events >= 0"),
            (0 <= self.duplicate_rate <= 1 and 0 <= self.malformed_rate <= 1, "rates in [0, 1]"),
            (self.duplicate_rate + self.malformed_rate <= 1, "duplicate + malformed rate <= 1"),
            (0 <= self.roaming <= 1, "roaming in [0, 1]"),
            (self.skill_sd >= 0 and self.spacing_ms >= 0, "skill-sd, spacing >= 0"),
            (self.cooldown_ms >= 1, "cooldown >= 1 ms"),
        ]
        bad = [what for ok, what in problems if not ok]
        if bad:
            raise ValueError("bad simulation config: " + ", ".join(bad))


@dataclasses.dataclass(frozen=True, slots=True)
class World:
    """Players with hidden skills, and the roster of each arena."""

    skills: dict[str, float]
    rosters: dict[str, tuple[str, ...]]


@dataclasses.dataclass(frozen=True, slots=True)
class SimMessage:
    """One message as produced: its kind, event time, Kafka key and value, the event if valid."""

    kind: str
    ts: int
    key: bytes
    value: bytes
    event: KillEvent | None


def build_world(cfg: SimConfig, rng: random.Random) -> World:
    """Players p0… with hidden skills; each has a home arena, some roam into a second one."""
    players = [f"p{i}" for i in range(cfg.players)]
    skills = {p: rng.gauss(0.0, cfg.skill_sd) for p in players}
    arenas = [f"arena-{k}" for k in range(cfg.arenas)]
    members: dict[str, list[str]] = {a: [] for a in arenas}
    order = players[:]
    rng.shuffle(order)
    for i, p in enumerate(order):
        home = arenas[i % cfg.arenas]
        members[home].append(p)
        if cfg.arenas > 1 and rng.random() < cfg.roaming:
            members[rng.choice([a for a in arenas if a != home])].append(p)
    for roster in members.values():
        while len(roster) < 2:  # more arenas than players/2: borrow players
            roster.append(rng.choice([p for p in players if p not in roster]))
    return World(skills=skills, rosters={a: tuple(r) for a, r in members.items()})


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def generate(cfg: SimConfig, clock: Callable[[], int] = _wall_ms) -> Iterator[SimMessage]:
    """The message stream of `cfg` (endless if cfg.events == 0); pure when cfg.start_ts is set."""
    rng = random.Random(cfg.seed)
    world = build_world(cfg, rng)
    arenas = list(world.rosters)
    last_counted: OrderedDict[tuple[str, str], int] = OrderedDict()
    recent: deque[tuple[str, str, str]] = deque(maxlen=_RECENT_KILLS)
    malformed_seen = 0
    i = 0
    while cfg.events == 0 or i < cfg.events:
        ts = clock() if cfg.start_ts is None else cfg.start_ts + math.floor(i * cfg.spacing_ms)
        event_id = f"sim{cfg.seed}-{i}"
        u = rng.random()
        if u < cfg.malformed_rate:
            arena, attacker, victim = _fight(world, arenas, rng)
            good = kill_event(id=event_id, arena=arena, attacker=attacker, victim=victim, ts=ts)
            kind = MALFORMED_KINDS[malformed_seen % len(MALFORMED_KINDS)]
            nth = malformed_seen // len(MALFORMED_KINDS)
            value = _malformed(kind, nth, msgspec.to_builtins(good), cfg)
            malformed_seen += 1
            yield SimMessage(kind, ts, arena.encode(), value, None)
        else:
            if u < cfg.malformed_rate + cfg.duplicate_rate and recent:
                arena, attacker, victim = rng.choice(recent)
                t_prev = last_counted.get((attacker, victim))
                if t_prev is not None and ts - t_prev >= cfg.cooldown_ms:
                    ts = t_prev + cfg.cooldown_ms // 2  # a late repeat, still inside
            else:
                arena, attacker, victim = _fight(world, arenas, rng)
            pair = (attacker, victim)
            t_prev = last_counted.get(pair)
            if t_prev is not None and abs(ts - t_prev) < cfg.cooldown_ms:
                kind = "duplicate"
            else:
                kind = "kill"
                last_counted[pair] = ts
                last_counted.move_to_end(pair)
                recent.append((arena, attacker, victim))
                _forget_before(last_counted, ts - 2 * cfg.cooldown_ms)
            event = kill_event(id=event_id, arena=arena, attacker=attacker, victim=victim, ts=ts)
            yield SimMessage(kind, ts, arena.encode(), _ENCODER.encode(event), event)
        i += 1


_ENCODER = msgspec.msgpack.Encoder()


def _fight(world: World, arenas: list[str], rng: random.Random) -> tuple[str, str, str]:
    """An arena and two of its players; the more skilled one wins more often (logistic)."""
    arena = rng.choice(arenas)
    i, j = rng.sample(world.rosters[arena], 2)
    p_i_wins = 1.0 / (1.0 + math.exp(world.skills[j] - world.skills[i]))
    return (arena, i, j) if rng.random() < p_i_wins else (arena, j, i)


def _forget_before(last_counted: OrderedDict[tuple[str, str], int], horizon: int) -> None:
    """Drop pairs counted before `horizon`: counted times only grow, so they are at the front."""
    while last_counted:
        pair, t = next(iter(last_counted.items()))
        if t >= horizon:
            return
        del last_counted[pair]


def _malformed(kind: str, nth: int, good: dict[str, Any], cfg: SimConfig) -> bytes:
    """A kill event broken in exactly one way, so the decoder rejects it with reason `kind`."""
    bad = dict(good)
    if kind == "undecodable":
        return msgspec.msgpack.encode(good)[:-_TRUNCATE_BYTES]
    if kind == "not_a_map":
        return msgspec.msgpack.encode(list(good.values()))
    if kind == "missing_field":
        del bad[_REQUIRED[nth % len(_REQUIRED)]]
    elif kind == "wrong_type":
        bad["ts"] = str(good["ts"])
    elif kind == "unknown_version":
        bad["v"] = 2
    elif kind == "bad_id":
        bad["attacker"] = "x" * (MAX_ID_BYTES + 1)
    elif kind == "self_kill":
        bad["victim"] = bad["attacker"]
    elif kind == "ts_out_of_range":
        bad["ts"] = good["ts"] - cfg.max_age_ms - _OUT_OF_RANGE_MARGIN_MS
    elif kind == "too_large":
        bad["extra"] = {"pad": "x" * MAX_MESSAGE_BYTES}
    else:
        raise ValueError(f"unknown malformed kind {kind!r}")
    return msgspec.msgpack.encode(bad)


def replay_line(event: KillEvent) -> str:
    """One line of the `adr replay` input: {"id","arena","attacker","victim","ts"}."""
    fields = {name: getattr(event, name) for name in REPLAY_FIELDS}
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


# --- the imperative shell -------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `adr simulate`."""
    d = SimConfig()
    add = parser.add_argument
    add("--bootstrap-servers", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS"),
        help="Kafka bootstrap servers (env KAFKA_BOOTSTRAP_SERVERS)")  # fmt: skip
    add("--topic", default=os.environ.get("ADR_TOPIC", "kill-events"))
    add("--arenas", type=int, default=d.arenas)
    add("--players", type=int, default=d.players)
    add("--rate", type=float, default=1000.0, help="messages per second; 0 = as fast as possible")
    add("--events", "--max-messages", dest="events", type=int, default=d.events,
        help="messages to send, valid and malformed; 0 = until stopped")  # fmt: skip
    add("--seed", type=int, default=d.seed)
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
    add("--compression", default="lz4", choices=["lz4", "zstd", "snappy", "gzip", "none"])
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


def _producer(bootstrap: str, topic: str, partitions: int, compression: str) -> Any:
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    kafka_log = logging.getLogger("adr.simulate.kafka")  # librdkafka's logs as JSON lines too
    admin_conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": kafka_log}
    admin = AdminClient(admin_conf)
    if topic not in admin.list_topics(timeout=10).topics:
        futures = admin.create_topics([NewTopic(topic, num_partitions=partitions)])
        try:
            futures[topic].result(timeout=30)
            log.info("created topic", extra={"topic": topic, "partitions": partitions})
        except KafkaException as exc:  # created meanwhile by someone else: fine
            log.info("topic not created", extra={"topic": topic, "error": str(exc)})
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "client.id": "adr-simulate",
        "logger": kafka_log,
        "enable.idempotence": True,
        "acks": "all",
        "compression.type": compression,
        "linger.ms": 5,
        "batch.size": 1_000_000,
        # Java's partitioner: an arena lands on the partition a Java game server would pick.
        "partitioner": "murmur2_random",
    }
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
    except ValueError as exc:
        log.error("bad configuration", extra={"error": str(exc)})
        return EXIT_USAGE
    use_kafka = not args.no_kafka
    if use_kafka and not args.bootstrap_servers:
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
                args.bootstrap_servers, args.topic, args.partitions, args.compression
            )
        except KafkaException as exc:
            log.error("cannot reach Kafka", extra={"error": str(exc)})
            return EXIT_FAILED
    try:
        out = open(args.out, "w", encoding="utf-8") if args.out else None  # noqa: SIM115
    except OSError as exc:
        log.error("cannot write --out", extra={"error": str(exc)})
        return EXIT_USAGE
    target = {"topic": args.topic if use_kafka else None, "out": args.out, "rate": args.rate}
    log.info("simulating", extra={**target, **dataclasses.asdict(cfg)})
    summary = _pump(cfg, args, producer, out)
    sys.stdout.write(json.dumps(summary) + "\n")
    sys.stdout.flush()
    return EXIT_OK if summary["failed"] == 0 else EXIT_FAILED


def _pump(
    cfg: SimConfig, args: argparse.Namespace, producer: Any, out: IO[str] | None
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
                _produce(producer, args.topic, msg, _on_delivery)
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
        "topic": args.topic if producer is not None else None,
        "out": args.out,
        "seed": cfg.seed,
        "elapsed_s": round(elapsed, 3),
        "rate_eps": round(sent / elapsed, 1) if elapsed > 0 else None,
    }


def _produce(producer: Any, topic: str, msg: SimMessage, on_delivery: Any) -> None:
    """Hand one message to librdkafka, waiting for room when its queue is full."""
    while True:
        try:
            producer.produce(topic, key=msg.key, value=msg.value, on_delivery=on_delivery)
            break
        except BufferError:
            producer.poll(0.05)
    producer.poll(0)
