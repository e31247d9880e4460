"""Servers the fault tests restart: a durable redis-server (AOF) and a broker that keeps its log.

The session fixtures' servers are shared and throw-away (no persistence, storage formatted on
every start), so a test that restarts a server mid-run owns its own.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import redis
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from stack import KafkaBroker, free_port, redis_server_bin


class DurableRedis:
    """redis-server with appendfsync always: a restart loses no acknowledged write."""

    persistence: tuple[str, ...] = ("--appendonly", "yes", "--appendfsync", "always")

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = [
            redis_server_bin(), "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
            "--dir", str(self.workdir), *self.persistence,
        ]  # fmt: skip
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115 - lives with the process
        self._proc = subprocess.Popen(argv, stdout=log, stderr=log)
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.close()

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()  # SIGTERM: redis-server fsyncs the AOF and exits
            self._proc.wait(30)
            self._proc = None

    def restart(self, down_s: float = 1.0) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()


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
