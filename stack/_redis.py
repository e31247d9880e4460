"""The stack's one redis-server process class: a child process on loopback, files under a work
folder (throw-away by default; secured and managed set-ups pass their own arguments)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from stack._errors import StackError
from stack._ports import LOOPBACK, free_port, port_open
from stack._procs import log_tail, spawn, stop_pid
from stack._provision import redis_server_bin

START_ATTEMPTS = 3


RECOMMENDED_SETTINGS: Final = ("--hash-max-listpack-value", "256")
"""What docs/operations.md tells operators to set: player hashes (with their `window`) stay
listpacks, which roughly halves Redis's memory per player and saves Redis CPU per event
(measured: docs/operations.md, "Redis sizing")."""


@dataclass
class RedisServer:
    """One redis-server child process, its log in `workdir`.

    By default a throw-away loopback server: no RDB, no AOF, `settings` added to the stack's own
    arguments, ready when it answers PING. `argv` replaces the whole command line after the
    binary (a TLS-only port, a Sentinel: stack/secured.py), and `ready_line` makes it ready when
    its log shows that line instead (a TLS port does not answer a plain PING).
    """

    workdir: Path
    port: int = 0  # 0: a free port, chosen at start
    tied_to_parent: bool = True
    settings: tuple[str, ...] = RECOMMENDED_SETTINGS
    """redis-server arguments beyond the stack's own; () runs Redis' defaults."""
    argv: tuple[str, ...] | None = None
    """The arguments instead of the stack's own and `settings` (then `port` must be given)."""
    ready_line: str | None = None
    """Ready once the log written since this start holds this line; None: once PING answers."""
    pid: int | None = None
    _popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://{LOOPBACK}:{self.port}/0"

    @property
    def log_path(self) -> Path:
        """redis-server's log file."""
        return self.workdir / "redis.log"

    def start(self, timeout: float = 30.0) -> str:
        """Start redis-server and wait until it is ready; return its URL."""
        binary = redis_server_bin()
        pick_port = self.port == 0
        self.workdir.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, START_ATTEMPTS + 1):
            if pick_port:
                self.port = free_port()
            args = self.argv
            if args is None:
                args = (
                    "--bind", LOOPBACK, "--port", str(self.port),
                    "--save", "", "--appendonly", "no", "--daemonize", "no",
                    "--dir", str(self.workdir), "--logfile", "", *self.settings,
                )  # fmt: skip
            log_from = self.log_path.stat().st_size if self.log_path.exists() else 0
            self._popen = spawn([binary, *args], self.log_path, tied_to_parent=self.tied_to_parent)
            self.pid = self._popen.pid
            try:
                self._wait_ready(timeout, log_from)
                return self.url
            except StackError:
                self.stop()
                clash = "Address already in use" in log_tail(self.log_path)
                if not (pick_port and clash and attempt < START_ATTEMPTS):
                    raise
        raise AssertionError("unreachable")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (redis exits at once without persistence), SIGKILL after ``timeout`` s."""
        # Only a process we hold a handle on: a bare pid may have been reused since.
        if self._popen is not None:
            stop_pid(self._popen.pid, timeout=timeout, popen=self._popen)
            self._popen = None

    def kill(self) -> None:
        """SIGKILL: redis-server exits without saving anything."""
        if self._popen is not None:
            self._popen.kill()
            self._popen.wait(30)
            self._popen = None

    def restart(self, down_s: float = 1.0) -> None:
        """`stop`, stay down `down_s` seconds, `start` again on the same port and work folder."""
        self.stop()
        time.sleep(down_s)
        self.start()

    def alive(self) -> bool:
        """Whether the redis-server process is running."""
        return self._popen is not None and self._popen.poll() is None

    def _ready(self, log_from: int) -> bool:
        if self.ready_line is not None:
            with open(self.log_path, "rb") as log:
                log.seek(log_from)
                return self.ready_line.encode() in log.read()
        import redis

        if not port_open(self.port):
            return False
        client = redis.Redis(host=LOOPBACK, port=self.port, socket_timeout=1)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def _wait_ready(self, timeout: float, log_from: int) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise StackError(
                    f"redis-server exited while starting; log: {self.log_path}\n"
                    f"{log_tail(self.log_path)}"
                )
            if self._ready(log_from):
                return
            time.sleep(0.05)
        awaited = "answer PING" if self.ready_line is None else f"log {self.ready_line!r}"
        raise StackError(
            f"redis-server did not {awaited} within {timeout:.0f} s; log: {self.log_path}\n"
            f"{log_tail(self.log_path)}"
        )
