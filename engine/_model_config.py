"""Typed, validated parameters of the models other than ADR (ADR's are engine.Params).

Each model's config is a frozen dataclass of numbers (and, for Elo, the name of its K rule);
`configured` builds one from its defaults and a mapping of overrides (name -> value or text, as
`--model-param` gives them), with a ParamError for an unknown name or a value that is not one.
With `typed`, a value must already have its JSON type (a number, or a string for a name), as a
pool's `{ns}:model` stamp records it: text is no number there (readers in other languages read
the stamp's JSON types, examples/, and must answer the same).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, TypeVar

from engine._errors import ParamError

C = TypeVar("C")


def configured(cls: type[C], overrides: Mapping[str, Any], *, typed: bool = False) -> C:
    """`cls`'s defaults with `overrides` applied (ParamError: unknown name or bad value; with
    `typed`, text given for a number too)."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    for name, raw in overrides.items():
        field = fields.get(name)
        if field is None:
            raise ParamError(f"unknown parameter {name!r} (known: {', '.join(fields)})")
        if typed and not isinstance(field.default, str) and isinstance(raw, str):
            raise ParamError(f"bad value for {name}: {raw!r} (not a number)")
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
    except (ValueError, TypeError, OverflowError) as exc:  # Overflow: an int past float's range
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
        if not _finite(value):
            raise ParamError(f"{f.name} must be finite, got {value!r}")
        if isinstance(f.default, float) and isinstance(value, int):
            object.__setattr__(config, f.name, float(value))
    for ok, rule in rules:
        if not ok:
            raise ParamError(f"parameter rule violated: {rule}")


def _finite(value: float) -> bool:
    """Finite, and within float's range (an int past it, 10**400, is no value a formula of
    floats can use: math.isfinite raises OverflowError for it)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
