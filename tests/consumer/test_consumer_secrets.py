"""`adr consume` with operator Kafka settings and a password-protected Redis: guarded settings
are refused at start, and no password reaches a log line."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import consumer_support as S
import pytest
import redis

from stack._redis import RECOMMENDED_SETTINGS, RedisServer

PASSWORD = "Pw-7f3a91c2-never-logged"


def _consume(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "adr_cli.main", "consume", "--metrics-port", "0", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("enable.auto.commit=true", "conflicts with enable.auto.commit"),
        ("isolation.level=read_uncommitted", "conflicts with isolation.level"),
        ("enable.idempotence=false", "conflicts with enable.idempotence"),
        ("no.such.property=1", "No such configuration property"),
    ],
)
def test_consume_refuses_settings_that_break_its_guarantees(setting: str, expected: str) -> None:
    done = _consume("--bootstrap-servers", "127.0.0.1:1", "--kafka-config", setting)
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr


def test_consume_reads_a_properties_file_and_refuses_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=PLAINTEXT\nacks=1\n")
    done = _consume("--bootstrap-servers", "127.0.0.1:1", "--kafka-config-file", str(path))
    assert done.returncode == 2
    assert "conflicts with acks" in done.stderr


def test_no_password_in_any_log_line(
    kafka_bootstrap: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    server = RedisServer(tmp_path / "redis", settings=RECOMMENDED_SETTINGS)
    server.start()
    try:
        redis.Redis.from_url(server.url).config_set("requirepass", PASSWORD)
        url = f"redis://:{PASSWORD}@127.0.0.1:{server.port}/0"
        topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
        secret_file = tmp_path / "redis-url"
        secret_file.write_text(url + "\n")
        env = {"REDIS_URL_FILE": str(secret_file), "PATH": "/usr/bin:/bin"}
        log_path = tmp_path / "consume.log"
        cmd = S.consume_cmd(kafka_bootstrap, url, unique_name("ns"), topic, unique_name("g"))
        cmd.remove("--redis-url")
        cmd.remove(url)  # the URL comes from the Secret file only
        cmd += ["--kafka-config", "sasl.password=" + PASSWORD]  # unused by PLAINTEXT, still secret
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log_path.open("wb"), env=env)
        deadline = time.monotonic() + 60
        while "consumer started" not in log_path.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log_path.read_text()
            time.sleep(0.2)
        proc.terminate()
        assert proc.wait(60) == 0, log_path.read_text()[-3000:]
        text = log_path.read_text()
        assert "consumer started" in text
        assert f"127.0.0.1:{server.port}" in text and "***" in text
        assert PASSWORD not in text
        # The config is a JSON object in the start line, not a Python repr string.
        started = next(
            json.loads(line) for line in text.splitlines() if '"consumer started"' in line
        )
        config = started["config"]
        assert isinstance(config, dict) and config["topic"] == topic
        assert config["redis_url"] == f"redis://:***@127.0.0.1:{server.port}/0"
        assert config["kafka"] == {"sasl.password": "***"}
        assert config["batch_size"] == 1000
    finally:
        server.stop()


def test_a_wrong_password_error_does_not_show_it(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis", settings=RECOMMENDED_SETTINGS)
    server.start()
    try:
        redis.Redis.from_url(server.url).config_set("requirepass", PASSWORD)
        wrong = PASSWORD + "-wrong"
        done = subprocess.run(
            [sys.executable, "-m", "adr_cli.main", "leaderboard", "--redis-url",
             f"redis://:{wrong}@127.0.0.1:{server.port}/0", "top", "3"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode != 0
        assert wrong not in done.stderr + done.stdout
    finally:
        server.stop()
