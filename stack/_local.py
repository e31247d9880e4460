"""The local stack: one Kafka broker and one redis-server, started lazily, always stopped."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from types import FrameType

from stack._errors import StackError
from stack._kafka import DEFAULT_HEAP_MB, KafkaBroker
from stack._redis import RedisServer

_HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class LocalStack:
    """Kafka + Redis as child processes of this one, in a fresh work folder.

    Each server starts on first request (``kafka_bootstrap()`` / ``redis_url()``); ``stop()``
    stops both and removes the folder unless a start failed (its logs are kept for reading).
    With ``tied_to_parent`` (the default) the servers also die if this process is killed.
    """

    def __init__(
        self,
        workdir: Path | None = None,
        *,
        kafka_port: int = 0,
        controller_port: int = 0,
        redis_port: int = 0,
        heap_mb: int = DEFAULT_HEAP_MB,
        tied_to_parent: bool = True,
    ) -> None:
        self._owns_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="adr-stack-"))
        self.kafka = KafkaBroker(
            self.workdir / "kafka",
            port=kafka_port,
            controller_port=controller_port,
            heap_mb=heap_mb,
            tied_to_parent=tied_to_parent,
        )
        self.redis = RedisServer(
            self.workdir / "redis", port=redis_port, tied_to_parent=tied_to_parent
        )
        self._kafka_started = False
        self._redis_started = False
        self._failed = False
        # A failed start is reported again to every later caller, not retried test after test.
        self._kafka_error: BaseException | None = None
        self._redis_error: BaseException | None = None
        self._lock = threading.Lock()

    def kafka_bootstrap(self) -> str:
        """Bootstrap address of the broker, starting it on first call."""
        with self._lock:
            if not self._kafka_started:
                self._kafka_started = True
                try:
                    self.kafka.start()
                except BaseException as e:
                    self._failed = True
                    self._kafka_error = e
                    raise
            if self._kafka_error is not None:
                raise StackError(f"the Kafka broker failed to start: {self._kafka_error}")
            return self.kafka.bootstrap

    def redis_url(self) -> str:
        """URL of the redis-server, starting it on first call."""
        with self._lock:
            if not self._redis_started:
                self._redis_started = True
                try:
                    self.redis.start()
                except BaseException as e:
                    self._failed = True
                    self._redis_error = e
                    raise
            if self._redis_error is not None:
                raise StackError(f"redis-server failed to start: {self._redis_error}")
            return self.redis.url

    def pids(self) -> list[int]:
        """Process ids of the servers started so far."""
        return [p for p in (self.kafka.pid, self.redis.pid) if p is not None]

    def stop(self) -> None:
        """Stop what was started (Kafka first: it may still talk to clients) and clean up."""
        self.kafka.stop()
        self.redis.stop()
        if self._owns_workdir and not self._failed:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def stop_on_exit(self) -> None:
        """Also stop at interpreter exit and on SIGTERM/SIGHUP (then die of that signal)."""
        atexit.register(self.stop)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in _HANDLED_SIGNALS:
            previous = signal.getsignal(sig)
            if previous is signal.SIG_IGN:
                continue

            def handler(signum: int, frame: FrameType | None, previous: object = previous) -> None:
                self.stop()
                if callable(previous):
                    previous(signum, frame)
                    return
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

            with contextlib.suppress(ValueError, OSError):
                signal.signal(sig, handler)
