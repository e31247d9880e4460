"""`adr demo` runs the whole pipeline on its own local stack and stops it all: on SIGTERM once its
view shows rated events and placed players (a fixed `--duration` would wait past that), and at
`--duration` (the view's loop, on the session's redis-server)."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stack import demo
from stack._ports import free_port
from stack._procs import pid_alive

pytestmark = pytest.mark.integration  # starts servers of its own

VIEW = ["--players", "60", "--arenas", "4", "--rate", "200", "--calibrate-every", "5",
        "--refresh", "2", "--top", "5"]  # fmt: skip
UPPER_BOUND_S = 180
"""`--duration` of the runs stopped by SIGTERM: only a bound if the view never gets there."""


def _board_rows(frame: str) -> list[list[str]]:
    """The leaderboard rows of one frame of the view (after its header, counts and column
    lines)."""
    return [line.split() for line in frame.splitlines()[3:] if line.strip()]


def _rated_and_placed(frame: str) -> bool:
    """The frame shows rated events, placed players and leaderboard rows."""
    placed = re.findall(r"(\d+) placed players", frame)
    counts = re.findall(r"events: (\d+) consumed, (\d+) rated", frame)
    return (
        bool(placed and counts and _board_rows(frame))
        and int(placed[-1]) > 0
        and int(counts[-1][1]) > 0
    )


def _run_until_rated(argv: list[str], env: dict[str, str], tmp_path: Path) -> tuple[int, str, str]:
    """`adr demo` until its view has refreshed 5 times and a frame shows rated events and
    placed players; then SIGTERM at the next frame's start; (exit status, stdout, stderr).
    Fails if the view never got there (the demo then ends at the `--duration` bound).

    A frame is one write, so it is whole once the next one starts; the frame after a placed
    one shows placed players too, its board read after the count said there were some."""
    err_path = tmp_path / "demo.stderr"
    with err_path.open("w") as err:
        proc = subprocess.Popen(
            [*argv, "--duration", str(UPPER_BOUND_S)], env=env, stdout=subprocess.PIPE,
            stderr=err, text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        seen: list[str] = []
        signalled = False
        try:
            for line in proc.stdout:
                if line.startswith("adr-stream demo:"):
                    done = "".join(seen).split("adr-stream demo:")[1:]
                    if len(done) >= 5 and _rated_and_placed(done[-1]):
                        seen.append(line)
                        proc.send_signal(signal.SIGTERM)
                        signalled = True
                        break
                seen.append(line)
            # through the same buffered reader: the lines it read ahead are part of the rest
            # (communicate() would read the pipe itself and miss them)
            rest = proc.stdout.read()
            proc.wait(120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    stdout, stderr = "".join(seen) + rest, err_path.read_text()
    assert signalled, f"no frame with rated events and placed players:\n{stdout[-3000:]}"
    return proc.returncode, stdout, stderr


def test_demo_runs_end_to_end_and_leaves_nothing_running(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL")}
    argv = [sys.executable, "-m", "adr_cli", "demo", *VIEW]
    code, stdout, stderr = _run_until_rated(argv, env, tmp_path)
    assert code == 0, stderr[-4000:]

    frames = stdout.split("adr-stream demo:")[1:]
    assert len(frames) >= 5  # refreshed every 2 s
    placed = [int(m) for m in re.findall(r"(\d+) placed players", stdout)]
    assert placed and placed[-1] > 0
    counts = re.findall(r"events: (\d+) consumed, (\d+) rated", stdout)
    consumed, rated = map(int, counts[-1])
    assert consumed >= rated > 0
    rows = _board_rows(frames[-1])
    assert 0 < len(rows) <= 5
    assert [int(r[0]) for r in rows] == list(range(1, len(rows) + 1))
    mus = [float(r[2]) for r in rows]
    assert mus == sorted(mus, reverse=True)

    pids = [int(p) for p in re.findall(r"pid (\d+)", stderr)]
    assert len(pids) == 7  # Kafka, redis-server, consume, calibrate, history, serve, simulate
    assert re.search(r"^leaderboard page and API: http://127\.0\.0\.1:\d+/$", stdout, re.M)
    assert not any(pid_alive(p) for p in pids)
    assert "stopped the local Kafka broker and redis-server" in stderr


def test_demo_secured_runs_over_sasl_ssl_and_tls_redis_with_acl_users(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "adr_cli", "demo", "--secured", *VIEW]
    code, stdout, stderr = _run_until_rated(argv, dict(os.environ), tmp_path)
    assert code == 0, stderr[-4000:]
    assert "secured Kafka broker (SASL_SSL)" in stderr
    assert re.search(r"Redis rediss://adr-consumer:\*\*\*@", stderr)
    assert not re.search(r"://[\w-]+:(?!\*\*\*@)[^@\s]+@", stdout + stderr)
    placed = [int(m) for m in re.findall(r"(\d+) placed players", stdout)]
    assert placed and placed[-1] > 0
    counts = re.findall(r"events: (\d+) consumed, (\d+) rated", stdout)
    consumed, rated = map(int, counts[-1])
    assert consumed >= rated > 0
    pids = [int(p) for p in re.findall(r"pid (\d+)", stderr)]
    assert len(pids) == 5  # simulate, consume, calibrate, history, serve (the servers are ours)
    assert not any(pid_alive(p) for p in pids)


def test_the_view_ends_at_duration_with_status_0(redis_url: str, unique_name) -> None:
    """`--duration`: the view refreshes every `--refresh` s and returns 0 at the deadline (then
    run() stops the children and the stack as on SIGTERM, the path the tests above take)."""
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    args = parser.parse_args(
        ["--duration", "1.5", "--refresh", "0.4", "--top", "3", "--namespace", unique_name("ns")]
    )
    out = io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(out):
        code = demo._watch(args, redis_url, [], free_port())
    took = time.monotonic() - started
    assert code == demo.EXIT_OK
    assert 1.5 <= took < 10, took
    frames = out.getvalue().split("adr-stream demo:")[1:]
    assert 4 <= len(frames) <= 6, out.getvalue()  # at 0, 0.4, 0.8, 1.2 and 1.5 s
    assert "(consumer metrics not up yet)" in frames[-1]
