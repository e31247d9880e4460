"""`adr serve`: the leaderboard HTTP API and page over one rating pool, served by uvicorn.

Exit status: 0 stopped by a signal, 2 a setting that cannot be used (or the port is taken),
3 Redis unreachable at start.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys

import anyio.to_thread
import redis
import uvicorn
from prometheus_client import CollectorRegistry

from redis_layout import Keys
from runtime import ProbeServerError, RuntimeConfigError, connect, redact_text
from runtime.http import serve_probes
from serve._app import create_app, readiness
from serve._config import Config, add_config_arguments, config_from_args
from serve._errors import ServeError

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_REDIS = 3

_log = logging.getLogger("adr.serve")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "exit status: 0 stopped, 2 bad settings or the port taken, 3 Redis unreachable at start "
        "(docs/api.md)"
    )
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
        client = connect(
            config.redis_url,
            config.namespace,
            max_connections=config.redis_connections,
            socket_timeout=config.redis_timeout,
            socket_connect_timeout=config.redis_timeout,
        )
    except (ServeError, RuntimeConfigError) as exc:
        print(f"adr serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        client.ping()
    except redis.RedisError as exc:
        print(f"adr serve: Redis: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_REDIS
    return serve(config, client)


def serve(config: Config, client: redis.Redis) -> int:
    registry = CollectorRegistry()
    app = create_app(config, client, registry)
    if config.metrics_port:
        keys = Keys.of(config.namespace)
        try:
            serve_probes(
                registry,
                config.metrics_host,
                config.metrics_port,
                healthy=lambda: True,
                ready=lambda: readiness(client, keys),
            )
        except ProbeServerError as exc:
            print(f"adr serve: {exc}", file=sys.stderr)
            return EXIT_USAGE

    async def startup() -> None:
        anyio.to_thread.current_default_thread_limiter().total_tokens = config.threads

    app.on_startup.append(startup)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=config.host,
            port=config.port,
            log_config=None,
            access_log=False,
            lifespan="on",
        )
    )
    _log.info("serving", extra={"config": repr(config)})
    # uvicorn stops on SIGTERM/SIGINT and then raises the signal again under the handlers it
    # found: these, so that a stop by signal ends the process with status 0, not killed.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    try:
        server.run()
    finally:
        client.close()
    # uvicorn returns after a signal; a socket it could not bind ends it with started False.
    return EXIT_OK if server.started else EXIT_USAGE
