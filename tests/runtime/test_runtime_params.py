"""`--profile` / `ADR_PROFILE` under `ADR_PARAMS` under `--param`: one order everywhere."""

from __future__ import annotations

import argparse

import pytest

from engine import PROFILES, ParamError, Params, profile_overrides
from runtime.params import add_param_argument, param_overrides


def test_the_paper_profile_is_table_9_and_recommended_turns_on_every_switch() -> None:
    assert Params.from_overrides(profile_overrides("paper")) == Params()
    rec = Params.from_overrides(profile_overrides("recommended"))
    assert (rec.bound_return_decay, rec.zero_sum_update) == (1.0, 1.0)
    assert (rec.floor_margin, rec.repeat_window, rec.decay_grace, rec.theta) == (
        120.0, 600.0, 7.0, 150.0,
    )  # fmt: skip
    assert rec.logistic_link == 1.0
    with pytest.raises(ParamError):
        profile_overrides("fast")


def test_profile_then_env_then_flags() -> None:
    env = {"ADR_PROFILE": "recommended", "ADR_PARAMS": "theta=200,tau=20"}
    got = param_overrides(["tau=10"], env)
    assert got == {**PROFILES["recommended"], "theta": "200", "tau": "10"}
    # the flag names the profile over the environment's
    assert param_overrides([], env, "paper") == {"theta": "200", "tau": "20"}
    assert param_overrides(["tau=10"]) == {"tau": "10"}  # no environ: no ADR_PROFILE either
    with pytest.raises(ParamError):
        param_overrides([], {"ADR_PROFILE": "nope"})


def test_the_flag_accepts_only_known_profiles() -> None:
    parser = argparse.ArgumentParser()
    add_param_argument(parser)
    assert parser.parse_args(["--profile", "recommended"]).profile == "recommended"
    assert parser.parse_args([]).profile is None
    with pytest.raises(SystemExit):
        parser.parse_args(["--profile", "nope"])
