"""Loopback ports for the local servers."""

from __future__ import annotations

import contextlib
import socket

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def port_open(port: int, host: str = LOOPBACK, timeout: float = 0.2) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False
