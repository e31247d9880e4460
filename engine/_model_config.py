"""Typed, validated parameters of the models other than ADR (ADR's are engine.Params).

Each model's config is a frozen dataclass of numbers (and, for Elo, the name of its K rule);
`configured` builds one from its defaults and a mapping of overrides (name -> value or text, as
`--model-param` gives them), with a ParamError for an unknown name or a value that is not one.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, TypeVar

from engine._errors import ParamError

C = TypeVar("C")


def configured(cls: type[C], overrides: Mapping[str, Any]) -> C:
    """`cls`'s defaults with `overrides` applied (ParamError: unknown name or bad value)."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    for name, raw in overrides.items():
        field = fields.get(name)
        if field is None:
            raise ParamError(f"unknown parameter {name!r} (known: {', '.join(fields)})")
        values[name] = _parse(name, raw, field.default)
    return cls(**values)


def _parse(name: str, raw: Any, default: Any) -> Any:
    """One value, typed as the field's default: a number (int or float), or a name (str)."""
    if isinstance(default, str):
        if not isinstance(raw, str):
            raise ParamError(f"bad value for {name}: {raw!r} (not a name)")
        return raw
    try:
        if isinstance(raw, bool) or not isinstance(raw, int | float | str):
            raise ValueError("not a number")
        if isinstance(default, int):
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError("not an integer")
            return int(raw)
        value = float(raw)
    except (ValueError, TypeError) as exc:
        raise ParamError(f"bad value for {name}: {raw!r} ({exc})") from exc
    return value


def check(rules: list[tuple[bool, str]], config: object) -> None:
    """Every field a finite number of its default's type (an int given for a float field becomes
    that float: one float type for every formula) or a name, then the model's own rules."""
    for f in dataclasses.fields(config):  # type: ignore[arg-type]
        value = getattr(config, f.name)
        if isinstance(f.default, str):
            if not isinstance(value, str):
                raise ParamError(f"{f.name} must be a name, got {value!r}")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ParamError(f"{f.name} must be a number, got {value!r}")
        if isinstance(f.default, int) and not isinstance(value, int):
            raise ParamError(f"{f.name} must be an integer, got {value!r}")
        if not math.isfinite(value):
            raise ParamError(f"{f.name} must be finite, got {value!r}")
        if isinstance(f.default, float) and isinstance(value, int):
            object.__setattr__(config, f.name, float(value))
    for ok, rule in rules:
        if not ok:
            raise ParamError(f"parameter rule violated: {rule}")
