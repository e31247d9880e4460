"""`adr serve` as a process: uvicorn serving the API and the page on its port as the read-only
user, stopping on SIGTERM with status 0; bad settings exit 2, Redis down at start exits 3."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from stack import RedisServer
from stack._ports import free_port
from tests.http_api.conftest import ORDER, reader_url

pytestmark = pytest.mark.integration

_ADR = [sys.executable, "-m", "adr_cli.main", "serve"]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_serves_the_api_and_the_page_and_stops_on_sigterm(acl_server: RedisServer) -> None:
    port = free_port()
    env = {**os.environ, "REDIS_URL": reader_url(acl_server.port), "ADR_SERVE_PORT": str(port)}
    proc = subprocess.Popen(_ADR, env=env, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if _get(base + "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "adr serve did not start"
            time.sleep(0.2)
        status, body = _get(base + "/v1/top?limit=100")
        assert status == 200
        assert [r["player"] for r in json.loads(body)["rows"]] == ORDER
        status, page = _get(base + "/")
        assert status == 200 and b"<script" in page
        assert _get(base + "/v1/rank?player=" + "x" * 100)[0] == 400
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "r-93c4" not in err  # the password never reaches the log


def test_bad_settings_exit_2_and_redis_down_exits_3() -> None:
    bad = subprocess.run([*_ADR, "--ties", "dense"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "ties" in bad.stderr
    down = subprocess.run(
        [*_ADR, "--redis-url", f"redis://127.0.0.1:{free_port()}/0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert down.returncode == 3 and "Redis" in down.stderr
