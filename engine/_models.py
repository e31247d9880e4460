"""The model registry: every `RatingModel` a pool can run, by name (`adr consume --model`,
`adr replay --model`, `adr evaluate`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from engine._adr_model import ADR, AdrModel
from engine._elo import ELO, EloConfig, EloModel
from engine._errors import ParamError
from engine._glicko2 import GLICKO2, Glicko2Config, Glicko2Model
from engine._model import RatingModel
from engine._model_config import configured
from engine._season import SeasonSchedule
from engine._trueskill import TRUESKILL, TrueSkillConfig, TrueSkillModel
from engine._weng_lin import WENG_LIN, WengLinConfig, WengLinModel
from engine.params import Params

MODELS: Final[tuple[str, ...]] = (ADR, ELO, GLICKO2, TRUESKILL, WENG_LIN)
"""The registered model names; `adr` (the default) first."""


def model_named(
    name: str,
    overrides: Mapping[str, Any] | None = None,
    params: Params | None = None,
    *,
    typed: bool = False,
) -> RatingModel[Any]:
    """The model `name` with its parameters: its defaults with `overrides` (name -> value or
    text) applied. For `adr` they are Params names, applied on top of `params` (default Table 9);
    for the others the names of their config (EloConfig, Glicko2Config, TrueSkillConfig,
    WengLinConfig). ParamError (exit 2 in the CLIs) for an unknown model, an unknown parameter
    or a bad value, or for another model than adr given `params` with adr's pair_decay
    (Params.refuse_pair_decay). `typed`: the values of a pool's `{ns}:model` stamp, each of its
    JSON type (text is no number there; engine/_model_config.py)."""
    given = dict(overrides or {})
    if name == ADR:
        return AdrModel((params or Params()).with_overrides(given))
    if name in MODELS and params is not None:
        params.refuse_pair_decay(f"the model {name!r}")
    if name == ELO:
        return EloModel(configured(EloConfig, given, typed=typed))
    if name == GLICKO2:
        return Glicko2Model(configured(Glicko2Config, given, typed=typed))
    if name == TRUESKILL:
        return TrueSkillModel(configured(TrueSkillConfig, given, typed=typed))
    if name == WENG_LIN:
        return WengLinModel(configured(WengLinConfig, given, typed=typed))
    raise ParamError(f"unknown model {name!r} (known: {', '.join(MODELS)})")


def check_seasons(model: RatingModel[Any], schedule: SeasonSchedule) -> None:
    """ParamError if `schedule` asks `model` for what it cannot do: an uncertainty raise
    (`sigma_raise` > 0) for Elo, which keeps no uncertainty (its K rules read the games played),
    so the raise would be dropped without a word. `adr season close` refuses such a close; a
    hand-written `--seasons` file for `adr replay`/`adr rebuild` is refused by the same rule."""
    if model.name != ELO:
        return
    for start in schedule.starts:
        if start.reset.sigma_raise:
            raise ParamError(
                f"season {start.id!r}: the pool runs elo, which has no uncertainty to raise: "
                "sigma_raise must be 0 (docs/models.md, Seasons)"
            )


def model_parameters(model: RatingModel[Any]) -> dict[str, Any]:
    """name -> value of every parameter of `model`: ADR's Params, or the other models' config
    (what a pool records a digest of, redis_layout/pool_model.py)."""
    config = model.params if isinstance(model, AdrModel) else getattr(model, "config", None)
    if config is None or not dataclasses.is_dataclass(config):
        raise ParamError(f"model {model.name!r} has no parameters to record")
    return {
        f.name: list(v) if isinstance(v := getattr(config, f.name), tuple) else v
        for f in dataclasses.fields(config)
    }
