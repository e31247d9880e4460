"""`adr rebuild`: a pool's state from the kill-events log into a fresh namespace, computed in
memory by the engine (RatingBook, the counting rules of `adr replay` and the consumer), written in
bulk with the consumer's keys, ending with the offsets from which `adr consume` continues.

Read (adr_cli/_rebuild_log.py) → count and rate (redis_layout.event_ids.CountingRules on the
engine's book) → write (adr_cli/_rebuild_pool.py, behind the `{ns}:layout` marker) → commit the
group's offsets → switch (the layout version, the last write). stdout stays empty; logs and
progress are JSON lines on stderr (docs/operations.md, "Rebuilding by replay").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Final

import redis
from confluent_kafka import Consumer, KafkaException, TopicPartition

from adr_cli import _rebuild_log, _rebuild_pool
from adr_cli.replay import _read_seasons, _read_snapshot, _seconds_to_ms
from engine import (
    NO_SEASONS,
    AdrModel,
    EngineError,
    ParamError,
    Params,
    RatingBook,
    initial_snapshot,
)
from redis_layout import Keys
from redis_layout.event_ids import (
    COOLDOWN_DUPLICATE,
    COUNTED_EVENT,
    ID_REUSED,
    RESENT,
    CountingRules,
)
from redis_layout.player_codec import player_values
from runtime import RedisUrlError, compiled
from runtime import connect as connect_redis
from runtime.logs import kafka_logger
from runtime.params import add_param_argument, param_overrides
from runtime.settings import key_values
from schemas import Limits

EXIT_OK: Final = 0
EXIT_IO: Final = 1
EXIT_USAGE: Final = 2
EXIT_IN_USE: Final = 3
KAFKA_LOG: Final = kafka_logger("adr.rebuild.kafka")
_MOVES_WATERMARK: Final = frozenset({COUNTED_EVENT, COOLDOWN_DUPLICATE, RESENT})
"""What the consumer does with an event that moves its partition's watermark (consumer/_batch)."""
_UNLIMITED_AGE_MS: Final = 2**62


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "Order: each partition in offset order (the consumer's), the partitions merged by\n"
        "event time (next: the head with the smallest ts, ties to the lower partition). With\n"
        "one partition that is the consumer's order and the pool equals a consumer's bit for\n"
        "bit; with several, the consumer's interleaving is not deterministic and the rebuild\n"
        "equals `adr replay` of the events in the merged order. Lateness is checked per\n"
        "partition, as the consumer does; an event the engine's one watermark finds late but\n"
        "its partition does not is counted as 'late_across_partitions' (where a consumer\n"
        "would have rated it).\n\n"
        "Visibility: {ns}:layout is 'rebuilding' from the first write to the last, which sets\n"
        "it to the layout version: readers and consumers refuse the namespace until then. A\n"
        "rerun after a crash removes the unfinished rebuild's keys and starts clean.\n\n"
        "Dead letters: messages the consumer's decoder rejects, and ids reused for another\n"
        "kill, are counted by reason (the consumer's) in the summary; the rebuild writes no\n"
        "dead letters and no rating changes (the live consumer sent them).\n\n"
        "Exit codes: 0 done (the pool is visible), 1 Kafka or Redis error (the namespace\n"
        "stays invisible; rerun), 2 usage error (bad --param, --snapshot file, value),\n"
        "3 the namespace holds keys that are not an unfinished rebuild's."
    )
    parser.add_argument(
        "--bootstrap-servers",
        required=True,
        metavar="HOSTS",
        help="Kafka bootstrap servers (host:port,...)",
    )
    parser.add_argument("--topic", default="kill-events", help="the kill-events topic to read")
    parser.add_argument(
        "--redis-url",
        required=True,
        metavar="URL",
        help="the Redis of the pool (redis://, rediss://, sentinel, cluster)",
    )
    parser.add_argument(
        "--namespace",
        required=True,
        metavar="NS",
        help="the fresh namespace to build ({NS}:* must hold no key)",
    )
    parser.add_argument(
        "--group",
        required=True,
        help="the consumer group that continues: its offsets on --topic are committed at the end",
    )
    add_param_argument(parser, env=False)
    parser.add_argument(
        "--seasons",
        type=Path,
        metavar="FILE",
        help="the pool's season schedule (what `adr season schedule` prints): each season's "
        "soft reset applied as the consumer applies it, the board the last season's, the "
        "schedule written to the namespace for the consumers that continue",
    )
    parser.add_argument(
        "--snapshot",
        type=Path,
        metavar="FILE",
        help="rate with this fixed snapshot (population.json-like: mean_mu_active, "
        "boundaries) and publish it, as a consumer with it published would; "
        "default: snapshots every --calibrate-every of event time, the last one "
        "published",
    )
    parser.add_argument(
        "--calibrate-every",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="snapshot interval in event-time seconds (default 300)",
    )
    parser.add_argument(
        "--lateness-ms",
        type=int,
        default=3_600_000,
        metavar="MS",
        help="event-time lateness per partition, the consumer's (default 3600000)",
    )
    parser.add_argument(
        "--max-age-ms",
        type=int,
        default=None,
        metavar="MS",
        help="reject events older than now minus this as ts_out_of_range, as a "
        "consumer with the same flag would (default: no limit, the whole log)",
    )
    parser.add_argument(
        "--max-future-ms",
        type=int,
        default=Limits().max_future_ms,
        metavar="MS",
        help="reject events further ahead of now (default the consumer's)",
    )
    parser.add_argument(
        "--kafka-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a librdkafka setting of the reader (repeatable; e.g. security)",
    )
    parser.add_argument(
        "--commands-per-round",
        type=int,
        default=_rebuild_pool.COMMANDS_PER_ROUND,
        metavar="N",
        help=f"Redis commands sent per round trip (default {_rebuild_pool.COMMANDS_PER_ROUND})",
    )
    parser.add_argument(
        "--progress-every",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="seconds between progress lines on stderr (0: none)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        params = Params.from_overrides(param_overrides(args.param, profile=args.profile))
        fixed = _read_snapshot(args.snapshot) if args.snapshot is not None else None
        seasons = _read_seasons(args.seasons) if args.seasons is not None else NO_SEASONS
        every_ms = _seconds_to_ms(args.calibrate_every, "--calibrate-every")
        if args.commands_per_round < 1:
            raise ParamError("--commands-per-round must be >= 1")
        if args.lateness_ms < 0:
            raise ParamError("--lateness-ms must be >= 0")
        limits = Limits(
            max_age_ms=_UNLIMITED_AGE_MS if args.max_age_ms is None else args.max_age_ms,
            max_future_ms=args.max_future_ms,
        )
        extra = key_values(
            args.kafka_setting,
            lambda item: ParamError(f"--kafka-setting expects NAME=VALUE, got {item!r}"),
        )
    except (ParamError, EngineError, ValueError) as exc:
        _log("error", "usage", message=str(exc))
        return EXIT_USAGE
    book = RatingBook(
        params, calibrate_every_ms=every_ms, fixed_snapshot=fixed, lateness_ms=args.lateness_ms,
        seasons=seasons,
    )  # fmt: skip
    encoding = _rebuild_pool.Encoding(
        model=AdrModel(params),
        values=player_values,
        ver=lambda _player, state: state.n,
        newest=lambda state: state.recent[-1] if state.recent else None,
    )  # ADR: ver (the player's rating changes) is its n, the counted kills it took part in
    keys = Keys(args.namespace)
    try:
        client = connect_redis(args.redis_url, args.namespace)
        conf = _rebuild_log.settings(args.bootstrap_servers, args.group, extra)
        conf["logger"] = KAFKA_LOG  # librdkafka's own lines as JSON log lines
        consumer = Consumer(conf)
    except (redis.RedisError, KafkaException, RedisUrlError, ValueError) as exc:
        _log("error", "connect_failed", message=str(exc))
        return EXIT_IO
    try:
        return _rebuild(args, client, consumer, keys, book, encoding, limits, params)
    except _rebuild_pool.NamespaceInUse as exc:
        _log("error", "namespace_in_use", namespace=args.namespace, message=str(exc))
        return EXIT_IN_USE
    except (redis.RedisError, KafkaException) as exc:
        _log("error", "failed", message=str(exc))
        return EXIT_IO
    finally:
        consumer.close()


def _rebuild(
    args: argparse.Namespace,
    client: redis.Redis,
    consumer: Consumer,
    keys: Keys,
    book: RatingBook,
    encoding: _rebuild_pool.Encoding[Any],
    limits: Limits,
    params: Params,
) -> int:
    started = time.monotonic()
    _log("info", "started", namespace=args.namespace, topic=args.topic, build=compiled.state())
    _rebuild_pool.claim(client, keys, _log)
    progress = _Progress(args.progress_every, started)
    read = _rebuild_log.LogRead()
    rules = CountingRules(book)
    apply = rules.apply
    lateness = args.lateness_ms
    watermarks: dict[int, int] = {}
    verdicts: dict[str, int] = {}
    across = 0
    events = 0
    for partition, _offset, e in _rebuild_log.read_log(
        consumer, args.topic, limits, read, lambda n: progress.tick("read", n, n)
    ):
        ts = e.ts
        wm = watermarks.get(partition)
        if wm is not None and ts < wm - lateness:  # the consumer's rule, per partition
            verdict = "late"
        else:
            verdict = apply(e.id, e.arena, e.attacker, e.victim, ts)
            if verdict in _MOVES_WATERMARK:
                if wm is None or ts > wm:
                    watermarks[partition] = ts
            elif verdict == "late":
                across += 1
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        events += 1
    rated_s = time.monotonic() - started
    _log("info", "rated", events=events, messages=read.messages, seconds=round(rated_s, 3))
    for partition, offset, reason in read.rejected_samples:
        _log("warning", "dead_letter", partition=partition, offset=offset, reason=reason)
    offsets = {p: end for p, end in read.ends.items() if end > read.starts[p]}
    lowest = min(watermarks.values()) if watermarks else None
    records = _rebuild_pool.live_records(
        book.cooldowns(), rules.ids.items(), lowest, lateness + params.pair_memory_ms
    )
    writer = _rebuild_pool.BulkWriter(
        client, args.commands_per_round, lambda n: progress.tick("write", n, events)
    )
    snapshot = book.snapshot if book.counted or args.snapshot else initial_snapshot(params)
    players = _rebuild_pool.write_pool(
        writer, keys, args.topic, book.iter_players(), encoding, records, offsets, watermarks,
        snapshot, book.seasons, book.ladder,
    )  # fmt: skip
    if offsets:
        consumer.commit(
            offsets=[TopicPartition(args.topic, p, o) for p, o in sorted(offsets.items())],
            asynchronous=False,
        )
    _rebuild_pool.switch(client, keys)
    elapsed = time.monotonic() - started
    dead = dict(read.rejected)
    if rules.reused:
        dead[ID_REUSED] = rules.reused
    _log(
        "info", "rebuilt", namespace=args.namespace, topic=args.topic, events=events,
        messages=read.messages, counted=book.counted,
        duplicates=verdicts.get(COOLDOWN_DUPLICATE, 0) + rules.resends,
        late=verdicts.get("late", 0), late_across_partitions=across,
        dead_lettered=dict(sorted(dead.items())), players=players,
        cooldown_records=len(records.cooldowns), event_id_records=len(records.event_ids),
        offsets={str(p): o for p, o in sorted(offsets.items())}, redis_commands=writer.sent,
        seconds=round(elapsed, 3), events_per_s=round(read.messages / max(elapsed, 1e-9)),
    )  # fmt: skip
    return EXIT_OK


class _Progress:
    """A JSON line on stderr every `every` seconds: the phase, messages read, events rated."""

    def __init__(self, every: float, started: float) -> None:
        self._every = every
        self._started = self._last = started

    def tick(self, phase: str, n: int, events: int) -> None:
        if self._every <= 0:
            return
        now = time.monotonic()
        if now - self._last < self._every:
            return
        self._last = now
        rate = round((n if phase == "read" else events) / max(now - self._started, 1e-9))
        done = {"messages_read": n} if phase == "read" else {"redis_commands": n}
        _log("info", "progress", phase=phase, **done, events_per_s=rate)


def _log(level: str, event: str, **fields: Any) -> None:
    record = {"ts": round(time.time(), 3), "level": level, "cmd": "rebuild", "event": event}
    print(json.dumps({**record, **fields}, separators=(",", ":")), file=sys.stderr, flush=True)
