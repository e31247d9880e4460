"""Child processes of the local stack: spawn with a log file, stop politely, never leak."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_LOG_TAIL_BYTES = 4000


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: the kernel sends SIGTERM to the child when the
    # process that started it dies, even by SIGKILL, so a killed test run leaves nothing behind.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def spawn(
    argv: Sequence[str],
    log_path: Path,
    *,
    tied_to_parent: bool,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session with stdout+stderr appended to ``log_path``.

    ``tied_to_parent`` makes the child die with this process (test sessions, ``adr demo``);
    ``adr stack up`` leaves it off so the servers outlive the command.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        preexec: Callable[[], None] | None = _die_with_parent if tied_to_parent else None
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a terminal's Ctrl-C reaches us, and we stop them in order
            preexec_fn=preexec,
            env=env,
        )


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` names a live process (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The state field follows the parenthesised command name, which may itself contain spaces.
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in ("Z", "X")


def pid_cmdline(pid: int) -> list[str]:
    """The argv of ``pid``, or [] when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def pid_rss_bytes(pid: int) -> int | None:
    """Resident set size of ``pid`` in bytes, or None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def stop_pid(pid: int, *, timeout: float, popen: subprocess.Popen[bytes] | None = None) -> bool:
    """SIGTERM ``pid``, wait up to ``timeout`` s, then SIGKILL. True if it stopped on SIGTERM."""
    if not _alive(pid, popen):
        return True
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid, popen):
            return True
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(pid, popen) and time.monotonic() < deadline:
        time.sleep(0.05)
    return False


def _alive(pid: int, popen: subprocess.Popen[bytes] | None) -> bool:
    if popen is not None:
        return popen.poll() is None  # reaps our own child, so it never lingers as a zombie
    return pid_alive(pid)


def log_tail(path: Path, limit: int = _LOG_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a log file, for error messages."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return "(no log)"
