"""runtime.settings: one dataclass declares a process's settings; flags, environment (with
`*_FILE` secrets), a TOML file and `--help` follow from it, flag > env > file > default."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adr_cli.main import main
from consumer import ConsumerError
from consumer import config as consumer_config
from runtime import RuntimeConfigError, SecretFileError, SettingsError
from runtime.kafka_settings import Broker
from runtime.settings import (
    CONFIG_FILE_ENV,
    add_settings_arguments,
    fields,
    setting,
    settings_fields,
    settings_from_args,
    settings_repr,
)
from tierjob import TierJobError
from tierjob import config as tierjob_config


@dataclasses.dataclass(frozen=True, slots=True)
class Demo:
    name: str = setting("adr", env="DEMO_NAME", help="a name")
    count: int = setting(3, env="DEMO_COUNT", help="how many")
    ratio: float = setting(0.5, env="DEMO_RATIO", help="a share")
    every: float | None = setting(None, env="DEMO_EVERY", help="seconds; unset: once")
    port: int | None = setting(9100, env="DEMO_PORT", help="a port")
    url: str = setting("redis://h:1/0", env="DEMO_URL", help="a server", secret=True)
    token: str = setting("", env="DEMO_TOKEN", help="a token", secret=True)
    who: str = setting(env="DEMO_WHO", help="an id", shown="host", default_factory=lambda: "w")
    extra: tuple[str, ...] = ()
    """Not a setting: no flag, no variable."""

    def __repr__(self) -> str:
        return settings_repr(self)


def _parser(cls: type = Demo) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_settings_arguments(parser, cls)
    return parser


def _load(argv: list[str], env: dict[str, str]) -> Demo:
    return Demo(**settings_from_args(Demo, _parser().parse_args(argv), env))


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "adr.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_nothing_given_is_the_dataclass_defaults() -> None:
    assert _load([], {}) == Demo()


@given(
    flag=st.none() | st.integers(-(10**6), 10**6),
    env=st.none() | st.integers(-(10**6), 10**6),
    in_file=st.none() | st.integers(-(10**6), 10**6),
)
def test_the_flag_wins_over_the_environment_over_the_file_over_the_default(
    tmp_path_factory: pytest.TempPathFactory, flag: int | None, env: int | None, in_file: int | None
) -> None:
    argv = [] if flag is None else [f"--count={flag}"]
    environ = {} if env is None else {"DEMO_COUNT": str(env)}
    if in_file is not None:
        path = _toml(tmp_path_factory.mktemp("cfg"), f"count = {in_file}\n")
        environ[CONFIG_FILE_ENV] = str(path)
    want = next((v for v in (flag, env, in_file) if v is not None), Demo().count)
    assert _load(argv, environ).count == want


@given(
    name=st.text(st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1),
    ratio=st.floats(allow_nan=False, allow_infinity=False),
)
def test_environment_text_becomes_the_field_type(name: str, ratio: float) -> None:
    got = _load([], {"DEMO_NAME": name, "DEMO_RATIO": repr(ratio), "DEMO_EVERY": "2.5"})
    assert (got.name, got.ratio, got.every) == (name, ratio, 2.5)
    assert type(got.ratio) is float and type(_load([], {"DEMO_RATIO": "2"}).ratio) is float


def test_an_empty_variable_counts_as_unset() -> None:
    empty = {"DEMO_COUNT": "", "DEMO_EVERY": "", "DEMO_PORT": "", "DEMO_WHO": ""}
    assert _load([], empty) == Demo()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEMO_COUNT": "many"}, "bad DEMO_COUNT='many': expected an integer"),
        ({"DEMO_COUNT": "1.5"}, "bad DEMO_COUNT='1.5': expected an integer"),
        ({"DEMO_RATIO": "half"}, "bad DEMO_RATIO='half': expected a number"),
        ({"DEMO_PORT": "x"}, "bad DEMO_PORT='x': expected an integer"),
    ],
)
def test_a_bad_variable_is_a_settings_error_naming_it(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(message)):
        _load([], env)


def test_a_bad_flag_is_a_usage_error() -> None:
    with pytest.raises(argparse.ArgumentError, match="invalid int value: 'many'"):
        _parser().parse_args(["--count", "many"])


def test_a_secret_read_from_its_file_and_never_echoed(tmp_path: Path) -> None:
    secret = tmp_path / "url"
    secret.write_text("redis://:hunter22@db:6379/0\n", encoding="utf-8")
    got = _load([], {"DEMO_URL_FILE": str(secret)})
    assert got.url == "redis://:hunter22@db:6379/0"  # one trailing newline dropped
    assert "hunter22" not in repr(got) and "db:6379" in repr(got)
    with pytest.raises(SecretFileError, match="both DEMO_URL and DEMO_URL_FILE"):
        _load([], {"DEMO_URL": "redis://x/0", "DEMO_URL_FILE": str(secret)})
    with pytest.raises(SecretFileError, match="cannot read DEMO_URL_FILE"):
        _load([], {"DEMO_URL_FILE": str(tmp_path / "missing")})
    assert _load(["--url", "redis://flag/0"], {"DEMO_URL_FILE": str(secret)}).url == (
        "redis://flag/0"
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Secretive:
    pin: int = setting(0, env="DEMO_PIN", help="a pin", secret=True)


def test_a_bad_secret_is_named_but_not_shown(tmp_path: Path) -> None:
    def load(argv: list[str], env: dict[str, str]) -> dict[str, object]:
        return settings_from_args(Secretive, _parser(Secretive).parse_args(argv), env)

    with pytest.raises(SettingsError, match="DEMO_PIN") as caught:
        load([], {"DEMO_PIN": "12ab34"})
    assert "12ab34" not in str(caught.value)
    path = _toml(tmp_path, 'pin = "12ab34"\n')
    with pytest.raises(SettingsError, match="pin: expected an integer") as caught:
        load(["--config", str(path)], {})
    assert "12ab34" not in str(caught.value)
    assert settings_repr(Secretive(pin=4321)) == "Secretive(pin='***')"


def test_repr_masks_secrets_and_shows_the_rest() -> None:
    shown = settings_repr(Demo(url="rediss://u:pw@db:6380/0", token="t0k3n"))
    assert "pw" not in shown and "t0k3n" not in shown
    assert "url='rediss://u:***@db:6380/0'" in shown and "token='***'" in shown
    assert "name='adr'" in shown and "extra=()" in shown


def test_the_config_file_gives_typed_settings(tmp_path: Path) -> None:
    path = _toml(tmp_path, 'name = "pool1"\ncount = 7\nratio = 1\nevery = 30\n')
    got = _load(["--config", str(path)], {})
    assert (got.name, got.count, got.ratio, got.every) == ("pool1", 7, 1.0, 30.0)
    assert type(got.ratio) is float
    # the flag names the file over ADR_CONFIG_FILE
    other = tmp_path / "other.toml"
    other.write_text("count = 9\n", encoding="utf-8")
    assert _load(["--config", str(path)], {CONFIG_FILE_ENV: str(other)}).count == 7
    assert _load([], {CONFIG_FILE_ENV: str(other)}).count == 9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("count = '7'\n", "count: expected an integer, got '7'"),
        ("count = 7.0\n", "count: expected an integer, got 7.0"),
        ("count = true\n", "count: expected an integer, got True"),
        ("ratio = 'x'\n", "ratio: expected a number, got 'x'"),
        ("name = 5\n", "name: expected a string, got 5"),
        ("batch = 5\n", "unknown key 'batch' (known: count, every, name, port, ratio, token"),
        ("extra = []\n", "unknown key 'extra'"),
        ("count = = 1\n", "is not TOML"),
    ],
)
def test_a_bad_config_file_is_a_settings_error_naming_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _toml(tmp_path, text)
    with pytest.raises(SettingsError, match=re.escape(message)) as caught:
        _load([], {CONFIG_FILE_ENV: str(path)})
    assert str(path) in str(caught.value)


def test_an_unreadable_config_file_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"cannot read config file .*missing\.toml"):
        _load(["--config", str(tmp_path / "missing.toml")], {})


def test_an_unsupported_type_is_refused_when_first_used() -> None:
    @dataclasses.dataclass(frozen=True)
    class Odd:
        raw: bytes = setting(b"", env="X", help="x")

    with pytest.raises(TypeError, match="a setting must be str, int, float"):
        fields(Odd)


def test_settings_errors_are_runtime_config_errors() -> None:
    assert issubclass(SettingsError, RuntimeConfigError)


@pytest.mark.parametrize("module", [consumer_config, tierjob_config])
def test_every_setting_has_a_one_line_help_with_its_variable_and_default(module) -> None:  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    by_dest = {a.dest: a for a in parser._actions}
    declared = fields(module.Config)
    assert {f.name for f in declared} <= set(by_dest)
    for f in declared:
        text = by_dest[f.name].help
        assert "\n" not in text and not text.startswith("(")
        assert f"(env {f.setting.env}" in text, text
        if f.default is not None:  # a default made per process shows its `shown` text
            assert "; default " in text, text
        if f.setting.secret:
            assert f"or a file named by {f.setting.env}_FILE" in text
    assert "--config" in by_dest["config_file"].option_strings


def test_the_services_keep_their_variables() -> None:
    """The names operators set stay those the deploy manifests and docs use."""
    assert {f.name: f.setting.env for f in fields(consumer_config.Config)} == {
        "bootstrap_servers": "KAFKA_BOOTSTRAP_SERVERS",
        "redis_url": "REDIS_URL",
        "namespace": "ADR_NAMESPACE",
        "topic": "ADR_TOPIC",
        "group": "ADR_GROUP",
        "group_instance_id": "ADR_GROUP_INSTANCE_ID",
        "session_timeout_ms": "ADR_SESSION_TIMEOUT_MS",
        "kafka_debug": "ADR_KAFKA_DEBUG",
        "rating_topic": "ADR_RATING_TOPIC",
        "dlq_topic": "ADR_DLQ_TOPIC",
        "dead_letter_timeout_ms": "ADR_DEAD_LETTER_TIMEOUT_MS",
        "batch_size": "ADR_BATCH_SIZE",
        "batch_wait_ms": "ADR_BATCH_WAIT_MS",
        "max_age_ms": "ADR_MAX_AGE_MS",
        "max_future_ms": "ADR_MAX_FUTURE_MS",
        "lateness_ms": "ADR_LATENESS_MS",
        "metrics_port": "ADR_METRICS_PORT",
        "metrics_host": "ADR_METRICS_HOST",
        "relay_batch": "ADR_RELAY_BATCH",
        "relay_max_in_flight": "ADR_RELAY_MAX_IN_FLIGHT",
        "relay_pump_ms": "ADR_RELAY_PUMP_MS",
        "state_cache_players": "ADR_STATE_CACHE_PLAYERS",
        "outbox_claim_idle_ms": "ADR_OUTBOX_CLAIM_IDLE_MS",
        "held_recheck_ms": "ADR_HELD_RECHECK_MS",
        "max_players": "ADR_MAX_PLAYERS",
        "instance_id": "ADR_INSTANCE_ID",
        "model": "ADR_MODEL",
        "model_params": "ADR_MODEL_PARAMS",
    }
    assert {f.name: f.setting.env for f in fields(tierjob_config.Config)} == {
        "redis_url": "REDIS_URL",
        "bootstrap_servers": "KAFKA_BOOTSTRAP_SERVERS",
        "namespace": "ADR_NAMESPACE",
        "topic": "ADR_TIER_TOPIC",
        "every": "ADR_CALIBRATE_EVERY",
        "lease_ttl": "ADR_CALIBRATE_LEASE_TTL",
        "metrics_port": "ADR_METRICS_PORT",
        "metrics_host": "ADR_METRICS_HOST",
        "read_chunk": "ADR_CALIBRATE_READ_CHUNK",
        "kafka_timeout": "ADR_KAFKA_TIMEOUT",
        "holder_id": "ADR_INSTANCE_ID",
    }


def _consumer(argv: list[str], env: dict[str, str]) -> consumer_config.Config:
    parser = argparse.ArgumentParser()
    consumer_config.add_arguments(parser)
    return consumer_config.from_args(parser.parse_args(argv), env)


def test_the_consumer_reads_a_config_file_under_its_environment(tmp_path: Path) -> None:
    path = _toml(tmp_path, 'namespace = "filens"\nbatch_size = 17\nlateness_ms = 5\n')
    got = _consumer(["--config", str(path), "--lateness-ms", "9"], {"ADR_BATCH_SIZE": "23"})
    assert (got.namespace, got.batch_size, got.lateness_ms) == ("filens", 23, 9)


def test_the_services_wrap_settings_errors_in_their_root_exception(tmp_path: Path) -> None:
    path = _toml(tmp_path, "batch_size = 'big'\n")
    with pytest.raises(ConsumerError, match="batch_size: expected an integer"):
        _consumer(["--config", str(path)], {})
    with pytest.raises(ConsumerError, match="batch sizes must be >= 1"):  # Config's own checks
        _consumer([], {"ADR_BATCH_SIZE": "0"})
    parser = argparse.ArgumentParser()
    tierjob_config.add_arguments(parser)
    with pytest.raises(TierJobError, match="bad ADR_CALIBRATE_EVERY='soon'"):
        tierjob_config.from_args(parser.parse_args([]), {"ADR_CALIBRATE_EVERY": "soon"})
    with pytest.raises(TierJobError, match="--every must be > 0"):
        tierjob_config.from_args(parser.parse_args([]), {"ADR_CALIBRATE_EVERY": "-1"})


def _calibrate(argv: list[str], env: dict[str, str]) -> tierjob_config.Config:
    parser = argparse.ArgumentParser()
    tierjob_config.add_arguments(parser)
    return tierjob_config.from_args(parser.parse_args(argv), env)


def test_one_file_serves_both_services_with_a_table_each(tmp_path: Path) -> None:
    """Shared keys at the top level; each service's own under its command's table, over them."""
    path = _toml(
        tmp_path,
        'namespace = "pool7"\nredis_url = "redis://db:6379/0"\n'
        '[consume]\nbatch_size = 250\nnamespace = "pool7c"\n'
        "[calibrate]\nevery = 30\n",
    )
    consumer = _consumer(["--config", str(path)], {})
    assert (consumer.namespace, consumer.redis_url, consumer.batch_size) == (
        "pool7c", "redis://db:6379/0", 250,
    )  # fmt: skip
    tierjob = _calibrate([], {CONFIG_FILE_ENV: str(path)})
    assert (tierjob.namespace, tierjob.redis_url, tierjob.every) == (
        "pool7", "redis://db:6379/0", 30.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message", "hinted"),
    [
        ("batch_size = 5\n", "unknown key 'batch_size'", True),  # the consumer's, top level
        ("[calibrate]\nbatch_size = 5\n", "unknown key 'calibrate.batch_size'", False),
        ("[calibrat]\nevery = 5\n", "unknown table [calibrat]", True),
        ("[calibrate]\nevery = 'soon'\n", "calibrate.every: expected a number", False),
    ],
)
def test_a_shared_file_still_names_every_unknown_key(
    tmp_path: Path, text: str, message: str, hinted: bool
) -> None:
    with pytest.raises(TierJobError, match=re.escape(message)) as caught:
        _calibrate([], {CONFIG_FILE_ENV: str(_toml(tmp_path, text))})
    assert ("under its table: [calibrate], [consume]" in str(caught.value)) == hinted


@pytest.mark.parametrize("command", ["consume", "calibrate"])
def test_a_bad_config_file_exits_2_before_any_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command
) -> None:  # type: ignore[no-untyped-def]
    path = _toml(tmp_path, "no_such_setting = 1\n")
    for name in [n for n in os.environ if n.startswith("ADR_")]:
        monkeypatch.delenv(name)
    assert main([command, "--config", str(path)]) == 2
    captured = capsys.readouterr()
    assert "unknown key 'no_such_setting'" in captured.err + captured.out


def test_short_commands_read_flags_and_environment_but_no_config_file(tmp_path: Path) -> None:
    """`adr topics` / `check` / `simulate` / `leaderboard` run by hand in a service's pod: that
    pod's ADR_CONFIG_FILE names the service's keys, which they do not have."""
    parser = argparse.ArgumentParser()
    Broker.add_arguments(parser)
    env = {CONFIG_FILE_ENV: str(_toml(tmp_path, "batch_size = 1\n"))}
    assert Broker.from_args(parser.parse_args([]), env).bootstrap_servers == "127.0.0.1:9092"
    env["KAFKA_BOOTSTRAP_SERVERS"] = "k:1"
    assert Broker.from_args(parser.parse_args([]), env).bootstrap_servers == "k:1"
    assert Broker.from_args(parser.parse_args(["--bootstrap-servers", "f:2"]), env) == Broker("f:2")
    with pytest.raises(SystemExit):  # argparse: unrecognized arguments
        parser.parse_args(["--config", "x.toml"])


def test_settings_fields_are_a_json_object_with_the_secrets_masked() -> None:
    """What a service's start line logs as `config`: an object a log pipeline can index, the
    same masking as the repr, nested Kafka settings as an object with secret keys masked."""
    import json

    from consumer import Config
    from runtime import KafkaSettings

    demo = Demo(url="redis://:hunter2@cache:6379/0", token="s3cret", extra=("a", "b"))
    fields_ = settings_fields(demo)
    assert fields_ == {
        "name": "adr", "count": 3, "ratio": 0.5, "every": None, "port": 9100,
        "url": "redis://:***@cache:6379/0", "token": "***", "who": "w", "extra": ["a", "b"],
    }  # fmt: skip
    config = Config(
        redis_url="redis://:hunter2@cache:6379/0",
        kafka=KafkaSettings({"sasl.password": "hunter2", "security.protocol": "SASL_SSL"}),
    )
    text = json.dumps(settings_fields(config), allow_nan=False)
    assert "hunter2" not in text
    assert json.loads(text)["kafka"] == {"sasl.password": "***", "security.protocol": "SASL_SSL"}
    assert json.loads(text)["max_age_ms"] == config.max_age_ms
