"""The command line every rating-pool process shares: its settings dataclass (runtime.settings),
the operator's Kafka settings, and the engine parameters (a profile, `ADR_PARAMS`, `--param`).
`adr consume` and `adr calibrate` declare theirs with it; `adr leaderboard` takes the engine
parameters the same way, so that all three read one pool alike."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any, TypeVar

from engine import ParamError, Params
from runtime._errors import RuntimeConfigError
from runtime.kafka_settings import add_kafka_arguments, kafka_settings_from_args
from runtime.params import add_param_argument, param_overrides
from runtime.settings import add_settings_arguments, settings_from_args


def add_service_arguments(parser: argparse.ArgumentParser, settings: type, epilog: str) -> None:
    """The flags of a service whose settings are the dataclass `settings`, then `--kafka-*`,
    `--param` and `--profile`; `epilog` documents its exit codes."""
    parser.epilog = epilog
    add_settings_arguments(parser, settings)
    add_kafka_arguments(parser)
    add_param_argument(parser)


def service_values(
    settings: type, args: argparse.Namespace, environ: Mapping[str, str]
) -> dict[str, Any]:
    """The field values of `settings` (flag > env > file > default), with `kafka` (the Kafka
    settings) and `params` (the engine parameter overrides, NAME -> VALUE). Raises
    RuntimeConfigError or engine.ParamError."""
    values = settings_from_args(settings, args, environ)
    values["kafka"] = kafka_settings_from_args(args, environ)
    values["params"] = param_overrides_from_args(args, environ)
    return values


_Settings = TypeVar("_Settings")


def service_config(
    settings: type[_Settings],
    args: argparse.Namespace,
    environ: Mapping[str, str] | None,
    error: type[Exception],
    *,
    engine_params: bool = False,
) -> _Settings:
    """`settings` from parsed flags over environment variables (`os.environ` when None) over the
    config file over defaults. A value that cannot be read raises `error`, the service's root
    exception, with the reason. With `engine_params`, `params` is checked into engine.Params
    here; otherwise it stays the NAME -> VALUE overrides."""
    env = os.environ if environ is None else environ
    try:
        values = service_values(settings, args, env)
        if engine_params:
            values["params"] = Params.from_overrides(values["params"])
    except (ParamError, RuntimeConfigError) as exc:
        raise error(str(exc)) from exc
    return settings(**values)


def param_overrides_from_args(
    args: argparse.Namespace, environ: Mapping[str, str]
) -> dict[str, str]:
    """NAME -> VALUE from `--profile`/`ADR_PROFILE`, `ADR_PARAMS` and `--param`, later wins."""
    return param_overrides(
        getattr(args, "param", []) or [], environ, getattr(args, "profile", None)
    )


def engine_params(args: argparse.Namespace, environ: Mapping[str, str]) -> Params:
    """engine.Params from the profile, `ADR_PARAMS` and `--param` (raises engine.ParamError)."""
    return Params.from_overrides(param_overrides_from_args(args, environ))
