"""Where tests find Kafka and Redis: the environment, else Docker, else the local stack."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stack._local import LocalStack
from stack._redis import RECOMMENDED_SETTINGS

BACKENDS = ("auto", "env", "docker", "local")
_DOCKER_SOCKET = Path("/var/run/docker.sock")


def backend() -> str:
    """``$ADR_STACK_BACKEND``: auto (default), docker or local."""
    chosen = os.environ.get("ADR_STACK_BACKEND", "auto").strip().lower() or "auto"
    if chosen not in BACKENDS:
        raise ValueError(f"ADR_STACK_BACKEND must be one of {', '.join(BACKENDS)}, not {chosen!r}")
    return chosen


def docker_answers() -> bool:
    """Whether a Docker engine answers a ping within a few seconds."""
    if not (os.environ.get("DOCKER_HOST") or _DOCKER_SOCKET.exists()):
        return False  # skip the docker SDK import and its timeout on machines without Docker
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception:  # any failure means "no usable engine"
        return False
    return True


class SessionServers:
    """One Kafka and one Redis for a whole test session, each started on first use.

    Per server, in this order: ``KAFKA_BOOTSTRAP_SERVERS`` / ``REDIS_URL``; else a testcontainers
    container when a Docker engine answers; else the local stack (:class:`LocalStack`).
    ``ADR_STACK_BACKEND=local`` or ``=docker`` skips the choice.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kafka: str | None = None
        self._redis: str | None = None
        self._local: LocalStack | None = None
        self._containers: list[Any] = []
        self._docker: bool | None = None
        self.sources: dict[str, str] = {}

    def kafka_bootstrap(self) -> str:
        """A ``host:port`` bootstrap address of a real broker."""
        with self._lock:
            if self._kafka is None:
                self._kafka = self._resolve(
                    "kafka",
                    "KAFKA_BOOTSTRAP_SERVERS",
                    _kafka_container,
                    lambda s: s.kafka_bootstrap(),
                )
            return self._kafka

    def redis_url(self) -> str:
        """A ``redis://`` URL of a real redis-server."""
        with self._lock:
            if self._redis is None:
                self._redis = self._resolve(
                    "redis", "REDIS_URL", _redis_container, lambda s: s.redis_url()
                )
            return self._redis

    @property
    def local(self) -> LocalStack | None:
        """The local stack, if one was needed."""
        return self._local

    def close(self) -> None:
        """Stop every container and local server this object started."""
        for container in reversed(self._containers):
            with contextlib.suppress(Exception):
                container.stop()
        self._containers.clear()
        if self._local is not None:
            self._local.stop()

    def _resolve(
        self,
        name: str,
        env_var: str,
        from_container: Callable[[list[Any]], str],
        from_local: Callable[[LocalStack], str],
    ) -> str:
        chosen = backend()
        value = os.environ.get(env_var, "").strip()
        if value and chosen in ("auto", "env"):
            self.sources[name] = f"${env_var}"
            return value
        if chosen == "docker" or (chosen == "auto" and self._docker_ok()):
            self.sources[name] = "testcontainers"
            return from_container(self._containers)
        if chosen == "env":
            raise RuntimeError(f"ADR_STACK_BACKEND=env but {env_var} is not set")
        if self._local is None:
            self._local = LocalStack()
            self._local.stop_on_exit()
        self.sources[name] = f"local stack ({self._local.workdir})"
        started = from_local(self._local)
        print(f"\n[adr-stack] {name}: {started} from {self.sources[name]}", file=sys.stderr)
        return started

    def _docker_ok(self) -> bool:
        if self._docker is None:
            self._docker = docker_answers()
        return self._docker


def _kafka_container(started: list[Any]) -> str:
    try:
        from testcontainers.community.kafka import KafkaContainer
    except ImportError:
        from testcontainers.kafka import KafkaContainer
    image = os.environ.get("ADR_TEST_KAFKA_IMAGE", "confluentinc/cp-kafka:7.6.0")
    container = KafkaContainer(image).with_kraft()
    container.start()
    started.append(container)
    return str(container.get_bootstrap_server())


def _redis_container(started: list[Any]) -> str:
    try:
        from testcontainers.community.redis import RedisContainer
    except ImportError:
        from testcontainers.redis import RedisContainer
    container = RedisContainer(os.environ.get("ADR_TEST_REDIS_IMAGE", "redis:7"))
    container.with_command(" ".join(("redis-server", *RECOMMENDED_SETTINGS)))
    container.start()
    started.append(container)
    host = container.get_container_host_ip()
    port = container.get_exposed_port(6379)
    return f"redis://{host}:{port}/0"
