"""Every Redis the project starts runs the settings docs/operations.md recommends."""

from __future__ import annotations

from pathlib import Path

import redis
import yaml

from stack._redis import RECOMMENDED_SETTINGS, RedisServer

REPO = Path(__file__).resolve().parents[2]


def _config(server: RedisServer, name: str) -> str:
    client = redis.Redis.from_url(server.url, decode_responses=True)
    try:
        return str(client.config_get(name)[name])
    finally:
        client.close()


def test_the_local_redis_keeps_player_hashes_compact(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "recommended")
    server.start()
    try:
        assert _config(server, "hash-max-listpack-value") == "256"
    finally:
        server.stop()
    bare = RedisServer(tmp_path / "bare", settings=())  # what bench/redis_memory.py compares
    bare.start()
    try:
        assert _config(bare, "hash-max-listpack-value") == "64"  # Redis' own default
    finally:
        bare.stop()


def test_compose_redis_runs_the_same_settings() -> None:
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    command = services["redis"]["command"]
    assert command[0] == "redis-server"
    at = command.index(RECOMMENDED_SETTINGS[0])
    assert tuple(command[at : at + len(RECOMMENDED_SETTINGS)]) == RECOMMENDED_SETTINGS
