"""One redis-server on loopback, no persistence, files under a work folder."""

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
    """A throw-away redis-server: no RDB, no AOF; state lives as long as the process."""

    workdir: Path
    port: int = 0  # 0: a free port, chosen at start
    tied_to_parent: bool = True
    settings: tuple[str, ...] = RECOMMENDED_SETTINGS
    """redis-server arguments beyond the stack's own; () runs Redis' defaults."""
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
        """Start redis-server and wait until it answers PING; return its URL."""
        binary = redis_server_bin()
        pick_port = self.port == 0
        self.workdir.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, START_ATTEMPTS + 1):
            if pick_port:
                self.port = free_port()
            argv = [
                binary, "--bind", LOOPBACK, "--port", str(self.port),
                "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--dir", str(self.workdir), "--logfile", "", *self.settings,
            ]  # fmt: skip
            self._popen = spawn(argv, self.log_path, tied_to_parent=self.tied_to_parent)
            self.pid = self._popen.pid
            try:
                self._wait_ready(timeout)
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

    def alive(self) -> bool:
        """Whether the redis-server process is running."""
        return self._popen is not None and self._popen.poll() is None

    def _wait_ready(self, timeout: float) -> None:
        import redis

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise StackError(
                    f"redis-server exited while starting; log: {self.log_path}\n"
                    f"{log_tail(self.log_path)}"
                )
            if port_open(self.port):
                client = redis.Redis(host=LOOPBACK, port=self.port, socket_timeout=1)
                try:
                    if client.ping():
                        return
                except redis.RedisError:
                    pass
                finally:
                    client.close()
            time.sleep(0.05)
        raise StackError(
            f"redis-server did not answer PING within {timeout:.0f} s; log: {self.log_path}\n"
            f"{log_tail(self.log_path)}"
        )
