"""bench/_stack.py, the one stack start of every bench: the servers named (a bench's flag, else
KAFKA_BOOTSTRAP_SERVERS / REDIS_URL) are used as they are, else a LocalStack of the bench's own
serves, stopped however the bench leaves."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import redis

from stack._procs import pid_alive

REPO = Path(__file__).resolve().parents[2]


def _bench_stack() -> ModuleType:
    """bench/_stack.py as the benches import it (bench/ is their sys.path[0], not a package)."""
    spec = importlib.util.spec_from_file_location("_bench_stack", REPO / "bench" / "_stack.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_named_servers_are_used_and_none_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    bench_servers = _bench_stack().bench_servers
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "broker.invalid:9092")
    monkeypatch.setenv("REDIS_URL", "redis://redis.invalid:6379/0")
    with bench_servers() as servers:
        assert (servers.kafka_bootstrap, servers.redis_url, servers.started) == (
            "broker.invalid:9092", "redis://redis.invalid:6379/0", False,
        )  # fmt: skip
    with bench_servers(kafka=False) as servers:  # a Redis-only bench: no broker asked for
        assert (servers.kafka_bootstrap, servers.redis_url, servers.local) == (
            "", "redis://redis.invalid:6379/0", None,
        )  # fmt: skip
    with bench_servers(kafka=False, redis_url="redis://flag.invalid:1/0") as servers:
        assert servers.redis_url == "redis://flag.invalid:1/0"  # the bench's flag over REDIS_URL


def test_otherwise_a_local_server_of_its_own_stopped_however_the_bench_leaves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REDIS_URL unset, or a bench's flag given empty (tierjob_bench's `--redis-url ''`) over a
    set one: a redis-server of the bench's own that answers, gone with its folder after the
    block, also when the block raises."""
    bench_servers = _bench_stack().bench_servers
    monkeypatch.delenv("REDIS_URL", raising=False)
    for given in (None, ""):
        if given == "":
            monkeypatch.setenv("REDIS_URL", "redis://redis.invalid:6379/0")
        with (
            pytest.raises(RuntimeError, match="the bench failed"),
            bench_servers(kafka=False, redis_url=given) as servers,
        ):
            assert servers.started and servers.kafka_bootstrap == ""
            assert servers.local is not None
            pid, folder = servers.local.redis.pid, servers.local.workdir
            assert pid is not None and not servers.local.kafka.pid  # Redis only
            client = redis.Redis.from_url(servers.redis_url)
            assert client.ping()
            client.close()
            raise RuntimeError("the bench failed")
        assert not pid_alive(pid)
        assert not folder.exists()
