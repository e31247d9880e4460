"""The model registry: every `RatingModel` a pool can run, by name (`adr consume --model`,
`adr replay --model`, `adr evaluate`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from engine._adr_model import ADR, AdrModel
from engine._errors import ParamError
from engine._model import RatingModel
from engine.params import Params

MODELS: Final[tuple[str, ...]] = (ADR,)
"""The registered model names; `adr` (the default) first."""


def model_named(
    name: str, overrides: Mapping[str, Any] | None = None, params: Params | None = None
) -> RatingModel[Any]:
    """The model `name` with its parameters: its defaults with `overrides` (name -> value or
    text) applied. For `adr` they are Params names, applied on top of `params` (default Table 9).
    ParamError (exit 2 in the CLIs) for an unknown model, an unknown parameter or a bad value."""
    given = dict(overrides or {})
    if name == ADR:
        return AdrModel((params or Params()).with_overrides(given))
    raise ParamError(f"unknown model {name!r} (known: {', '.join(MODELS)})")
