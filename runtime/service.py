"""The command line every rating-pool process shares: its settings dataclass (runtime.settings),
the operator's Kafka settings, and the engine parameters (a profile, the config file's `[params]`,
`ADR_PARAMS`, `--param`).
`adr consume` and `adr calibrate` declare theirs with it; `adr leaderboard` takes the engine
parameters the same way, so that all three read one pool alike."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from engine import ParamError, Params
from runtime._errors import RuntimeConfigError
from runtime.kafka_settings import add_kafka_arguments, kafka_settings_from_args
from runtime.params import add_param_argument, param_overrides
from runtime.settings import (
    CONFIG_FILE_ENV,
    SharedTables,
    add_settings_arguments,
    config_path,
    read_shared_tables,
    settings_from_args,
)


def add_service_arguments(parser: argparse.ArgumentParser, settings: type, epilog: str) -> None:
    """The flags of a service whose settings are the dataclass `settings`, then `--kafka-*`,
    `--param` and `--profile`; `epilog` documents its exit codes."""
    parser.epilog = epilog
    add_settings_arguments(parser, settings)
    add_kafka_arguments(parser)
    add_param_argument(parser)


_Settings = TypeVar("_Settings")

SECTIONS = ("consume", "calibrate", "serve", "history")
"""The services' tables in a shared config file (runtime.settings.read_config_file)."""


def service_config(
    settings: type[_Settings],
    args: argparse.Namespace,
    environ: Mapping[str, str] | None,
    error: type[Exception],
    *,
    section: str,
    checked_params: bool = False,
) -> _Settings:
    """`settings` from parsed flags over environment variables (`os.environ` when None) over the
    config file (its top level, then its table `section`) over defaults. A value that cannot be
    read raises `error`, the service's root exception, with the reason. Besides the settings,
    `kafka` takes the operator's Kafka settings and `params` the engine parameter overrides:
    checked into engine.Params here with `checked_params`, else the NAME -> VALUE overrides."""
    env = os.environ if environ is None else environ
    try:
        others = tuple(t for t in SECTIONS if t != section)
        values = settings_from_args(settings, args, env, section=section, sections=others)
        path = config_path(args, env)
        tables = read_shared_tables(path) if path else SharedTables()
        values["kafka"] = kafka_settings_from_args(args, env, tables.kafka)
        overrides = param_overrides_from_args(args, env, tables)
        values["params"] = Params.from_overrides(overrides) if checked_params else overrides
    except (ParamError, RuntimeConfigError) as exc:
        raise error(str(exc)) from exc
    return settings(**values)


def param_overrides_from_args(
    args: argparse.Namespace, environ: Mapping[str, str], file: SharedTables | None = None
) -> dict[str, str]:
    """NAME -> VALUE from the profile (`--profile`, `ADR_PROFILE`, the file's), the file's
    `[params]`, `ADR_PARAMS` and `--param`, later wins (runtime.params.param_overrides)."""
    return param_overrides(
        getattr(args, "param", []) or [], environ, getattr(args, "profile", None), file
    )


def engine_params(args: argparse.Namespace, environ: Mapping[str, str]) -> Params:
    """engine.Params as the pool's services read them, for a short command (`adr leaderboard`)
    run beside them: the profile, the `[params]` table of ADR_CONFIG_FILE (its only part such a
    command reads), `ADR_PARAMS` and `--param`. Raises engine.ParamError, or SettingsError for a
    file that cannot be read."""
    path = environ.get(CONFIG_FILE_ENV) or None
    tables = read_shared_tables(Path(path), kafka=False) if path else None
    return Params.from_overrides(param_overrides_from_args(args, environ, tables))
