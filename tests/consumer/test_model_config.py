"""`adr consume --model`: the model and its parameters from flags, environment and the config
file (flags > env > file, as every setting; `--model-param` on top), checked by the registry."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from adr_cli import rebuild
from consumer import ConsumerError
from consumer.cli import run
from consumer.config import (
    Config,
    add_arguments,
    engine_params_from_args,
    from_args,
    model_from_args,
    pool_model,
)
from engine import ParamError, Params, model_parameters
from redis_layout import model_stamp


def _parse(argv: list[str], env: dict[str, str]) -> Config:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return from_args(parser.parse_args(argv), env)


def test_model_and_its_parameters_from_flags_env_and_file(tmp_path: Path) -> None:
    file = tmp_path / "adr.toml"
    file.write_text('[consume]\nmodel = "glicko2"\nmodel_params = "tau=0.4,display_k=1"\n')
    env = {"ADR_CONFIG_FILE": str(file)}
    config = _parse([], env)
    assert (config.model, config.model_params) == ("glicko2", "tau=0.4,display_k=1")
    model = pool_model(config, Params())
    assert model.name == "glicko2" and model_parameters(model)["tau"] == 0.4

    config = _parse([], {**env, "ADR_MODEL": "trueskill", "ADR_MODEL_PARAMS": "display_k=2"})
    assert model_parameters(pool_model(config, Params()))["display_k"] == 2.0

    flags = ["--model", "trueskill", "--model-param", "display_k=1", "--model-param", "beta=3"]
    config = _parse(flags, {**env, "ADR_MODEL_PARAMS": "display_k=2,tau=0.5"})
    got = model_parameters(pool_model(config, Params()))
    assert (got["display_k"], got["beta"], got["tau"]) == (1.0, 3.0, 0.5)  # later wins


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--model", "glicko3"], "unknown model"),
        (["--model", "elo", "--model-param", "kk=3"], "unknown parameter"),
        (["--model", "elo", "--model-param", "k=-1"], "k >= 0"),
        (["--model", "elo", "--model-param", "k"], "NAME=VALUE"),
        (["--model-param", "k=3"], "--param names"),  # ADR's are --param
    ],
)
def test_a_bad_model_or_parameter_is_a_param_error(argv: list[str], match: str) -> None:
    with pytest.raises(ParamError, match=match):
        pool_model(_parse(argv, {}), Params())


def test_the_command_exits_2_on_a_bad_model(caplog: pytest.LogCaptureFixture) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert run(parser.parse_args(["--model", "glicko3"])) == 2
    errors = [r for r in caplog.records if r.getMessage() == "bad configuration"]
    assert errors and "glicko3" in errors[0].error  # type: ignore[attr-defined]


def _rebuild_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    rebuild.add_arguments(parser)
    required = ["--bootstrap-servers", "b", "--redis-url", "redis://r", "--namespace", "n"]
    return parser.parse_args([*required, "--group", "g", *argv])


def _consumer_stamp(argv: list[str], env: dict[str, str]) -> str:
    """`{ns}:model` as `adr consume` with these flags, environment and file stamps it."""
    config = _parse(argv, env)
    model = pool_model(config, Params.from_overrides(dict(config.params)))
    return model_stamp(model.name, model_parameters(model))


def _rebuild_stamp(argv: list[str], env: dict[str, str]) -> str:
    """`{ns}:model` as `adr rebuild` with these flags, environment and file records it."""
    args = _rebuild_args(argv)
    model = model_from_args(args, engine_params_from_args(args, env), env)
    return model_stamp(model.name, model_parameters(model))


SHARES = ", ".join(['"1/10"'] * 5 + ['"1/20"'] * 10)  # 15 shares summing to 1


@pytest.mark.parametrize(
    ("argv", "env", "file", "want"),
    [
        ([], {"ADR_PARAMS": "theta=300,t_cooldown=30"}, "", {"theta": 300.0, "t_cooldown": 30.0}),
        ([], {"ADR_PROFILE": "recommended"}, "", {"theta": 150.0, "decay_grace": 7.0}),
        ([], {}, f'[params]\nprofile = "recommended"\ntheta = 250\ntier_shares = [{SHARES}]\n',
         {"theta": 250.0, "decay_grace": 7.0}),
        (["--param", "theta=200"], {"ADR_PARAMS": "theta=300"}, "[params]\ntheta = 250\n",
         {"theta": 200.0}),
        (["--profile", "paper"], {"ADR_PROFILE": "recommended"}, "", {"decay_grace": 0.0}),
        ([], {"ADR_MODEL": "elo", "ADR_PARAMS": "t_cooldown=20"}, "[params]\nn_min = 9\n",
         {"model": "elo"}),
        (["--model", "trueskill"], {"ADR_MODEL_PARAMS": "display_k=2"}, "[params]\ntheta=250\n",
         {"display_k": 2.0}),
    ],
)  # fmt: skip
def test_rebuild_records_the_stamp_the_consumer_checks(
    tmp_path: Path, argv: list[str], env: dict[str, str], file: str, want: dict[str, object]
) -> None:
    """`adr rebuild` takes the model and the engine parameters by `adr consume`'s road (flags >
    env > the config file's [params] > defaults): given the consumer's flags, environment and
    file, the pool it rebuilds records the stamp that consumer will check (it read neither
    ADR_PARAMS nor [params], so such a consumer refused the rebuilt pool)."""
    if file:
        path = tmp_path / "adr.toml"
        path.write_text(file)
        env = {**env, "ADR_CONFIG_FILE": str(path)}
    stamp = _rebuild_stamp(argv, env)
    assert stamp == _consumer_stamp(argv, env)
    recorded = json.loads(stamp)
    got = {k: recorded["model"] if k == "model" else recorded["parameters"][k] for k in want}
    assert got == want


@pytest.mark.parametrize(
    "env",
    [
        {"ADR_BATCH_SIZE": "0"},  # the consumer's own rule (Config.__post_init__)
        {"ADR_BATCH_SIZE": "many"},  # not a number
        {"ADR_NAMESPACE": "{bad}", "ADR_LATENESS_MS": "-1", "ADR_MAX_PLAYERS": "0"},
    ],
)
def test_rebuild_checks_only_the_settings_it_reads(tmp_path: Path, env: dict[str, str]) -> None:
    """A bad consumer setting that `adr rebuild` does not use stops the consumer (exit 2), not
    the rebuild; in the file too its value is not checked, while a key the consumer does not
    know still is (a misspelt `model` must not pass)."""
    with pytest.raises(ConsumerError):
        _parse([], env)
    assert _rebuild_stamp(["--model", "elo"], env) == _consumer_stamp(["--model", "elo"], {})
    path = tmp_path / "adr.toml"
    path.write_text('batch_size = 0\n[consume]\nmodel = "elo"\nmax_players = "all"\n')
    in_file = {**env, "ADR_CONFIG_FILE": str(path)}
    assert json.loads(_rebuild_stamp([], in_file))["model"] == "elo"
    path.write_text('modle = "elo"\n')
    with pytest.raises(ConsumerError, match="unknown key 'modle'"):
        _rebuild_stamp([], in_file)
    path.write_text("model = 3\n")  # a setting it reads: checked
    with pytest.raises(ConsumerError, match="model"):
        _rebuild_stamp([], in_file)
