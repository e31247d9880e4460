"""Every Kafka process against a real broker secured two ways: SASL_SSL with SCRAM-SHA-256, and
mutual TLS. Certificates are made at test time with openssl, the SCRAM user through the admin
API; the processes get the settings only from `--kafka-config-file` / `--kafka-config` (and
`adr rebuild` also from the consumer's config file's `[kafka]` table)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import consumer_support as S
import pytest
import redis

from consumer.config import Config
from engine import Params
from redis_layout import Keys
from runtime import KafkaSettings
from stack.secured import SecuredBroker, make_certificates

pytestmark = pytest.mark.integration  # starts servers of its own

USER, PASSWORD = "adr-consumer", "scram-Secret-8842"
EVENTS = 2_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    folder = tmp_path_factory.mktemp("secured-kafka")
    secured = SecuredBroker(folder, make_certificates(folder / "certs"))
    secured.start()
    secured.add_scram_user(USER, PASSWORD)
    yield secured
    secured.stop()


def _properties(path: Path, settings: dict[str, str]) -> str:
    path.write_text("# written by the test\n" + "".join(f"{k}={v}\n" for k, v in settings.items()))
    return str(path)


def _adr(*argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "adr_cli.main", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_all_processes_over_sasl_ssl_and_mutual_tls(
    broker: SecuredBroker, redis_url: str, unique_name, tmp_path: Path
) -> None:
    sasl_file = _properties(tmp_path / "sasl.properties", broker.sasl_settings(USER, PASSWORD))
    mtls = [f"--kafka-config={k}={v}" for k, v in broker.mtls_settings().items()]
    names = {role: unique_name(role) for role in ("kill", "rating", "tier", "dlq")}
    topic_flags = ["--kill-topic", names["kill"], "--rating-topic", names["rating"],
                   "--tier-topic", names["tier"], "--dlq-topic", names["dlq"]]  # fmt: skip

    created = _adr("topics", "create", "--bootstrap-servers", broker.sasl_bootstrap,
                   "--kafka-config-file", sasl_file, "--replication-factor", "1",
                   "--partitions", "2", *topic_flags)  # fmt: skip
    assert created.returncode == 0, created.stderr + created.stdout
    assert {json.loads(x)["status"] for x in created.stdout.splitlines()} == {"created"}

    simulated = _adr("simulate", "--bootstrap-servers", broker.mtls_bootstrap, *mtls,
                     "--topic", names["kill"], "--partitions", "2", "--events", str(EVENTS),
                     "--rate", "0", "--players", "200", "--arenas", "8",
                     "--malformed-rate", "0", "--duplicate-rate", "0")  # fmt: skip
    assert simulated.returncode == 0, simulated.stderr[-3000:]
    assert json.loads(simulated.stdout)["delivered"] == EVENTS

    ns = unique_name("ns")
    config = Config(
        bootstrap_servers=broker.sasl_bootstrap,
        redis_url=redis_url,
        namespace=ns,
        topic=names["kill"],
        group=unique_name("g"),
        rating_topic=names["rating"],
        dlq_topic=names["dlq"],
        kafka=KafkaSettings(broker.sasl_settings(USER, PASSWORD)),
    )
    client = redis.Redis.from_url(redis_url)
    keys = Keys(ns)
    consumer = S.start_threaded(config, Params())
    try:
        S.wait_until(
            lambda: sum(S.applied_offsets(client, keys, names["kill"]).values()) == EVENTS,
            120,
            "every event applied over SASL_SSL",
        )
        S.wait_outbox_empty(client, keys, 60)
    finally:
        consumer.stop()

    calibrated = _adr("calibrate", "--redis-url", redis_url, "--namespace", ns,
                      "--bootstrap-servers", broker.mtls_bootstrap, *mtls,
                      "--topic", names["tier"])  # fmt: skip
    assert calibrated.returncode == 0, calibrated.stderr[-3000:]
    checked = _adr("topics", "check", "--bootstrap-servers", broker.sasl_bootstrap,
                   "--kafka-config-file", sasl_file, "--replication-factor", "1",
                   "--partitions", "2", *topic_flags)  # fmt: skip
    assert checked.returncode == 0, checked.stdout

    # adr rebuild run as docs/operations.md says, the environment alone naming the servers,
    # the Kafka client settings and the pool (ADR_KAFKA_CONFIG_FILE: the SASL user's)
    rebuilt_ns = unique_name("ns")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADR_")}
    env |= {"KAFKA_BOOTSTRAP_SERVERS": broker.sasl_bootstrap, "REDIS_URL": redis_url,
            "ADR_KAFKA_CONFIG_FILE": sasl_file, "ADR_NAMESPACE": rebuilt_ns,
            "ADR_TOPIC": names["kill"], "ADR_GROUP": unique_name("g")}  # fmt: skip
    rebuilt = subprocess.run([sys.executable, "-m", "adr_cli.main", "rebuild"], env=env,
                             capture_output=True, text=True, timeout=180)  # fmt: skip
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert sum(S.applied_offsets(client, Keys(rebuilt_ns), names["kill"]).values()) == EVENTS

    # ... and with the consumer's config file, secured as docs/operations.md says: the servers,
    # the pool and the [kafka] table in the file, the password alone in a properties file
    # (ADR_KAFKA_CONFIG_FILE, a Secret's), merged as the consumer merges them
    sasl = broker.sasl_settings(USER, PASSWORD)
    password = _properties(
        tmp_path / "password.properties", {"sasl.password": sasl["sasl.password"]}
    )
    kafka_table = "".join(f'"{k}" = "{v}"\n' for k, v in sasl.items() if k != "sasl.password")
    file_ns = unique_name("ns")
    file = tmp_path / "adr.toml"
    file.write_text(
        f'bootstrap_servers = "{broker.sasl_bootstrap}"\nredis_url = "{redis_url}"\n'
        f'namespace = "{file_ns}"\ntopic = "{names["kill"]}"\n'
        f'group = "{unique_name("g")}"\n[kafka]\n{kafka_table}'
    )
    named = ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADR_") and k not in named}
    rebuilt = subprocess.run(
        [sys.executable, "-m", "adr_cli.main", "rebuild", "--config", str(file)],
        env={**env, "ADR_KAFKA_CONFIG_FILE": password}, capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert sum(S.applied_offsets(client, Keys(file_ns), names["kill"]).values()) == EVENTS
    assert PASSWORD not in rebuilt.stderr


def test_a_wrong_password_or_a_missing_certificate_is_refused_without_showing_it(
    broker: SecuredBroker, tmp_path: Path
) -> None:
    wrong = broker.sasl_settings(USER, PASSWORD + "-wrong")
    wrong["socket.timeout.ms"] = "5000"
    flags = [f"--kafka-config={k}={v}" for k, v in wrong.items()]
    done = _adr("topics", "check", "--bootstrap-servers", broker.sasl_bootstrap, *flags,
                "--timeout-s", "8")  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert PASSWORD not in done.stderr + done.stdout

    no_cert = {k: v for k, v in broker.mtls_settings().items() if "certificate" not in k}
    no_cert = {k: v for k, v in no_cert.items() if "ssl.key" not in k}
    flags = [f"--kafka-config={k}={v}" for k, v in no_cert.items()]
    done = _adr("topics", "check", "--bootstrap-servers", broker.mtls_bootstrap, *flags,
                "--kafka-config", "socket.timeout.ms=5000", "--timeout-s", "8")  # fmt: skip
    assert done.returncode == 3, done.stderr
