"""`adr calibrate --every` through Redis LOADING (restarted with its AOF, held loading a few
seconds by stack/loading.py): each run meanwhile fails, is logged and counted, and /readyz says
so; the process stays up and publishes at its next interval once Redis has loaded, only
snapshots of the whole population, each version once and in order on Redis and the topic."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from _tierjob_support import read_topic, write_random_players

from engine import Params
from redis_layout import Keys
from schemas import decode_tier_boundaries
from stack import free_port
from stack.loading import LoadingRedis

pytestmark = pytest.mark.integration  # starts a server of its own

PARAMS = Params()
PLAYERS = 30
FILLER_KEYS = 10_000
HOLD_S = 3.0


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _sample(port: int, line_start: str) -> float:
    """The value of the /metrics sample whose line starts with `line_start` (0 if absent)."""
    text = _get(port, "/metrics")[1]
    found = [line.rsplit(" ", 1)[1] for line in text.splitlines() if line.startswith(line_start)]
    return float(found[0]) if found else 0.0


def _until(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LoadingRedis]:
    loading = LoadingRedis(tmp_path / "redis")
    loading.start()
    yield loading
    loading.stop()


def test_calibrate_every_waits_through_loading_and_publishes_only_whole_snapshots(
    server: LoadingRedis, kafka_bootstrap: str, unique_name
) -> None:  # type: ignore[no-untyped-def]
    client = redis.Redis.from_url(server.url)
    ns, topic, port = unique_name("tj"), unique_name("tb"), free_port()
    snapshot = Keys.of(ns).snapshot
    now = int(time.time() * 1000)
    write_random_players(client, ns, PARAMS, PLAYERS, seed=19, last_ts=now - 60_000)
    server.fill(FILLER_KEYS)
    errors = 'adr_calibration_runs_total{outcome="error"}'
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "adr_cli", "calibrate", "--redis-url", server.url),
            *("--bootstrap-servers", kafka_bootstrap, "--namespace", ns, "--topic", topic),
            *("--every", "1", "--metrics-port", str(port)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    try:
        _until(lambda: client.hget(snapshot, "version") is not None, 30, "a first publication")
        server.restart_loading()
        _until(lambda: _sample(port, errors) >= 1, 30, "a run failed on LOADING")
        time.sleep(HOLD_S)
        assert server.loading() and proc.poll() is None
        status, text = _get(port, "/readyz")
        assert status == 503 and "last_run_ok=0" in text, (status, text)
        assert _get(port, "/healthz")[0] == 200  # the loop goes round: waiting, not stalled
        assert _sample(port, 'adr_errors_swallowed_total{where="calibrate"}') >= 1
        assert _sample(port, "adr_calibration_lease_held ") == 0
        failed_runs = _sample(port, errors)
        # Once an interval (1 s), not a busy loop: a failed run takes no less than a second.
        assert failed_runs <= HOLD_S + 3, failed_runs
        server.end_loading()
        _until(lambda: _get(port, "/readyz")[0] == 200, 30, "a run that published again")
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, log = proc.communicate(timeout=30)
    assert proc.returncode == 0, log[-3000:]
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    failed = [line for line in lines if line["msg"] == "calibration failed"]
    assert any("loading" in line["error"].lower() for line in failed), failed
    published = [line for line in lines if line["msg"] == "published"]
    assert lines.index(published[-1]) > lines.index(failed[-1])  # went on after the loading
    versions = [line["version"] for line in published]
    assert versions == sorted(set(versions))  # each once, in order
    assert int(client.hget(snapshot, "version") or 0) == versions[-1]
    # Every snapshot is of the whole population: none taken from a partly loaded dataset.
    assert {line["active_count"] for line in published} == {PLAYERS}
    messages = read_topic(kafka_bootstrap, topic)  # to the end: no more
    wire = [decode_tier_boundaries(m.value()) for m in messages]
    assert [m.version for m in wire] == versions
    assert {m.active_count for m in wire} == {PLAYERS}
