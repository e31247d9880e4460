"""docker-compose.yml is valid and its Kafka/Redis services are wired consistently.

`docker compose config` runs where Docker exists; everywhere, the file is parsed and checked.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"
_VAR = re.compile(r"\$\{(\w+):-([^}]*)\}")


def _load() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def _expand(value: str) -> str:
    """Compose's ``${NAME:-default}`` with the defaults (what a plain `docker compose up` uses)."""
    return _VAR.sub(lambda m: m.group(2), value)


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: _expand(str(v)) for k, v in env.items()}


def _by_name(listeners: str) -> dict[str, str]:
    return {item.split("://")[0]: item for item in listeners.split(",")}


def test_services_images_and_references_exist() -> None:
    data = _load()
    services = data["services"]
    assert {"kafka", "redis"} <= set(services)
    named_volumes = set(data.get("volumes") or {})
    for name, service in services.items():
        assert service.get("image") or service.get("build"), f"{name}: no image or build"
        deps = service.get("depends_on", [])
        for dep in deps if isinstance(deps, list) else list(deps):
            assert dep in services, f"{name} depends on unknown service {dep}"
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0] if isinstance(volume, str) else volume["source"]
            if not source.startswith((".", "/", "~")):
                assert source in named_volumes, f"{name}: undeclared volume {source}"
        assert "healthcheck" in service or name not in ("kafka", "redis")


def test_kafka_listeners_are_consistent() -> None:
    env = _env(_load()["services"]["kafka"])
    protocol = dict(p.split(":") for p in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    listeners = _by_name(env["KAFKA_LISTENERS"])
    advertised = _by_name(env["KAFKA_ADVERTISED_LISTENERS"])
    assert set(listeners) <= set(protocol)
    assert set(advertised) <= set(listeners)
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] in listeners
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] not in advertised
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] in advertised
    # `kafka-storage format -t` accepts only a Kafka Uuid: 16 bytes in URL-safe base64.
    cluster_id = env["CLUSTER_ID"]
    assert len(cluster_id) == 22 and len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
    node, voter = env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split("@")
    assert node == env["KAFKA_NODE_ID"]
    assert voter.split(":")[1] == listeners["CONTROLLER"].rsplit(":", 1)[1]
    assert advertised["HOST"] == "HOST://localhost:9092"
    assert advertised["DOCKER"] == "DOCKER://kafka:29092"
    # A single broker cannot hold more replicas than one.
    for key in (
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR",
        "KAFKA_DEFAULT_REPLICATION_FACTOR",
    ):
        assert env[key] == "1", key


def test_other_services_reach_kafka_and_redis_inside_the_network() -> None:
    services = _load()["services"]
    for name, service in services.items():
        env = _env(service)
        if "KAFKA_BOOTSTRAP_SERVERS" in env:
            assert env["KAFKA_BOOTSTRAP_SERVERS"] == "kafka:29092", name
        if "REDIS_URL" in env:
            assert env["REDIS_URL"].startswith("redis://redis:6379"), name


@pytest.mark.skipif(shutil.which("docker") is None, reason="docker CLI not installed here")
def test_docker_compose_config_accepts_the_file() -> None:
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("docker compose plugin not installed")
    done = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config", "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
