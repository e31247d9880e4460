"""The config file's `[params]` and `[kafka]` tables (runtime.settings.read_shared_tables): read
alike by `adr consume`, `adr calibrate` and `adr leaderboard`, under the environment and the
flags, so one file gives a pool's services the same engine parameters."""

from __future__ import annotations

import argparse
import os
from fractions import Fraction
from pathlib import Path

import pytest

from adr_cli.main import main
from consumer import ConsumerError
from consumer import config as consumer_config
from engine import ParamError, Params, profile_overrides
from leaderboard import cli as leaderboard_cli
from runtime import RuntimeConfigError
from runtime.service import engine_params
from runtime.settings import CONFIG_FILE_ENV, SharedTables, read_shared_tables
from tierjob import TierJobError
from tierjob import config as tierjob_config

POOL_FILE = """
namespace = "pool9"

[params]
profile = "recommended"
theta = 175
t_active = 3.5
tier_shares = ["1/15", "1/15", "1/15", "1/15", "1/15", "1/15", "1/15", "1/15", "1/15", "1/15",
               "1/15", "1/15", "1/15", "1/15", "1/15"]

[kafka]
"security.protocol" = "SASL_SSL"
"socket.keepalive.enable" = true
"fetch.wait.max.ms" = 50

[consume]
batch_size = 250
"""


def _file(tmp_path: Path, text: str = POOL_FILE) -> Path:
    path = tmp_path / "pool.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _consumer(argv: list[str], env: dict[str, str]) -> consumer_config.Config:
    parser = argparse.ArgumentParser()
    consumer_config.add_arguments(parser)
    return consumer_config.from_args(parser.parse_args(argv), env)


def _calibrate(argv: list[str], env: dict[str, str]) -> tierjob_config.Config:
    parser = argparse.ArgumentParser()
    tierjob_config.add_arguments(parser)
    return tierjob_config.from_args(parser.parse_args(argv), env)


def _leaderboard_params(argv: list[str], env: dict[str, str]) -> Params:
    parser = argparse.ArgumentParser()
    leaderboard_cli.add_arguments(parser)
    return engine_params(parser.parse_args([*argv, "tiers"]), env)


def test_one_file_gives_every_service_the_same_parameters(tmp_path: Path) -> None:
    env = {CONFIG_FILE_ENV: str(_file(tmp_path))}
    expected = Params.from_overrides(
        {**profile_overrides("recommended"), "theta": 175.0, "t_active": 3.5}
    )
    assert expected.theta == 175.0 and expected != Params()
    consumer = _consumer([], env)
    assert Params.from_overrides(dict(consumer.params)) == expected
    assert consumer.batch_size == 250 and consumer.namespace == "pool9"
    assert _calibrate([], env).params == expected
    # adr leaderboard reads only the [params] table of the pod's file (not namespace, batch_size)
    assert _leaderboard_params([], env) == expected
    assert expected.tier_shares == (Fraction(1, 15),) * 15


def test_the_environment_and_flags_win_over_the_files_params(tmp_path: Path) -> None:
    env = {CONFIG_FILE_ENV: str(_file(tmp_path)), "ADR_PARAMS": "theta=200,tau=20"}
    got = _calibrate(["--param", "tau=10"], env).params
    assert (got.theta, got.tau, got.t_active) == (200.0, 10.0, 3.5)
    # a profile named by the environment or a flag replaces the file's, whose keys still apply
    paper = _calibrate([], {**env, "ADR_PROFILE": "paper"}).params
    assert paper.logistic_link == Params().logistic_link
    assert paper.t_active == 3.5
    assert _calibrate(["--profile", "paper"], env).params == paper
    assert _leaderboard_params(["--profile", "paper"], env) == paper


def test_the_files_kafka_table_is_under_the_properties_file_and_the_pairs(tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("fetch.wait.max.ms=80\nclient.rack=r1\n", encoding="utf-8")
    env = {CONFIG_FILE_ENV: str(_file(tmp_path))}
    assert dict(_consumer([], env).kafka.settings) == {
        "security.protocol": "SASL_SSL",
        "socket.keepalive.enable": "true",
        "fetch.wait.max.ms": "50",
    }
    env["ADR_KAFKA_CONFIG_FILE"] = str(properties)
    env["ADR_KAFKA_CONFIG"] = "client.rack=r2"
    got = _calibrate(["--kafka-config", "security.protocol=SSL"], env).kafka.settings
    assert dict(got) == {
        "security.protocol": "SSL",
        "socket.keepalive.enable": "true",
        "fetch.wait.max.ms": "80",
        "client.rack": "r2",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("params = 5\n", "params must be a table"),
        ("[params]\nprofile = 3\n", "params.profile: expected a string"),
        ("[params]\ntheta = true\n", "params.theta: expected a number"),
        ("[params]\ntheta = []\n", "params.theta: expected a number"),
        ("[params]\nthetta = 5\n", "unknown parameter 'thetta'"),
        ("[params]\nn_min = 2.5\n", "bad value for n_min"),
        ("[params]\nprofile = 'fast'\n", "unknown profile 'fast'"),
        ("[kafka]\nssl = { key = 'x' }\n", "kafka.ssl: expected a string, number or boolean"),
        ("[consume.params]\ntheta = 5\n", "unknown key 'consume.params'"),
    ],
)
def test_a_bad_shared_table_is_named_and_stops_the_service(
    tmp_path: Path, text: str, message: str
) -> None:
    env = {CONFIG_FILE_ENV: str(_file(tmp_path, text))}
    # the consumer checks its parameters when it builds engine.Params (adr_cli: exit 2, below)
    with pytest.raises((ConsumerError, ParamError), match=message):
        Params.from_overrides(dict(_consumer([], env).params))
    if "consume" not in text:
        with pytest.raises(TierJobError, match=message):
            _calibrate([], env)


def test_a_bad_kafka_table_does_not_stop_what_reads_only_the_params(tmp_path: Path) -> None:
    """`adr rebuild` (consumer.config.engine_params_from_args) and the short commands
    (runtime.service.engine_params) take only the file's [params]: a bad [kafka] table, the
    services' error, does not stop them, and their [params] are still read."""
    path = _file(tmp_path, "[params]\ntheta = 300\n[kafka]\nssl = { key = 'x' }\n")
    with pytest.raises(RuntimeConfigError, match=r"kafka\.ssl"):
        read_shared_tables(path)
    assert read_shared_tables(path, kafka=False) == SharedTables(None, {"theta": "300"}, {})
    env = {CONFIG_FILE_ENV: str(path)}
    assert engine_params(argparse.Namespace(), env).theta == 300.0
    args = argparse.Namespace(config_file=str(path), param=[], profile=None)
    assert consumer_config.engine_params_from_args(args, {}).theta == 300.0


@pytest.mark.parametrize("command", ["consume", "calibrate", "leaderboard"])
def test_a_bad_parameter_in_the_file_exits_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    for name in [n for n in os.environ if n.startswith("ADR_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv(CONFIG_FILE_ENV, str(_file(tmp_path, "[params]\ntheta = -1\n")))
    argv = [command, "tiers"] if command == "leaderboard" else [command]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "theta" in captured.err + captured.out
