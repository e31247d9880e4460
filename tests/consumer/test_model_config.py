"""`adr consume --model`: the model and its parameters from flags, environment and the config
file (flags > env > file, as every setting; `--model-param` on top), checked by the registry."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from consumer.cli import run
from consumer.config import Config, add_arguments, from_args, pool_model
from engine import ParamError, Params, model_parameters


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
