"""Secured and managed Redis deployments on loopback, for tests and the demo: TLS with ACL users,
a Sentinel-monitored primary with a replica, and a Redis Cluster of several primaries.

Certificates are made with openssl at start (a throw-away CA, a server certificate for
127.0.0.1/localhost, a client certificate for mutual TLS). Every server is a child process tied to
its parent, with its log in the work folder.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from stack._errors import StackError
from stack._ports import LOOPBACK, free_port
from stack._redis import RECOMMENDED_SETTINGS, RedisServer

_READY_TIMEOUT_S: Final = 30.0
_READY_LINE: Final = "Ready to accept connections"
_CERT_DAYS: Final = "2"


@dataclass(frozen=True)
class Certificates:
    """PEM files of a throw-away CA, a server and a client certificate."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_certificates(folder: Path) -> Certificates:
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate (openssl)."""
    folder.mkdir(parents=True, exist_ok=True)

    def openssl(*argv: str) -> None:
        done = subprocess.run(["openssl", *argv], capture_output=True, text=True, cwd=folder)
        if done.returncode != 0:
            raise StackError(f"openssl {argv[0]} failed: {done.stderr[-2000:]}")

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", _CERT_DAYS,
            "-subj", "/CN=adr-test-ca", "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN=adr-{name}",
                "-keyout", f"{name}.key", "-out", f"{name}.csr")  # fmt: skip
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", _CERT_DAYS, "-extfile", "san.ext",
                "-out", f"{name}.pem")  # fmt: skip
    return Certificates(
        folder / "ca.pem",
        folder / "server.pem",
        folder / "server.key",
        folder / "client.pem",
        folder / "client.key",
    )


def tls_redis(workdir: Path, certs: Certificates, acl_lines: tuple[str, ...] = ()) -> RedisServer:
    """redis-server on a TLS-only port that asks clients for a certificate, with `acl_lines`
    (ACL file rules such as `user consumer on >pw ~{adr}:* +@all`) and no plain port."""
    workdir.mkdir(parents=True, exist_ok=True)
    acl = workdir / "users.acl"
    acl.write_text("".join(line + "\n" for line in acl_lines))
    port = free_port()
    argv = (
        "--port", "0", "--tls-port", str(port), "--bind", LOOPBACK,
        "--tls-cert-file", str(certs.server_cert), "--tls-key-file", str(certs.server_key),
        "--tls-ca-cert-file", str(certs.ca), "--tls-auth-clients", "yes",
        "--aclfile", str(acl), "--save", "", "--appendonly", "no", "--dir", str(workdir),
        *RECOMMENDED_SETTINGS,
    )  # fmt: skip
    return RedisServer(workdir, port, argv=argv, ready_line=_READY_LINE)


def plain_redis(workdir: Path, *extra: str) -> RedisServer:
    """A loopback redis-server on a port fixed now (other servers' arguments may name it), with
    `extra` arguments after the stack's own (persistence, replication, cluster mode)."""
    return RedisServer(workdir, free_port(), settings=(*RECOMMENDED_SETTINGS, *extra))


@dataclass
class SentinelSet:
    """A primary, one replica and one Sentinel monitoring them as `service` (quorum 1)."""

    workdir: Path
    service: str = "adr-primary"
    primary: RedisServer = field(init=False)
    replica: RedisServer = field(init=False)
    sentinel: RedisServer = field(init=False)

    def __post_init__(self) -> None:
        self.primary = plain_redis(self.workdir / "primary", "--appendonly", "yes",
                                   "--appendfsync", "always")  # fmt: skip
        self.replica = plain_redis(self.workdir / "replica", "--appendonly", "yes",
                                   "--appendfsync", "always",
                                   "--replicaof", LOOPBACK, str(self.primary.port))  # fmt: skip
        conf = self.workdir / "sentinel" / "sentinel.conf"
        conf.parent.mkdir(parents=True, exist_ok=True)
        port = free_port()
        conf.write_text(
            f"port {port}\nbind {LOOPBACK}\n"
            f"sentinel monitor {self.service} {LOOPBACK} {self.primary.port} 1\n"
            f"sentinel down-after-milliseconds {self.service} 1000\n"
            f"sentinel failover-timeout {self.service} 5000\n"
        )
        sentinel_argv = (str(conf), "--sentinel")
        self.sentinel = RedisServer(conf.parent, port, argv=sentinel_argv, ready_line="Sentinel ID")

    @property
    def url(self) -> str:
        return f"redis+sentinel://{LOOPBACK}:{self.sentinel.port}/{self.service}/0"

    def start(self) -> None:
        """Start all three; return once the replica is in sync and the Sentinel sees it."""
        self.primary.start()
        self.replica.start()
        _wait_for(self.replica.port, ["info", "replication"], "master_link_status:up")
        self.sentinel.start()
        replicas = ["sentinel", "replicas", self.service]
        _wait_for(self.sentinel.port, replicas, str(self.replica.port))

    def failover(self) -> None:
        """Ask the Sentinel to promote the replica; retried while it still judges the replica
        unfit (NOGOODSLAVE: its INFO about the replica not yet recent enough)."""
        deadline = time.monotonic() + _READY_TIMEOUT_S
        argv = ["redis-cli", "-p", str(self.sentinel.port), "sentinel", "failover", self.service]
        while True:
            out = subprocess.run(argv, capture_output=True, text=True).stdout
            if out.strip() == "OK":
                return
            if time.monotonic() > deadline:
                raise StackError(f"sentinel failover refused: {out}")
            time.sleep(0.5)

    def stop(self) -> None:
        for proc in (self.sentinel, self.replica, self.primary):
            proc.stop()


def _wait_for(port: int, command: list[str], text: str) -> None:
    """Until `redis-cli -p port COMMAND` prints `text`."""
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while True:
        argv = ["redis-cli", "-p", str(port), *command]
        out = subprocess.run(argv, capture_output=True, text=True).stdout
        if text in out:
            return
        if time.monotonic() > deadline:
            raise StackError(f"{' '.join(command)} on port {port} never showed {text!r}: {out}")
        time.sleep(0.1)


@dataclass
class RedisCluster:
    """`primaries` cluster-enabled redis-servers joined by `redis-cli --cluster create`."""

    workdir: Path
    primaries: int = 3
    nodes: list[RedisServer] = field(default_factory=list)

    def start(self) -> None:
        for index in range(self.primaries):
            folder = self.workdir / f"node{index}"
            # The bus port defaults to port + 10000, which overflows for high free ports.
            node = plain_redis(
                folder, "--cluster-enabled", "yes", "--cluster-config-file",
                str(folder / "nodes.conf"), "--cluster-port", str(free_port()),
            )  # fmt: skip
            node.start()
            self.nodes.append(node)
        addresses = [f"{LOOPBACK}:{node.port}" for node in self.nodes]
        done = subprocess.run(
            ["redis-cli", "--cluster", "create", *addresses, "--cluster-replicas", "0",
             "--cluster-yes"], capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if done.returncode != 0:
            raise StackError(f"redis-cli --cluster create failed: {done.stdout[-2000:]}")
        self._wait_ok()

    def _wait_ok(self) -> None:
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while True:
            infos = [
                subprocess.run(
                    ["redis-cli", "-p", str(n.port), "cluster", "info"],
                    capture_output=True,
                    text=True,
                ).stdout
                for n in self.nodes
            ]
            if all("cluster_state:ok" in info for info in infos):
                return
            if time.monotonic() > deadline:
                raise StackError(f"cluster not ok: {infos}")
            time.sleep(0.1)

    @property
    def url(self) -> str:
        seeds = ",".join(f"{LOOPBACK}:{node.port}" for node in self.nodes)
        return f"redis+cluster://{seeds}"

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


__all__ = [
    "Certificates",
    "RedisCluster",
    "SentinelSet",
    "make_certificates",
    "plain_redis",
    "tls_redis",
]


@dataclass
class SecuredBroker:
    """A single-node broker with three client listeners: PLAINTEXT (set-up only: SCRAM users,
    readiness), SASL_SSL with SCRAM-SHA-256 and SSL with required client certificates (mutual
    TLS). The server certificate is signed by `certs.ca`."""

    workdir: Path
    certs: Certificates
    sasl_port: int = field(default_factory=free_port)
    mtls_port: int = field(default_factory=free_port)
    broker: Any = None
    authorizer: bool = False
    """True: Kafka's StandardAuthorizer, the PLAINTEXT and controller listeners' ANONYMOUS a
    super user (set-up), SASL users allowed only what ACLs grant."""

    def start(self) -> None:
        from stack._kafka import KafkaBroker

        bundle = self.workdir / "server-keystore.pem"
        self.workdir.mkdir(parents=True, exist_ok=True)
        bundle.write_text(self.certs.server_key.read_text() + self.certs.server_cert.read_text())
        self.broker = KafkaBroker(self.workdir / "kafka")
        sasl = f"SASL_SSL://{LOOPBACK}:{self.sasl_port}"
        mtls = f"SSL://{LOOPBACK}:{self.mtls_port}"
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        self.broker.extra_config = {
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL"
            ),
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scram,
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "listener.name.ssl.ssl.client.auth": "required",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(bundle),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.certs.ca),
        }
        if self.authorizer:
            self.broker.extra_config |= {
                "authorizer.class.name": (
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
                ),
                "super.users": "User:ANONYMOUS",
            }
        self.broker.extra_listeners = (sasl, mtls)
        self.broker.start()

    @property
    def plaintext(self) -> str:
        return str(self.broker.bootstrap)

    @property
    def sasl_bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.sasl_port}"

    @property
    def mtls_bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.mtls_port}"

    def add_scram_user(self, user: str, password: str) -> None:
        """A SCRAM-SHA-256 credential, through the admin API on the PLAINTEXT listener."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AdminClient,
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        from stack._topics import KAFKA_LOG

        conf: dict[str, Any] = {"bootstrap.servers": self.plaintext, "logger": KAFKA_LOG}
        admin = AdminClient(conf)
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
        upsert = UserScramCredentialUpsertion(user, info, password.encode())
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=30)

    def sasl_settings(self, user: str, password: str) -> dict[str, str]:
        """librdkafka settings for the SASL_SSL listener."""
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": str(self.certs.ca),
        }

    def mtls_settings(self) -> dict[str, str]:
        """librdkafka settings for the mutual-TLS listener."""
        return {
            "security.protocol": "SSL",
            "ssl.ca.location": str(self.certs.ca),
            "ssl.certificate.location": str(self.certs.client_cert),
            "ssl.key.location": str(self.certs.client_key),
        }

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.stop()


ACL_RULES: Final = Path(__file__).resolve().parent.parent / "deploy" / "redis" / "acl-users.acl"


def acl_file(namespace: str, passwords: dict[str, str]) -> str:
    """deploy/redis/acl-users.acl filled in as deploy/redis/README.md says, literally: each
    `<namespace>` replaced by `namespace` (the braces around it stay), each `<role-password>` by
    `passwords[role]` (role: consumer, tierjob, reader, history, meta): a file for
    `redis-server --aclfile`. A role left without a password is refused: its line would give
    the user the placeholder itself as its password."""
    text = ACL_RULES.read_text().replace("<namespace>", namespace)
    for role, password in passwords.items():
        text = text.replace(f"<{role}-password>", password)
    left = re.findall(r"<[a-z]+-password>", text)
    if left:
        raise ValueError(f"no password for {', '.join(sorted(set(left)))}")
    return text


def acl_setuser_commands(namespace: str, passwords: dict[str, str]) -> list[list[str]]:
    """`acl_file`'s users as `ACL SETUSER` argument lists (its lines without `user`); a
    parenthesised selector, which holds spaces, stays one argument, as ACL SETUSER wants it."""
    return [
        ["ACL", "SETUSER", *re.findall(r"\([^)]*\)|\S+", line)[1:]]
        for line in acl_file(namespace, passwords).splitlines()
        if line.startswith("user ")
    ]


@dataclass
class SecuredStack:
    """What `adr demo --secured` runs: a SASL_SSL (SCRAM) broker and a TLS-only redis-server
    that asks for client certificates, with the ACL users of deploy/redis/acl-users.acl."""

    workdir: Path
    namespace: str
    kafka_user: str = "adr"
    secrets: dict[str, str] = field(default_factory=dict)
    broker: SecuredBroker | None = None
    redis: RedisServer | None = None
    certs: Certificates | None = None

    def start(self) -> None:
        import secrets as _secrets

        self.certs = make_certificates(self.workdir / "certs")
        roles = ("consumer", "tierjob", "reader", "history", "meta", "kafka")
        self.secrets = {role: _secrets.token_urlsafe(18) for role in roles}
        acl = acl_file(self.namespace, self.secrets).splitlines()
        self.redis = tls_redis(self.workdir / "redis", self.certs, ("user default off", *acl))
        self.redis.start()
        self.broker = SecuredBroker(self.workdir / "kafka", self.certs)
        self.broker.start()
        self.broker.add_scram_user(self.kafka_user, self.secrets["kafka"])

    @property
    def bootstrap(self) -> str:
        assert self.broker is not None
        return self.broker.sasl_bootstrap

    def kafka_settings(self) -> dict[str, str]:
        assert self.broker is not None
        return self.broker.sasl_settings(self.kafka_user, self.secrets["kafka"])

    def redis_url(self, role: str) -> str:
        """`rediss://` for the ACL user of `role`, with the CA and the client certificate."""
        assert self.redis is not None and self.certs is not None
        query = (
            f"ssl_ca_certs={self.certs.ca}&ssl_certfile={self.certs.client_cert}"
            f"&ssl_keyfile={self.certs.client_key}"
        )
        user = f"adr-{role}:{self.secrets[role]}"
        return f"rediss://{user}@{LOOPBACK}:{self.redis.port}/0?{query}"

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.stop()
        if self.redis is not None:
            self.redis.stop()
