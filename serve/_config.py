"""`serve.Config`: one typed object for `adr serve`, from flags, environment and an optional TOML
file (runtime.settings: flags > env > file > defaults; the file's `[serve]` table holds its own
keys)."""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from engine import ParamError, Params
from leaderboard import TIES
from runtime import RuntimeConfigError
from runtime.params import add_param_argument
from runtime.service import SECTIONS, param_overrides_from_args
from runtime.settings import (
    SharedTables,
    add_settings_arguments,
    config_path,
    read_shared_tables,
    setting,
    settings_from_args,
    settings_repr,
)
from schemas import MAX_ID_BYTES
from serve._errors import ServeError

SECTION = "serve"


@dataclasses.dataclass(frozen=True, slots=True)
class Config:
    """Everything `adr serve` needs; `params` gives the tier shares of the tier table."""

    redis_url: str = setting(
        "redis://127.0.0.1:6379/0",
        env="REDIS_URL",
        help="Redis of the rating pool, as the read-only user adr-reader",
        secret=True,
    )
    namespace: str = setting("adr", env="ADR_NAMESPACE", help="the rating pool")
    host: str = setting("127.0.0.1", env="ADR_SERVE_HOST", help="address to listen on")
    port: int = setting(8080, env="ADR_SERVE_PORT", help="port to listen on (0: any free one)")
    metrics_port: int = setting(
        0,
        env="ADR_METRICS_PORT",
        help="also serve /metrics, /healthz, /readyz on this port, as the other services (0: no)",
    )
    metrics_host: str = setting("0.0.0.0", env="ADR_METRICS_HOST", help="its bind address")
    ties: str = setting(
        "unique",
        env="ADR_SERVE_TIES",
        help="default tie policy: unique (1, 2, 3) or shared (1, 2, 2, 4); ?ties= overrides",
    )
    page_size: int = setting(25, env="ADR_SERVE_PAGE_SIZE", help="rows of a page by default")
    max_page_size: int = setting(
        200, env="ADR_SERVE_MAX_PAGE_SIZE", help="most rows one page, around or friends answers"
    )
    max_friends: int = setting(
        200, env="ADR_SERVE_MAX_FRIENDS", help="most ids one friends request may name"
    )
    max_id_bytes: int = setting(
        MAX_ID_BYTES, env="ADR_SERVE_MAX_ID_BYTES", help="longest player id (UTF-8 bytes)"
    )
    history_points: int = setting(
        50, env="ADR_SERVE_HISTORY_POINTS", help="rating changes a profile shows (newest)"
    )
    cache_max_age: int = setting(
        2, env="ADR_SERVE_CACHE_MAX_AGE", help="seconds a live answer may be cached"
    )
    answer_cache_ttl: float = setting(
        1.0,
        env="ADR_SERVE_ANSWER_CACHE_TTL",
        help="seconds the server keeps an answer to serve it again (0: no answer cache)",
    )
    answer_cache_bytes: int = setting(
        32 * 1024 * 1024,
        env="ADR_SERVE_ANSWER_CACHE_BYTES",
        help="most bytes of answers the answer cache keeps",
    )
    redis_connections: int = setting(
        64, env="ADR_SERVE_REDIS_CONNECTIONS", help="most Redis connections of the pool"
    )
    redis_timeout: float = setting(
        2.0, env="ADR_SERVE_REDIS_TIMEOUT", help="seconds a Redis command may take"
    )
    threads: int = setting(
        32, env="ADR_SERVE_THREADS", help="worker threads for the (blocking) Redis reads"
    )
    params: Params = dataclasses.field(default_factory=Params)

    def __post_init__(self) -> None:
        if self.ties not in TIES:
            raise ServeError(f"--ties must be one of {', '.join(TIES)}, not {self.ties!r}")
        for name in ("page_size", "max_page_size", "max_friends", "max_id_bytes", "threads"):
            if getattr(self, name) < 1:
                raise ServeError(f"--{name.replace('_', '-')} must be >= 1")
        if self.page_size > self.max_page_size:
            raise ServeError("--page-size must be <= --max-page-size")
        if self.threads > self.redis_connections:
            # each thread may hold a connection; redis-py refuses one past the pool's size
            raise ServeError("--threads must be <= --redis-connections")
        for name in (
            "history_points", "cache_max_age", "port", "metrics_port", "answer_cache_bytes"
        ):  # fmt: skip
            if getattr(self, name) < 0:
                raise ServeError(f"--{name.replace('_', '-')} must be >= 0")

        if not 0 <= self.answer_cache_ttl <= 60:
            raise ServeError("--answer-cache-ttl must be between 0 and 60 s")

    def __repr__(self) -> str:
        return settings_repr(self)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser, Config)
    add_param_argument(parser)


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Config:
    """The config from flags over environment over the file's `[serve]` table and top level;
    ServeError with the reason if something cannot be read."""
    env = os.environ if environ is None else environ
    try:
        values = settings_from_args(Config, args, env, section=SECTION, sections=SECTIONS)
        path: Path | None = config_path(args, env)
        tables = read_shared_tables(path) if path else SharedTables()
        params = Params.from_overrides(param_overrides_from_args(args, env, tables))
    except (ParamError, RuntimeConfigError) as exc:
        raise ServeError(str(exc)) from exc
    return Config(**values, params=params)
