"""Configuration precedence (flag > environment > default) and the Kafka client settings."""

from __future__ import annotations

import argparse
import logging

import pytest
from confluent_kafka import KafkaException

from consumer import Config, ConsumerError
from consumer._kafka import new_consumer
from consumer.config import add_arguments, from_args
from engine import Params


def _parse(argv: list[str], env: dict[str, str]) -> Config:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return from_args(parser.parse_args(argv), env)


def test_flags_win_over_environment_over_defaults() -> None:
    env = {"REDIS_URL": "redis://r:1/0", "ADR_NAMESPACE": "envns", "ADR_BATCH_SIZE": "7"}
    config = _parse(["--namespace", "flagns", "--param", "c_loss=0.5"], env)
    assert config.redis_url == "redis://r:1/0"
    assert config.namespace == "flagns"
    assert config.batch_size == 7
    assert config.topic == "kill-events" and config.dlq_topic == "kill-events-dlq"
    assert config.params == {"c_loss": "0.5"}
    assert Params.from_overrides(dict(config.params)).c_loss == 0.5


def test_a_profile_from_the_environment_or_the_flag_under_the_params() -> None:
    env = {"ADR_PROFILE": "recommended", "ADR_PARAMS": "theta=150"}
    params = Params.from_overrides(dict(_parse([], env).params))
    assert (params.repeat_window, params.decay_grace, params.theta) == (600.0, 7.0, 150.0)
    config = _parse(["--profile", "paper"], env)  # the flag names the profile
    assert config.params == {"theta": "150"}
    with pytest.raises(ConsumerError):
        _parse([], {"ADR_PROFILE": "nope"})


def test_bad_configuration_is_a_consumer_error() -> None:
    with pytest.raises(ConsumerError):
        _parse([], {"ADR_BATCH_SIZE": "many"})
    with pytest.raises(ConsumerError):
        _parse(["--param", "c_loss"], {})
    with pytest.raises(ConsumerError):
        Config(namespace="a}b")


def test_kafka_debug_reaches_librdkafka_and_its_lines_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """librdkafka checks the contexts itself: a bad one fails at client creation, a good one
    produces debug lines through the consumer's Kafka logger (no broker needed for them)."""
    with pytest.raises(KafkaException):
        new_consumer(_parse(["--kafka-debug", "no-such-context"], {}), lambda _err: None)
    config = _parse([], {"ADR_KAFKA_DEBUG": "generic", "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"})
    assert config.kafka_debug == "generic"
    kafka_log = logging.getLogger("adr.consumer.kafka")
    kafka_log.setLevel(logging.NOTSET)
    caplog.set_level(logging.INFO)  # the root level `adr consume` runs at
    caplog.handler.setLevel(logging.NOTSET)  # so only the logger's own level can drop a line
    try:
        consumer = new_consumer(config, lambda _err: None)
        consumer.poll(0.2)
        consumer.close()
    finally:
        kafka_log.setLevel(logging.NOTSET)
    debug_lines = [r for r in caplog.records if r.name == "adr.consumer.kafka"]
    assert any(r.levelno == logging.DEBUG for r in debug_lines)


def test_a_profile_the_consumer_cannot_run_is_refused_at_start() -> None:
    """`--profile general` sets pair_decay, which needs a per-pair load the consumer does not
    keep: `adr consume` exits 2 saying so, before connecting to anything (no crash loop at the
    first counted kill)."""
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",
        "REDIS_URL": "redis://127.0.0.1:1/0",
    }
    for flags in (["--profile", "general"], ["--param", "pair_decay=600"],
                  ["--model", "elo", "--profile", "general"],
                  ["--model", "weng-lin", "--param", "pair_decay=600"]):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "adr_cli", "consume", *flags],
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "pair_decay" in done.stderr and "offline only" in done.stderr
    from consumer.cli import refuse_offline_only
    from engine import profile_overrides

    refuse_offline_only(Params.from_overrides(profile_overrides("recommended")))  # no error
