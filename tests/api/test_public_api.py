"""Each package's public surface is its `__all__`, kept exact by tests/api/public_api.json: adding
or removing a name is a deliberate change to that file. Each package's exceptions descend from
the one root its docstring names."""

from __future__ import annotations

import importlib
import json
import re
import types
from pathlib import Path

import pytest

API = json.loads((Path(__file__).parent / "public_api.json").read_text())
ROOTS = {
    "consumer": "ConsumerError",
    "engine": "EngineError",
    "evaluation": "EvaluationError",
    "runtime": "RuntimeConfigError",
    "schemas": "SchemaError",
    "stack": "StackError",
    "tierjob": "TierJobError",
}


@pytest.mark.parametrize("package", sorted(API))
def test_all_is_exactly_the_recorded_surface(package: str) -> None:
    module = importlib.import_module(package)
    exported = getattr(module, "__all__", [])
    assert sorted(exported) == API[package], "update tests/api/public_api.json deliberately"
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    } - {"annotations"}
    assert public == set(exported), "a public name outside __all__, or one missing"


@pytest.mark.parametrize("package", sorted(ROOTS))
def test_exceptions_descend_from_the_documented_root(package: str) -> None:
    module = importlib.import_module(package)
    root = getattr(module, ROOTS[package])
    assert re.search(rf"Exceptions: `{ROOTS[package]}` \(root", module.__doc__ or "")
    for name in module.__all__:
        value = getattr(module, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, root), f"{package}.{name} is not a {root.__name__}"
