"""One Apache Kafka broker (combined broker + KRaft controller) on loopback, without Docker."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from stack._errors import StackError
from stack._ports import LOOPBACK, free_port, port_open
from stack._procs import log_tail, spawn, stop_pid
from stack._provision import cds_archive_path, file_lock, java_bin, kafka_classpath, kafka_lib_dir

DEFAULT_HEAP_MB = 512
START_ATTEMPTS = 3  # only when the ports are our own pick: another process may grab one first

# Lean single-node settings: internal topics with one partition and one replica start fast.
_BASE_CONFIG: dict[str, str] = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
    "num.network.threads": "2",
    "num.io.threads": "4",
    "num.recovery.threads.per.data.dir": "1",
    "auto.create.topics.enable": "true",
}

AUTHORIZER_CONFIG: dict[str, str] = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # No ACL on a resource: allowed, so that only the ACLs a test adds deny (on the PLAINTEXT
    # listener every client, the broker's own controller link included, is User:ANONYMOUS).
    "allow.everyone.if.no.acl.found": "true",
}
"""Kafka's KRaft authorizer that denies only what an ACL denies (KafkaBroker(authorizer=True))."""

_JVM_FLAGS = (
    "-XX:+UseSerialGC",  # fewest GC threads and the smallest footprint on a 2-core box
    "-XX:MaxDirectMemorySize=256m",
    "-XX:MaxMetaspaceSize=128m",
    "-XX:ReservedCodeCacheSize=64m",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
    # The full config dump is ~2000 lines per start; keep the log about what happened.
    "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common.config.AbstractConfig=warn",
)
# A tool that runs for a second gains nothing from the optimising compiler.
_TOOL_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m")


def _cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (as Uuid does)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):  # Kafka avoids these: they read as CLI flags
            return text


@dataclass
class KafkaBroker:
    """A single-node KRaft broker whose files all live under ``workdir``."""

    workdir: Path
    port: int = 0  # 0: a free port, chosen at start
    controller_port: int = 0
    heap_mb: int = DEFAULT_HEAP_MB
    tied_to_parent: bool = True
    extra_config: dict[str, str] = field(default_factory=dict)
    extra_jvm_flags: list[str] = field(default_factory=list)
    extra_listeners: tuple[str, ...] = ()
    """More `NAME://host:port` listeners, also advertised (e.g. SASL_SSL, SSL)."""
    authorizer: bool = False
    """Run Kafka's StandardAuthorizer (AUTHORIZER_CONFIG): ACLs added through the admin API
    deny what they name, everything else stays allowed."""
    auto_create_topics: bool = True
    """False: a produce to a missing topic fails (`auto.create.topics.enable=false`), as on
    most production clusters."""
    pid: int | None = None
    _popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        """``host:port`` for ``bootstrap.servers``."""
        return f"{LOOPBACK}:{self.port}"

    @property
    def log_path(self) -> Path:
        """The broker's combined stdout/stderr log."""
        return self.workdir / "kafka.log"

    def start(self, timeout: float = 120.0) -> str:
        """Lay out storage, start the broker, wait until it answers metadata; return bootstrap."""
        lib = kafka_lib_dir()
        classpath = kafka_classpath(lib)
        cds = _cds_flags(lib)
        # Only the ports not given are picked (a given --kafka-port stays, whatever the other).
        pick_port, pick_controller = self.port == 0, self.controller_port == 0
        pick_ports = pick_port or pick_controller
        for attempt in range(1, START_ATTEMPTS + 1):
            if pick_port:
                self.port = free_port()
            if pick_controller:
                self.controller_port = free_port()
                while self.controller_port == self.port:
                    self.controller_port = free_port()
            props, data = self._write_config(attempt)
            shutil.copytree(_storage_template(lib, classpath, cds), data)
            self._popen = spawn(
                [java_bin(), *self._jvm_flags(), *cds, "-cp", classpath, "kafka.Kafka", str(props)],
                self.log_path,
                tied_to_parent=self.tied_to_parent,
            )
            self.pid = self._popen.pid
            try:
                self._wait_ready(timeout)
                return self.bootstrap
            except StackError:
                self.stop()
                port_clash = "Address already in use" in log_tail(self.log_path, 20000)
                if not (pick_ports and port_clash and attempt < START_ATTEMPTS):
                    raise
        raise AssertionError("unreachable")

    def stop(self, timeout: float = 30.0) -> None:
        """Controlled shutdown (SIGTERM), SIGKILL after ``timeout`` s."""
        # Only a process we hold a handle on: a bare pid may have been reused since.
        if self._popen is not None:
            stop_pid(self._popen.pid, timeout=timeout, popen=self._popen)
            self._popen = None

    def alive(self) -> bool:
        """Whether the broker process is running."""
        return self._popen is not None and self._popen.poll() is None

    def _jvm_flags(self) -> list[str]:
        heap = int(os.environ.get("ADR_KAFKA_HEAP_MB", self.heap_mb))
        extra = os.environ.get("ADR_KAFKA_JVM_OPTS", "").split()
        return [
            f"-Xms{min(128, heap)}m",
            f"-Xmx{heap}m",
            *_JVM_FLAGS,
            *self.extra_jvm_flags,
            *extra,
        ]

    def _write_config(self, attempt: int) -> tuple[Path, Path]:
        data = self.workdir / f"kafka-data-{attempt}"
        config = {
            **_config(self.port, self.controller_port, data),
            **(AUTHORIZER_CONFIG if self.authorizer else {}),
            "auto.create.topics.enable": str(self.auto_create_topics).lower(),
            **self.extra_config,
        }
        if self.extra_listeners:
            more = "," + ",".join(self.extra_listeners)
            config["listeners"] += more
            config["advertised.listeners"] += more
        self.workdir.mkdir(parents=True, exist_ok=True)
        props = self.workdir / "server.properties"
        _write_properties(props, config)
        return props, data

    def _wait_ready(self, timeout: float) -> None:
        # Imported here so `adr stack status` and the provisioning path stay light.
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        admin = None
        while time.monotonic() < deadline:
            if not self.alive():
                code = self._popen.returncode if self._popen is not None else "?"
                raise StackError(
                    f"Kafka broker exited with {code} while starting; log: {self.log_path}\n"
                    f"{log_tail(self.log_path)}"
                )
            if port_open(self.port):
                if admin is None:
                    admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
                try:
                    metadata = admin.list_topics(timeout=2)
                except Exception:  # KafkaException until the broker is unfenced
                    metadata = None
                if metadata is not None and metadata.brokers:
                    return
            time.sleep(0.1)
        raise StackError(
            f"Kafka broker did not answer metadata within {timeout:.0f} s; "
            f"log: {self.log_path}\n{log_tail(self.log_path)}"
        )


def _config(port: int, controller_port: int, data: Path) -> dict[str, str]:
    return {
        **_BASE_CONFIG,
        "controller.quorum.voters": f"1@{LOOPBACK}:{controller_port}",
        "listeners": f"PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
        "log.dirs": str(data),
    }


def _write_properties(path: Path, config: dict[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in config.items()))


def _storage_template(lib: Path, classpath: str, cds: list[str]) -> Path:
    """A formatted KRaft log dir, made once per release and copied for every broker.

    Formatting writes only meta.properties (cluster id, node 1, a directory id) and the bootstrap
    metadata checkpoint; none of it depends on ports or paths, and copying it saves a JVM start
    (1-3 s on a busy 2-core machine) per broker. Brokers share the cluster id: they never meet.
    """
    template = lib.parent / "storage-template"
    if (template / "meta.properties").is_file():
        return template
    with file_lock(lib.parent / ".storage.lock"):
        if (template / "meta.properties").is_file():
            return template
        work = Path(tempfile.mkdtemp(prefix="storage-", dir=lib.parent))
        try:
            props, log = work / "format.properties", work / "format.log"
            # Ports are never bound by the format tool; any valid numbers do.
            _write_properties(props, _config(9092, 9093, work / "data"))
            argv = [
                java_bin(), *_TOOL_FLAGS, *cds, "-cp", classpath, "kafka.tools.StorageTool",
                "format", "-t", _cluster_id(), "-c", str(props),
            ]  # fmt: skip
            with open(log, "wb") as out:
                done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False)
            if done.returncode != 0:
                raise StackError(
                    f"formatting KRaft storage failed (exit {done.returncode}):\n{log_tail(log)}"
                )
            (work / "data").rename(template)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return template


def _cds_flags(lib: Path) -> list[str]:
    if os.environ.get("ADR_KAFKA_CDS", "on").lower() in ("0", "off", "false", "no"):
        return []
    archive = cds_archive_path(lib)
    # -Xshare:auto: a stale or foreign archive is ignored (with a log line), never fatal.
    return [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"] if archive.is_file() else []


def prepare_kafka(timeout: float = 300.0) -> Path:
    """Resolve the broker jars and train its class-data-sharing archive; return the lib folder.

    The archive roughly halves the broker's start time on a busy 2-core machine and lowers its
    memory; it is built once (one broker start and stop, ~10-30 s) and reused. Without it the
    broker still starts, only slower, so a failed training run is reported and ignored.
    """
    lib = kafka_lib_dir()
    archive = cds_archive_path(lib)
    if archive.is_file():
        return lib
    with file_lock(lib.parent / ".cds.lock"), tempfile.TemporaryDirectory(prefix="adr-cds-") as tmp:
        if archive.is_file():  # another session trained it while we waited
            return lib
        partial = Path(tmp) / "kafka.jsa"
        broker = KafkaBroker(Path(tmp), extra_jvm_flags=[f"-XX:ArchiveClassesAtExit={partial}"])
        try:
            _exercise(broker.start(timeout=timeout))
        except Exception as e:  # the archive is an optimisation: go on without it
            print(f"adr stack: CDS training run failed ({e}); continuing without", file=sys.stderr)
        finally:
            broker.stop(timeout=timeout)  # the JVM writes the archive while it exits
        if partial.is_file() and partial.stat().st_size > 0:
            shutil.copyfile(partial, archive.with_suffix(".tmp"))
            archive.with_suffix(".tmp").replace(archive)
    return lib


def _exercise(bootstrap: str) -> None:
    """Touch the broker's produce, fetch, group and transaction paths so their classes load."""
    from confluent_kafka import Consumer, Producer

    from stack._topics import KAFKA_LOG, TopicAdmin

    topic = TopicAdmin(bootstrap).create("cds-training", partitions=2)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "cds-training", "logger": KAFKA_LOG}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(100):
        producer.produce(topic, key=str(i).encode(), value=b"x" * 100)
    producer.commit_transaction(60)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "cds-training",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "logger": KAFKA_LOG,
        }
    )
    consumer.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 60
    while seen < 100 and time.monotonic() < deadline:
        seen += sum(1 for m in consumer.consume(100, 1.0) if m.error() is None)
    consumer.commit(asynchronous=False)
    consumer.close()
