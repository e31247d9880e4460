"""Where the fixtures' servers come from: environment first, then Docker, then the local stack."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from stack import SessionServers, docker_answers
from stack import _endpoints as endpoints
from stack._procs import pid_alive


def test_environment_endpoints_win_and_start_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "broker.example:9092")
    monkeypatch.setenv("REDIS_URL", "redis://cache.example:6379/3")
    monkeypatch.delenv("ADR_STACK_BACKEND", raising=False)
    servers = SessionServers()
    try:
        assert servers.kafka_bootstrap() == "broker.example:9092"
        assert servers.redis_url() == "redis://cache.example:6379/3"
        assert servers.sources == {
            "kafka": "$KAFKA_BOOTSTRAP_SERVERS",
            "redis": "$REDIS_URL",
        }
        assert servers.local is None
    finally:
        servers.close()


def test_backend_local_ignores_the_environment_and_cleans_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://cache.example:6379/3")
    monkeypatch.setenv("ADR_STACK_BACKEND", "local")
    servers = SessionServers()
    try:
        url = servers.redis_url()
        assert url.startswith("redis://127.0.0.1:") and url != "redis://cache.example:6379/3"
        assert redis.Redis.from_url(url).ping()
        local = servers.local
        assert local is not None and local.redis.pid is not None
        pid, workdir = local.redis.pid, local.workdir
        assert local.kafka.pid is None  # lazy: nobody asked for Kafka
    finally:
        servers.close()
    assert not pid_alive(pid)
    assert not workdir.exists()


def test_unknown_backend_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADR_STACK_BACKEND", "fakeredis")
    with pytest.raises(ValueError, match="ADR_STACK_BACKEND"):
        SessionServers().redis_url()


def test_no_docker_engine_means_the_local_stack(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(endpoints, "_DOCKER_SOCKET", tmp_path / "docker.sock")
    assert docker_answers() is False
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'nothing-listens.sock'}")
    assert docker_answers() is False
