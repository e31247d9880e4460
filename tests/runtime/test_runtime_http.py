"""The probe endpoint (/metrics, /healthz, /readyz): a port it cannot listen on is a clear error
and exit code 2 for `adr consume` and `adr calibrate`, never a traceback."""

from __future__ import annotations

import logging
import socket
import struct
import subprocess
import sys
import time
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


CLIENTS = 10


def test_a_client_gone_before_its_answer_is_counted_not_a_traceback(
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scraper that closes the connection (here: a reset) before the answer is written: the
    server's write fails with BrokenPipe/ConnectionReset, which socketserver would print as a
    raw traceback on stderr; it is counted and logged at debug level instead."""
    from prometheus_client import Counter, Gauge

    from runtime.http import DISCONNECTS_HELP

    registry = CollectorRegistry()
    big = Gauge("big", "a /metrics body larger than the socket buffers", ["i"], registry=registry)
    for i in range(30_000):
        big.labels(str(i)).set(i)
    gone = Counter("adr_probe_disconnects", DISCONNECTS_HELP, registry=registry)
    server = serve_probes(registry, "127.0.0.1", 0, lambda: True, lambda: (True, ""), gone.inc)
    port = server.server_address[1]
    caplog.set_level(logging.DEBUG, logger="adr.http")
    # An earlier test of the session may have left a JSON handler on a stream pytest has since
    # closed; logging would print its own "--- Logging error ---" traceback for it, which is
    # not what this test looks for (socketserver's raw traceback of the failed write).
    monkeypatch.setattr(logging, "raiseExceptions", False)
    try:
        for _ in range(CLIENTS):
            client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            # a small receive window: the server cannot hand the whole body to the kernel
            # before the reset (loopback buffers autotune to megabytes otherwise)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect(("127.0.0.1", port))
            client.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            client.recv(100)  # the server is writing
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # a reset: the rest of the answer has nowhere to go

        def counted() -> float:
            value = registry.get_sample_value("adr_probe_disconnects_total")
            return 0.0 if value is None else value

        # The server threads see the resets when they next write (later on a loaded machine);
        # a reset that comes after the whole answer was buffered is no error to the server:
        # most, not necessarily all, of the writes fail.
        deadline = time.monotonic() + 15.0
        while counted() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert 1 <= counted() <= CLIENTS
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
            assert reply.read() == b"ok\n"  # still serving
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    early = [r for r in caplog.records if r.name == "adr.http"]
    assert len(early) == counted() and all(r.levelno == logging.DEBUG for r in early)
