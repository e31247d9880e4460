"""The stack stops what it started: no JVM or redis-server outlives its owner.

Each case runs a real owner in a child process (an inner pytest session using the suite's own
fixtures, or ``adr stack``) and checks the processes it reports are gone afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from confluent_kafka.admin import AdminClient

from stack._ports import port_open
from stack._procs import pid_alive, pid_cmdline

pytestmark = pytest.mark.integration  # starts servers of its own

_INNER_CONFTEST = """
from stack.testing import adr_servers, kafka_bootstrap, redis_url  # noqa: F401
"""
_INNER_TEST = """
import json, os, time
from pathlib import Path


def test_uses_both(adr_servers, kafka_bootstrap, redis_url):
    pids = adr_servers.local.pids()
    Path(os.environ["PIDS_FILE"]).write_text(json.dumps(
        {"pids": pids, "workdir": str(adr_servers.local.workdir)}))
    if os.environ.get("HANG"):
        time.sleep(600)
"""


def _child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL")}
    env.update(ADR_STACK_BACKEND="local", **extra)
    return env


def _wait_gone(pids: list[int], timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if pid_alive(p)]


def _inner_session(tmp_path: Path, hang: bool) -> tuple[subprocess.Popen[bytes], Path]:
    (tmp_path / "conftest.py").write_text(_INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(_INNER_TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    pids_file = tmp_path / "pids.json"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
            str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), str(tmp_path)]  # fmt: skip
    env = _child_env(PIDS_FILE=str(pids_file), **({"HANG": "1"} if hang else {}))
    proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)  # fmt: skip
    return proc, pids_file


def _read_pids(proc: subprocess.Popen[bytes], pids_file: Path) -> dict[str, object]:
    deadline = time.monotonic() + 180
    while not pids_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"inner session ended before starting the stack:\n{out}")
        time.sleep(0.1)
    time.sleep(0.1)
    info: dict[str, object] = json.loads(pids_file.read_text())
    return info


def test_session_end_stops_broker_and_redis(tmp_path: Path) -> None:
    proc, pids_file = _inner_session(tmp_path, hang=False)
    out = proc.communicate(timeout=300)[0].decode()
    assert proc.returncode == 0, out
    info = json.loads(pids_file.read_text())
    pids = info["pids"]
    assert len(pids) == 2
    assert _wait_gone(pids, timeout=1) == []
    assert not Path(info["workdir"]).exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_killed_session_leaves_no_servers(tmp_path: Path, sig: signal.Signals) -> None:
    proc, pids_file = _inner_session(tmp_path, hang=True)
    try:
        info = _read_pids(proc, pids_file)
        pids = info["pids"]
        assert isinstance(pids, list) and len(pids) == 2
        commands = [" ".join(pid_cmdline(p)) for p in pids]
        assert any("kafka.Kafka" in c for c in commands) and any(
            "redis-server" in c for c in commands
        )
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _wait_gone(pids) == [], f"still running after {sig.name}: {commands}"
    # A SIGKILLed owner cannot remove its work folder; the servers are gone, so tidy up here.
    shutil.rmtree(str(info["workdir"]), ignore_errors=True)


def test_stack_cli_up_status_down(tmp_path: Path) -> None:
    env = _child_env(ADR_STACK_STATE=str(tmp_path / "state.json"))

    def adr(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "adr_cli", "stack", *args], env=env,
                              capture_output=True, text=True, timeout=240, check=False)  # fmt: skip

    from stack import free_port

    kafka_port = free_port()
    up = adr("up", "--kafka-port", str(kafka_port))  # the controller's port left to pick
    assert up.returncode == 0, up.stderr
    try:
        lines = dict(line.split("=", 1) for line in up.stdout.splitlines())
        assert set(lines) == {"KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL"}
        assert lines["KAFKA_BOOTSTRAP_SERVERS"] == f"127.0.0.1:{kafka_port}"
        admin = AdminClient({"bootstrap.servers": lines["KAFKA_BOOTSTRAP_SERVERS"]})
        assert len(admin.list_topics(timeout=10).brokers) == 1
        assert redis.Redis.from_url(lines["REDIS_URL"]).ping()

        status = adr("status")
        assert status.returncode == 0, status.stderr
        assert status.stdout == up.stdout
        again = adr("up", "--kafka-port", str(kafka_port))  # idempotent: reports the running stack
        assert again.returncode == 0 and again.stdout == up.stdout

        state = json.loads((tmp_path / "state.json").read_text())
        pids = [s["pid"] for s in state["servers"]]
        ports = [s["port"] for s in state["servers"]]
        assert all(pid_alive(p) for p in pids)
    finally:
        down = adr("down")
    assert down.returncode == 0, down.stderr
    assert _wait_gone(pids, timeout=1) == []
    assert not any(port_open(p) for p in ports)
    assert not Path(state["workdir"]).exists()
    assert adr("status").returncode == 3
