"""`adr demo --duration N` runs the whole pipeline on its own local stack and stops it all."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from stack._procs import pid_alive

pytestmark = pytest.mark.integration  # starts servers of its own


def test_demo_runs_end_to_end_and_leaves_nothing_running() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL")}
    argv = [
        sys.executable, "-m", "adr_cli", "demo", "--duration", "30", "--players", "60",
        "--arenas", "4", "--rate", "200", "--calibrate-every", "5", "--refresh", "2",
        "--top", "5",
    ]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-4000:]

    frames = done.stdout.split("adr-stream demo:")[1:]
    assert len(frames) >= 5  # refreshed every 2 s for 30 s
    placed = [int(m) for m in re.findall(r"(\d+) placed players", done.stdout)]
    assert placed and placed[-1] > 0
    counts = re.findall(r"events: (\d+) consumed, (\d+) rated", done.stdout)
    consumed, rated = map(int, counts[-1])
    assert consumed >= rated > 0
    last = frames[-1].splitlines()
    rows = [line.split() for line in last[3:] if line.strip()]
    assert 0 < len(rows) <= 5
    assert [int(r[0]) for r in rows] == list(range(1, len(rows) + 1))
    mus = [float(r[2]) for r in rows]
    assert mus == sorted(mus, reverse=True)

    pids = [int(p) for p in re.findall(r"pid (\d+)", done.stderr)]
    assert len(pids) == 7  # Kafka, redis-server, consume, calibrate, history, serve, simulate
    assert re.search(r"^leaderboard page and API: http://127\.0\.0\.1:\d+/$", done.stdout, re.M)
    assert not any(pid_alive(p) for p in pids)
    assert "stopped the local Kafka broker and redis-server" in done.stderr


def test_demo_secured_runs_over_sasl_ssl_and_tls_redis_with_acl_users() -> None:
    argv = [
        sys.executable, "-m", "adr_cli", "demo", "--secured", "--duration", "25",
        "--players", "60", "--arenas", "4", "--rate", "200", "--calibrate-every", "5",
        "--refresh", "2", "--top", "5",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "secured Kafka broker (SASL_SSL)" in done.stderr
    assert re.search(r"Redis rediss://adr-consumer:\*\*\*@", done.stderr)
    assert not re.search(r"://[\w-]+:(?!\*\*\*@)[^@\s]+@", done.stdout + done.stderr)
    placed = [int(m) for m in re.findall(r"(\d+) placed players", done.stdout)]
    assert placed and placed[-1] > 0
    counts = re.findall(r"events: (\d+) consumed, (\d+) rated", done.stdout)
    consumed, rated = map(int, counts[-1])
    assert consumed >= rated > 0
    pids = [int(p) for p in re.findall(r"pid (\d+)", done.stderr)]
    assert len(pids) == 5  # simulate, consume, calibrate, history, serve (the servers are ours)
    assert not any(pid_alive(p) for p in pids)
