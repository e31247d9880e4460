"""runtime.kafka_settings: operator settings pass to librdkafka; guarded ones cannot change."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from runtime import (
    KafkaSettings,
    KafkaSettingsError,
    add_kafka_arguments,
    kafka_settings_from_args,
    parse_pairs,
    read_properties,
)

# The shape of the client.properties a managed Kafka hands out (Confluent Cloud's "Clients"
# page; librdkafka reads the same keys).
_CLIENT_PROPERTIES = """\
# Required connection configs for Kafka producer, consumer, and admin
bootstrap.servers=pkc-xxxxx.eu-west-1.aws.confluent.cloud:9092
security.protocol=SASL_SSL
sasl.mechanisms=PLAIN
sasl.username=ABCDEFGH
sasl.password=s3cr3t/with=equals

! a Java-style comment
session.timeout.ms=45000
"""


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_kafka_arguments(parser)
    return parser.parse_args(argv)


def test_client_properties_file_is_read_as_given(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(_CLIENT_PROPERTIES)
    settings = read_properties(path)
    assert settings["security.protocol"] == "SASL_SSL"
    assert settings["sasl.password"] == "s3cr3t/with=equals"  # only the first '=' splits
    assert settings["session.timeout.ms"] == "45000"
    assert len(settings) == 6


def test_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SSL\nnot a setting\n")
    with pytest.raises(KafkaSettingsError, match=r"client.properties:2: expected key=value"):
        read_properties(path)
    with pytest.raises(KafkaSettingsError, match="expected KEY=VALUE"):
        parse_pairs(["acks"])


def test_sources_layer_file_then_env_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "k.properties"
    path.write_text("security.protocol=SSL\nlinger.ms=1\nclient.id=file\n")
    env = {"ADR_KAFKA_CONFIG_FILE": str(path), "ADR_KAFKA_CONFIG": "linger.ms=2, client.id=env"}
    args = _parse(["--kafka-config", "client.id=flag"])
    settings = kafka_settings_from_args(args, env).settings
    assert settings == {"security.protocol": "SSL", "linger.ms": "2", "client.id": "flag"}


def test_apply_lets_the_operator_change_defaults_but_not_guarantees() -> None:
    settings = KafkaSettings({"linger.ms": "20", "acks": "-1", "enable.idempotence": "true"})
    merged = settings.apply({"linger.ms": 5}, {"acks": "all", "enable.idempotence": True})
    assert merged == {"linger.ms": "20", "acks": "all", "enable.idempotence": True}
    with pytest.raises(KafkaSettingsError, match=r"enable\.auto\.commit=.true. conflicts"):
        KafkaSettings({"enable.auto.commit": "true"}).apply({}, {"enable.auto.commit": False})
    with pytest.raises(KafkaSettingsError, match="acks"):
        KafkaSettings({"acks": "1"}).apply({}, {"acks": "all"})
    with pytest.raises(KafkaSettingsError, match="cannot be given as text"):
        KafkaSettings({"error_cb": "x"}).apply({}, {})


def test_repr_masks_secret_settings() -> None:
    shown = repr(KafkaSettings({"sasl.username": "svc", "sasl.password": "pw-123"}))
    assert "pw-123" not in shown
    assert "svc" in shown
