"""The probe endpoint (/metrics, /healthz, /readyz): a port it cannot listen on is a clear error
and exit code 2 for `adr consume` and `adr calibrate`, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from runtime import ProbeServerError, RuntimeConfigError
from runtime.http import serve_probes


@pytest.fixture
def held_port() -> Iterator[int]:
    """A loopback port another socket listens on."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


def test_a_port_in_use_is_a_probe_server_error_naming_it(held_port: int) -> None:
    with pytest.raises(ProbeServerError, match=f"127.0.0.1:{held_port}") as caught:
        serve_probes(CollectorRegistry(), "127.0.0.1", held_port, lambda: True, lambda: (True, ""))
    assert isinstance(caught.value, RuntimeConfigError)
    server = serve_probes(CollectorRegistry(), "127.0.0.1", 0, lambda: True, lambda: (True, "x"))
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as reply:
            assert reply.read() == b"ready x\n"
    finally:
        server.shutdown()
        server.server_close()


def _adr(*argv: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "adr_cli.main", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_consume_exits_2_when_its_metrics_port_is_taken(
    held_port: int, kafka_bootstrap: str, redis_url: str
) -> None:
    done = _adr(
        "consume", "--bootstrap-servers", kafka_bootstrap, "--redis-url", redis_url,
        "--metrics-host", "127.0.0.1", "--metrics-port", str(held_port),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "cannot serve metrics" in done.stderr and f":{held_port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_calibrate_exits_2_when_its_metrics_port_is_taken(
    held_port: int, kafka_bootstrap: str, redis_url: str
) -> None:
    done = _adr(
        "calibrate", "--bootstrap-servers", kafka_bootstrap, "--redis-url", redis_url,
        "--every", "60", "--metrics-host", "127.0.0.1", "--metrics-port", str(held_port),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"cannot serve /metrics on 127.0.0.1:{held_port}" in done.stderr
    assert "Traceback" not in done.stderr
