"""Servers the fault tests restart: a durable redis-server (AOF) and a broker that keeps its log.

The session fixtures' servers are shared and throw-away (no persistence, storage formatted on
every start), so a test that restarts a server mid-run owns its own.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from stack import KafkaBroker, RedisServer, free_port


@dataclass
class DurableRedis(RedisServer):
    """redis-server with appendfsync always, on a port fixed for its life: a restart (SIGTERM, it
    fsyncs the AOF and exits) loses no acknowledged write."""

    settings: tuple[str, ...] = ("--appendonly", "yes", "--appendfsync", "always")

    def __post_init__(self) -> None:
        if self.port == 0:
            self.port = free_port()

    def stop(self, timeout: float = 30.0) -> None:
        super().stop(timeout)


class RestartableBroker:
    """A stack KafkaBroker that can be restarted with its ports and log kept: the restart runs
    the broker's own command line again on the already formatted storage."""

    def __init__(self, workdir: Path) -> None:
        self._broker = KafkaBroker(workdir)
        self._workdir = workdir
        self._argv: list[bytes] = []
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return self._broker.bootstrap

    def start(self) -> None:
        self._broker.start()
        cmdline = Path(f"/proc/{self._broker.pid}/cmdline").read_bytes()
        self._argv = cmdline.rstrip(b"\0").split(b"\0")
        assert b"kafka.Kafka" in self._argv, self._argv

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
            self._proc = None
        else:
            self._broker.stop()

    def restart(self, down_s: float = 1.0) -> None:
        self.stop()
        time.sleep(down_s)
        log = open(self._workdir / "kafka-restart.log", "ab")  # noqa: SIM115 - with the process
        self._proc = subprocess.Popen(self._argv, stdout=log, stderr=log)
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + 120
        while True:
            try:
                admin.list_topics(timeout=2)
                return
            except KafkaException:
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    raise
