"""`consumer.Config`: one typed object for `adr consume`, from flags, ADR_* environment and an
optional TOML file (runtime.settings: each setting field names its variable and help line)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
from collections.abc import Collection, Mapping
from typing import Any, Final

from consumer._errors import ConsumerError
from engine import DEFAULT_LATENESS_MS, MODELS, ParamError, Params, RatingModel, model_named
from runtime import KafkaSettings, RuntimeConfigError, kafka_settings_from_args
from runtime.service import (
    SECTIONS,
    add_service_arguments,
    param_overrides_from_args,
    service_config,
)
from runtime.settings import (
    CONFIG_FILE_ENV,
    config_path,
    fields,
    help_line,
    key_values,
    read_shared_tables,
    setting,
    settings_from_args,
    settings_repr,
)
from schemas import DEFAULT_MAX_AGE_MS, DEFAULT_MAX_FUTURE_MS

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclasses.dataclass(frozen=True, slots=True)
class Config:
    """Everything `adr consume` needs; engine parameters stay in `engine.Params` (`params`)."""

    bootstrap_servers: str = setting(
        DEFAULT_BOOTSTRAP, env="KAFKA_BOOTSTRAP_SERVERS", help="Kafka bootstrap servers"
    )
    redis_url: str = setting(
        DEFAULT_REDIS_URL,
        env="REDIS_URL",
        help="Redis of the rating pool (URL forms: docs/operations.md)",
        secret=True,
    )
    namespace: str = setting(
        "adr", env="ADR_NAMESPACE", help="the rating pool: Redis key prefix {ns}"
    )
    topic: str = setting("kill-events", env="ADR_TOPIC", help="topic of kill events to rate")
    group: str = setting(
        "adr-consumer", env="ADR_GROUP", help="Kafka consumer group of the pool's consumers"
    )
    group_instance_id: str = setting(
        "",
        env="ADR_GROUP_INSTANCE_ID",
        help="static membership id, one per replica (e.g. the pod name)",
    )
    """Kafka static membership: a restarted instance with the same id takes its partitions back
    at once instead of waiting for the session timeout (set one per replica, e.g. the pod name)."""
    session_timeout_ms: int = setting(
        10_000, env="ADR_SESSION_TIMEOUT_MS", help="Kafka group session timeout"
    )
    kafka_debug: str = setting(
        "", env="ADR_KAFKA_DEBUG", help="librdkafka debug contexts, e.g. cgrp,fetch (empty: off)"
    )
    """librdkafka debug contexts (e.g. `cgrp,topic,fetch`), logged as JSON lines; empty: off."""
    rating_topic: str = setting(
        "rating-changes", env="ADR_RATING_TOPIC", help="topic the rating changes go to"
    )
    dlq_topic: str = setting(
        "kill-events-dlq",
        env="ADR_DLQ_TOPIC",
        help="dead-letter topic for events that cannot be rated",
    )
    dead_letter_timeout_ms: int = setting(
        30_000,
        env="ADR_DEAD_LETTER_TIMEOUT_MS",
        help="how long the broker has to acknowledge a dead letter",
    )
    """How long the broker has to acknowledge a dead letter; one it did not take by then stops
    its partition at that message until a retry delivers it (consumer/_blocked.py)."""
    batch_size: int = setting(
        1000, env="ADR_BATCH_SIZE", help="most events read and written per batch"
    )
    batch_wait_ms: int = setting(
        50, env="ADR_BATCH_WAIT_MS", help="how long one read waits for a batch to fill"
    )
    """How long one read waits for a batch to fill; bounds the latency a quiet topic adds."""
    max_age_ms: int = setting(
        DEFAULT_MAX_AGE_MS,
        env="ADR_MAX_AGE_MS",
        help="wall-clock guard: older event times are dead-lettered",
    )
    """Wall-clock guard against plainly absurd event times: older is dead-lettered
    (`ts_out_of_range`). Lateness itself is by event time (`lateness_ms`)."""
    max_future_ms: int = setting(
        DEFAULT_MAX_FUTURE_MS,
        env="ADR_MAX_FUTURE_MS",
        help="wall-clock guard: event times further ahead are dead-lettered",
    )
    """Wall-clock guard ahead: stays tight, since an event from the future would move its
    partition's watermark and make the events after it late."""
    lateness_ms: int = setting(
        DEFAULT_LATENESS_MS,
        env="ADR_LATENESS_MS",
        help="event-time lateness: older than a partition's watermark minus this is late",
    )
    """An event older than the largest event time accepted on its partition minus this is late:
    counted (`adr_events_late_total`), not rated; the engine's rule (`adr replay --lateness`)."""
    metrics_port: int = setting(
        9108, env="ADR_METRICS_PORT", help="port of /metrics, /healthz and /readyz (0: none)"
    )
    metrics_host: str = setting(
        "0.0.0.0", env="ADR_METRICS_HOST", help="address the metrics server binds"
    )
    relay_batch: int = setting(
        100, env="ADR_RELAY_BATCH", help="most outbox entries the relay takes per pump"
    )
    """Outbox entries (one per batch) the relay takes per pump, at most."""
    relay_max_in_flight: int = setting(
        100_000,
        env="ADR_RELAY_MAX_IN_FLIGHT",
        help="no new outbox entries while this many messages sent are not settled",
    )
    """The relay takes no new outbox entries while this many rating changes sent are not settled
    (confirmed or failed; they settle when the producer's queue is empty, consumer/_relay.py)."""
    relay_pump_ms: int = setting(
        500,
        env="ADR_RELAY_PUMP_MS",
        help="longest a pump waits on a full producer queue before the loop goes on",
    )
    """How long one pump may wait on a full producer queue before the loop goes on."""
    state_cache_players: int = setting(
        200_000, env="ADR_STATE_CACHE_PLAYERS", help="player states kept in memory between batches"
    )
    """Player states kept in memory between batches (0: read every player each batch)."""
    max_players: int = setting(
        10_000_000,
        env="ADR_MAX_PLAYERS",
        help="players the pool may hold; events that would add more are dead-lettered",
    )
    """Players the rating pool may hold; an event that would add one beyond it is dead-lettered
    (`pool_full`). Size Redis for it: docs/operations.md, "Redis sizing"."""
    outbox_claim_idle_ms: int = setting(
        10_000,
        env="ADR_OUTBOX_CLAIM_IDLE_MS",
        help="outbox entries of a dead relay are re-sent after this long",
    )
    """An outbox entry read by a relay that then died is re-sent after this long."""
    held_recheck_ms: int = setting(
        5_000,
        env="ADR_HELD_RECHECK_MS",
        help="how often a partition held for an out-of-log offset is rechecked",
    )
    """How often a partition held for a stored offset outside the log is checked again."""
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 5.0
    instance_id: str = setting(
        env="ADR_INSTANCE_ID",
        help="this replica's name in the outbox consumer group",
        shown="hostname-pid",
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}",
    )
    model: str = setting(
        "adr",
        env="ADR_MODEL",
        help="the pool's rating model: adr, elo, glicko2, trueskill, weng-lin (docs/models.md)",
    )
    """The pool's rating model (engine.MODELS). The pool records it with a digest of its
    parameters at first start ({ns}:model); a process with another model or other parameters
    refuses the pool (exit 2) before it consumes anything."""
    model_params: str = setting(
        "",
        env="ADR_MODEL_PARAMS",
        help="parameters of a model other than adr, 'a=1,b=2' (also --model-param NAME=VALUE)",
    )
    """The model's parameter overrides (not adr's: those are `--param`), NAME=VALUE joined by
    commas; the repeatable `--model-param NAME=VALUE` adds to them, later wins."""
    params: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Engine parameter overrides (`--param NAME=VALUE`), checked by engine.Params."""
    kafka: KafkaSettings = dataclasses.field(default_factory=KafkaSettings)
    """The operator's librdkafka settings (security, tuning); guarded keys cannot change."""

    def __repr__(self) -> str:
        """Every field, the Redis URL's password and secret Kafka settings masked."""
        return settings_repr(self)

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


_EPILOG = (
    "exit status: 0 stopped by SIGTERM/SIGINT after the batch in hand; 2 bad configuration "
    "(a flag, an environment variable, the --config file, a Kafka setting) or a pool that records "
    "another model or other model parameters ({ns}:model), or that adr rebuild is writing "
    "({ns}:layout 'rebuilding'); 3 Kafka refuses what no retry can "
    "change (an unsupported broker version, an invalid setting). Other failures of Kafka (ACLs, "
    "missing topics, brokers down) or Redis while running are retried, not exits."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `adr consume`; each defaults to its environment variable, then Config's."""
    add_service_arguments(parser, Config, _EPILOG)
    _add_model_param(parser)


def _add_model_param(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model-param",
        dest="model_param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a parameter of the model (not adr; repeatable, after --model-params, "
        "ADR_MODEL_PARAMS and the file's model_params; docs/models.md)",
    )


MODEL_SETTINGS: Final = ("model", "model_params")
"""The settings that choose the pool's model: what `adr rebuild` reads of this Config."""


SERVER_SETTINGS: Final = ("bootstrap_servers", "redis_url")
"""The servers of the pool: `adr rebuild` reads them as the consumer does (KAFKA_BOOTSTRAP_SERVERS,
REDIS_URL or REDIS_URL_FILE, the file's keys), so the environment that runs the consumer runs
the rebuild that prepares its pool."""


COUNTING_SETTINGS: Final = ("namespace", "topic", "group", "lateness_ms", "max_future_ms")
"""The other settings `adr rebuild` shares with the consumer that continues its pool: the pool,
its topic and group, and the rules of which events count that a rebuild applies as the consumer
did (lateness is by event time: a different one counts other events). Not `max_age_ms`: a
guard against the wall clock, which at the rebuild's later time would refuse the history the
consumer accepted while it was young (`adr rebuild --max-age-ms`, its own, defaults to no
limit). `max_future_ms` against a later clock refuses no event the consumer accepted."""


def add_shared_arguments(
    parser: argparse.ArgumentParser,
    names: Collection[str],
    helps: Mapping[str, str] | None = None,
) -> None:
    """One flag per setting of Config named in `names`, as `adr consume` takes it (default None:
    `shared_settings_from_args` tells given from not), its help `helps`' line for it or the
    setting's own, then its variable and default: for a command that writes a pool without
    consuming it (`adr rebuild`)."""
    for f in fields(Config):
        if f.name in names:
            shown = dataclasses.replace(f.setting, help=(helps or {}).get(f.name, f.setting.help))
            parser.add_argument(
                f.flag, dest=f.name, type=f.kind, default=None, help=help_line(shown, f.default)
            )


def shared_settings_from_args(
    args: argparse.Namespace, names: Collection[str], environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """name -> value of the settings `names` as `adr consume` would read them with the same
    flags (`add_shared_arguments`), environment and config file (its top level and `[consume]`):
    flags > env > file > Config's defaults. Only those settings are read and checked (a bad
    `ADR_BATCH_SIZE` is the consumer's problem, not this command's; the file's `[kafka]` is
    `kafka_settings_of_consumer`'s); the file's keys must still be the consumer's.
    ConsumerError for a setting or file that cannot be read."""
    env = os.environ if environ is None else environ
    others = tuple(t for t in SECTIONS if t != "consume")
    try:
        values = settings_from_args(
            Config, args, env, section="consume", sections=others, only=names
        )
    except RuntimeConfigError as exc:
        raise ConsumerError(str(exc)) from exc
    return {f.name: values.get(f.name, f.default) for f in fields(Config) if f.name in names}


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that choose the pool's model as `adr consume` takes them (`--model`,
    `--model-params`, `--model-param`, `--config`), for a command that writes a pool without
    consuming it (`adr rebuild`); `model_from_args` reads them with the same precedence, and
    `engine_params_from_args` the engine parameters (with `runtime.params.add_param_argument`'s
    `--param` and `--profile`)."""
    parser.add_argument(
        "--config",
        dest="config_file",
        metavar="FILE",
        default=None,
        help="`adr consume`'s TOML file: its model, model_params, [params] and the settings "
        f"below it shares with the consumer are read (flags and env win; env {CONFIG_FILE_ENV})",
    )
    add_shared_arguments(parser, MODEL_SETTINGS)
    _add_model_param(parser)


def engine_params_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> Params:
    """The engine parameters `adr consume` would run with the same `--param`/`--profile` flags,
    environment (`ADR_PARAMS`, `ADR_PROFILE`) and config file (`--config`, `ADR_CONFIG_FILE`: its
    `[params]`): flags > env > file > defaults, by `adr consume`'s own road
    (runtime.service.param_overrides_from_args). Nothing else of the consumer's configuration is
    read. ConsumerError for a file that cannot be read, ParamError for a bad parameter."""
    env = os.environ if environ is None else environ
    try:
        path = config_path(args, env)
        tables = read_shared_tables(path, kafka=False) if path else None
    except RuntimeConfigError as exc:
        raise ConsumerError(str(exc)) from exc
    return Params.from_overrides(param_overrides_from_args(args, env, tables))


def kafka_settings_of_consumer(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> KafkaSettings:
    """The operator's Kafka client settings `adr consume` would run with the same config file
    (`--config`, `ADR_CONFIG_FILE`: its `[kafka]` table), `--kafka-config-file` or
    `ADR_KAFKA_CONFIG_FILE`, `ADR_KAFKA_CONFIG` and `--kafka-config`, later wins, by
    `adr consume`'s own road (runtime.service.service_config): for a command that reads the
    pool's topic as its consumer does (`adr rebuild`, whose guarded keys are then applied as the
    consumer's). ConsumerError for a file or a `[kafka]` value that cannot be read."""
    env = os.environ if environ is None else environ
    try:
        path = config_path(args, env)
        tables = read_shared_tables(path) if path else None
        return kafka_settings_from_args(args, env, tables.kafka if tables else None)
    except RuntimeConfigError as exc:
        raise ConsumerError(str(exc)) from exc


def model_from_args(
    args: argparse.Namespace, params: Params, environ: Mapping[str, str] | None = None
) -> RatingModel[Any]:
    """The model `adr consume` would run with the same flags (`add_model_arguments`),
    environment and config file: MODEL_SETTINGS by `from_args`'s precedence, then `pool_model`.
    Only those settings are read and checked (a bad `ADR_BATCH_SIZE` is the consumer's problem,
    not this command's); the file's keys must still be the consumer's. ConsumerError for a
    setting or file that cannot be read, ParamError for an unknown model, parameter or value."""
    given = shared_settings_from_args(args, MODEL_SETTINGS, environ)
    joined = _joined_model_params(given["model_params"], args)
    return _named_model(given["model"], joined, params)


def from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Config:
    """Config from parsed flags over environment variables over the config file over defaults."""
    config = service_config(Config, args, environ, ConsumerError, section="consume")
    joined = _joined_model_params(config.model_params, args)
    if joined != config.model_params:
        config = dataclasses.replace(config, model_params=joined)
    return config


def _joined_model_params(given: str, args: argparse.Namespace) -> str:
    """`--model-params`/ADR_MODEL_PARAMS/the file's model_params, then each `--model-param`."""
    extra = [item for item in getattr(args, "model_param", None) or [] if item.strip()]
    return ",".join([given, *extra] if given else extra) if extra else given


def pool_model(config: Config, params: Params) -> RatingModel[Any]:
    """The pool's rating model: `config.model` with `config.model_params` (ADR: `params`).
    ParamError (exit 2) for an unknown model, parameter or value."""
    return _named_model(config.model, config.model_params, params)


def _named_model(name: str, model_params: str, params: Params) -> RatingModel[Any]:
    items = [item for item in model_params.split(",") if item.strip()]
    overrides = key_values(
        items, lambda item: ParamError(f"--model-param expects NAME=VALUE, got {item!r}")
    )
    if name == MODELS[0] and overrides:
        raise ParamError("adr's parameters are --param names, not --model-param")
    return model_named(name, overrides, params)
