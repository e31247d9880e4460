"""`adr rebuild`: a pool's state from the kill-events log into a fresh namespace, computed in
memory by the engine (RatingBook for ADR, ModelBook for another model, with the counting rules of
`adr replay` and the consumer), written in bulk with the consumer's keys, ending with the offsets
from which `adr consume` continues.

The model is chosen as `adr consume` chooses it (consumer.config: `--model`, `--model-param`,
ADR_MODEL, ADR_MODEL_PARAMS, the config file) and recorded in `{ns}:model` as the consumer stamps
it, before the switch: a consumer with another model or other parameters refuses the pool.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import redis
from confluent_kafka import Consumer, KafkaException, TopicPartition

from adr_cli import _rebuild_log, _rebuild_native, _rebuild_pool, _rebuild_rate
from adr_cli.replay import _read_snapshot, _seasons_for, _seconds_to_ms
from consumer import ConsumerError
from consumer.cli import refuse_offline_only
from consumer.config import (
    COUNTING_SETTINGS,
    SERVER_SETTINGS,
    add_model_arguments,
    add_shared_arguments,
    engine_params_from_args,
    kafka_settings_of_consumer,
    model_from_args,
    shared_settings_from_args,
)
from engine import (
    MODELS,
    AdrModel,
    EngineError,
    ModelBook,
    ParamError,
    Params,
    RatingBook,
    Snapshot,
    initial_snapshot,
    model_parameters,
)
from redis_layout import Keys, model_stamp
from redis_layout.event_ids import (
    COOLDOWN_DUPLICATE,
    ID_REUSED,
    CountingRules,
)
from redis_layout.player_codec import player_values
from runtime import RedisUrlError, add_kafka_arguments, compiled, redact_text
from runtime import connect as connect_redis
from runtime.logs import kafka_logger
from runtime.params import add_param_argument
from runtime.settings import key_values
from schemas import Limits

EXIT_OK: Final = 0
EXIT_IO: Final = 1
EXIT_USAGE: Final = 2
EXIT_IN_USE: Final = 3
KAFKA_LOG: Final = kafka_logger("adr.rebuild.kafka")
_UNLIMITED_AGE_MS: Final = 2**62
_WRITE_TIMEOUT_S: Final = 300.0
_SHARED: Final = (*SERVER_SETTINGS, *COUNTING_SETTINGS)
"""The settings read as `adr consume` reads them (flags > env > the config file > defaults)."""
_SHARED_HELP: Final = {
    "bootstrap_servers": "Kafka bootstrap servers (host:port,...)",
    "redis_url": "the Redis of the pool (redis://, rediss://, sentinel, cluster)",
    "namespace": "the fresh namespace to build ({NS}:* must hold no key)",
    "topic": "the kill-events topic to read",
    "group": "the consumer group that continues: its offsets on --topic are committed at the end",
    "lateness_ms": "event-time lateness per partition, the consumer's: which events count",
    "max_future_ms": "reject events further ahead of now as ts_out_of_range",
}


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
        "Model and parameters: --model (env ADR_MODEL, the config file's model; default adr)\n"
        "and its --model-param/--model-params, and --param/--profile (env ADR_PARAMS,\n"
        "ADR_PROFILE, the config file's [params]: adr's parameters and the pool's cooldown and\n"
        "tier shares, whatever the model), read as `adr consume` reads them. {ns}:model\n"
        "records them as the consumer does, so `adr consume` continues only with the same\n"
        "model and parameters (exit 2 otherwise). --bootstrap-servers, --redis-url,\n"
        "--namespace, --topic, --group, --lateness-ms and --max-future-ms are read by the\n"
        "consumer's road too (KAFKA_BOOTSTRAP_SERVERS, REDIS_URL or REDIS_URL_FILE,\n"
        "ADR_NAMESPACE, ADR_TOPIC, ADR_GROUP, ADR_LATENESS_MS, ADR_MAX_FUTURE_MS, the file's\n"
        "keys; flags > env > file > the consumer's defaults): run the consumer that continues\n"
        "the pool with the same ones. Kafka client settings (security, tuning) by the\n"
        "consumer's road too: the config file's [kafka] table, then --kafka-config-file or\n"
        "ADR_KAFKA_CONFIG_FILE, ADR_KAFKA_CONFIG, --kafka-config (later wins); a bad [kafka]\n"
        "value, or a guarded setting changed (isolation.level, group.id, ...), is a usage\n"
        "error, as the consumer's; --kafka-setting items are applied last. No other setting\n"
        "of the consumer is read.\n\n"
        "Exit codes: 0 done (the pool is visible), 1 Kafka or Redis error (the namespace\n"
        "stays invisible; rerun), 2 usage error (bad --param, --model, --model-param,\n"
        "--snapshot file, value, config file, a Kafka setting librdkafka refuses), 3 the\n"
        "namespace holds keys that are not an unfinished rebuild's."
    )
    add_shared_arguments(parser, _SHARED, _SHARED_HELP)  # adr consume's flags, env, file
    add_param_argument(parser)
    add_model_arguments(parser)
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
        "--max-age-ms",
        type=int,
        default=None,
        metavar="MS",
        help="reject events older than now minus this as ts_out_of_range, as a "
        "consumer with the same flag would (default: no limit, the whole log; not read "
        "from ADR_MAX_AGE_MS or the file: the consumer's guard, against a later clock, "
        "would refuse the history it accepted)",
    )
    add_kafka_arguments(parser)  # as adr consume: security, tuning (over the file's [kafka])
    parser.add_argument(
        "--kafka-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a librdkafka setting of the reader (repeatable), applied last, over the guarded "
        "ones too",
    )
    parser.add_argument(
        "--commands-per-round",
        type=int,
        default=_rebuild_pool.COMMANDS_PER_ROUND,
        metavar="N",
        help=f"Redis commands sent per round trip (default {_rebuild_pool.COMMANDS_PER_ROUND})",
    )
    parser.add_argument(
        "--core",
        choices=("auto", "native", "python"),
        default="auto",
        help="who counts and rates: the native batch core (C, docs/native.md), the pure Python "
        "engine (the reference), or auto: native where built and the parameters allow "
        "(default; the started line says which and why)",
    )
    parser.add_argument(
        "--progress-every",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="seconds between progress lines on stderr (0: none)",
    )


def run(args: argparse.Namespace) -> int:
    try:  # the servers, pool, topic, group, counting rules as adr consume reads them (flags win)
        shared = shared_settings_from_args(args, _SHARED)
        args = argparse.Namespace(**{**vars(args), **shared})
        params = engine_params_from_args(args)  # adr consume's road: flags > env > file
        refuse_offline_only(params)  # what no consumer could continue (pair_decay), adr's too
        model = model_from_args(args, params)
        fixed = _read_snapshot(args.snapshot) if args.snapshot is not None else None
        seasons = _seasons_for(args.seasons, model)
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
        conf = _rebuild_log.settings(
            args.bootstrap_servers, args.group, extra, kafka_settings_of_consumer(args)
        )  # a file or [kafka] that cannot be read (ConsumerError), a guarded key changed: usage
        if model.name != MODELS[0]:
            why_not: str | None = f"the native core rates {MODELS[0]} only, not {model.name}"
        elif seasons.starts:
            why_not = "the native core applies no season resets (--seasons)"
        else:
            why_not = _rebuild_native.unavailable(params, args.lateness_ms, every_ms)
        if args.core == "native" and why_not is not None:
            raise ParamError(f"--core native: {why_not}")
    except (ParamError, EngineError, ConsumerError, ValueError) as exc:
        _log("error", "usage", message=str(exc))
        return EXIT_USAGE
    native = args.core != "python" and why_not is None
    book: RatingBook | ModelBook[Any]
    encoding: _rebuild_pool.Encoding[Any]
    if model.name == MODELS[0]:
        book = RatingBook(
            params, calibrate_every_ms=every_ms, fixed_snapshot=fixed,
            lateness_ms=args.lateness_ms, seasons=seasons,
        )  # fmt: skip
        encoding = _rebuild_pool.Encoding(
            model=AdrModel(params),
            values=player_values,
            ver=lambda _player, state: state.n,
        )  # ADR: ver (the player's rating changes) is its n, the counted kills it took part in
    else:  # another model: the engine's generic book, the consumer's encoding of that model
        book = ModelBook(
            model, params, calibrate_every_ms=every_ms, fixed_snapshot=fixed,
            lateness_ms=args.lateness_ms, seasons=seasons,
        )  # fmt: skip
        encoding = _rebuild_pool.model_encoding(model)
    stamp = model_stamp(model.name, model_parameters(model))  # {ns}:model, as `adr consume`
    keys = Keys(args.namespace)
    conf["logger"] = KAFKA_LOG  # librdkafka's own lines as JSON log lines
    try:  # no broker is asked yet: a refusal here is of a setting, as the consumer's exit 2
        consumer = Consumer(conf)
    except KafkaException as exc:
        _log("error", "usage", message=redact_text(str(exc)))
        return EXIT_USAGE
    try:
        # A round of bulk commands can keep a busy Redis from reading for longer than redis-py's
        # default 5 s socket timeout (seen on a loaded machine: "Timeout writing to socket").
        client = connect_redis(args.redis_url, args.namespace, socket_timeout=_WRITE_TIMEOUT_S)
    except (redis.RedisError, RedisUrlError, ValueError) as exc:
        consumer.close()
        _log("error", "connect_failed", message=str(exc))
        return EXIT_IO
    try:
        core = _Core(native, why_not if args.core == "auto" else "--core python", every_ms, fixed)
        return _rebuild(args, client, consumer, keys, book, encoding, stamp, limits, params, core)
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
    book: RatingBook | ModelBook[Any],
    encoding: _rebuild_pool.Encoding[Any],
    stamp: str,
    limits: Limits,
    params: Params,
    core: _Core,
) -> int:
    started = time.monotonic()
    recorded = json.loads(stamp)
    _log(
        "info", "started", namespace=args.namespace, topic=args.topic, model=recorded["model"],
        model_params=recorded["params"], group=args.group, lateness_ms=args.lateness_ms,
        max_future_ms=args.max_future_ms, build=compiled.state(),
        core="native" if core.native else f"python: {core.why_not}",
    )  # fmt: skip
    _rebuild_pool.claim(client, keys, _log)
    progress = _Progress(args.progress_every, started)
    read = _rebuild_log.LogRead()
    lateness = args.lateness_ms
    tick = lambda n: progress.tick("read", n, n)  # noqa: E731
    if core.native:
        rated = _rebuild_native.rate_native(
            consumer, args.topic, limits, read, tick, params, lateness, core.every_ms, core.fixed
        )
    else:
        rules = CountingRules(book)
        rated = _rebuild_rate.rate_pure(consumer, args.topic, limits, read, tick, rules, lateness)
    events, verdicts, watermarks = rated.events, rated.verdicts, rated.watermarks
    rated_s = time.monotonic() - started
    _log("info", "rated", events=events, messages=read.messages, seconds=round(rated_s, 3))
    for partition, offset, reason in read.rejected_samples:
        _log("warning", "dead_letter", partition=partition, offset=offset, reason=reason)
    offsets = {p: end for p, end in read.ends.items() if end > read.starts[p]}
    lowest = min(watermarks.values()) if watermarks else None
    keep = lateness + params.pair_memory_ms
    records: _rebuild_pool.Records | _rebuild_pool.PackedRecords
    if rated.packed_records is not None:  # the native core packs them itself
        horizon = _rebuild_pool.sweep_horizon(lowest, keep)
        packed, n_cooldowns, n_ids = rated.packed_records(
            keys.prefix, horizon, _rebuild_pool.MEMBERS_PER_COMMAND
        )
        records = _rebuild_pool.PackedRecords(packed, (n_cooldowns, n_ids))
    else:
        records = _rebuild_pool.live_records(rated.cooldowns, rated.event_ids, lowest, keep)
    writer = _rebuild_pool.BulkWriter(
        client, args.commands_per_round, lambda n: progress.tick("write", n, events)
    )
    snapshot = rated.snapshot if rated.counted or args.snapshot else initial_snapshot(params)
    # the season schedule and the live board's season (the native core runs only without
    # seasons, so its pool has one season, 0)
    seasons, ladder = book.seasons, book.ladder
    players = _rebuild_pool.write_pool(
        writer, keys, args.topic, rated.players, encoding, records, offsets, watermarks,
        snapshot, seasons, ladder,
    )  # fmt: skip
    client.set(keys.model, stamp)  # the pool's model, before the switch makes it a pool
    if offsets:
        consumer.commit(
            offsets=[TopicPartition(args.topic, p, o) for p, o in sorted(offsets.items())],
            asynchronous=False,
        )
    _rebuild_pool.switch(client, keys)
    elapsed = time.monotonic() - started
    dead = dict(read.rejected)
    if rated.reused:
        dead[ID_REUSED] = rated.reused
    _log(
        "info", "rebuilt", namespace=args.namespace, topic=args.topic, model=recorded["model"],
        events=events, messages=read.messages, counted=rated.counted,
        duplicates=verdicts.get(COOLDOWN_DUPLICATE, 0) + rated.resends,
        late=verdicts.get("late", 0), late_across_partitions=rated.across,
        dead_lettered=dict(sorted(dead.items())), players=players,
        cooldown_records=records.counts[0], event_id_records=records.counts[1],
        offsets={str(p): o for p, o in sorted(offsets.items())}, redis_commands=writer.sent,
        seconds=round(elapsed, 3), events_per_s=round(read.messages / max(elapsed, 1e-9)),
    )  # fmt: skip
    return EXIT_OK


@dataclass(frozen=True, slots=True)
class _Core:
    """Which core counts and rates (--core), and what the native one needs beside the book."""

    native: bool
    why_not: str | None
    every_ms: int
    fixed: Snapshot | None


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
