"""Each package's public surface is its `__all__`, kept exact by tests/api/public_api.json:
adding or removing a name is a deliberate change to that file. Each package's exceptions descend
from the one root its docstring names.

The packages are inspected in a fresh interpreter at the repository root: inside this pytest
session, `evaluation` would name the tests/evaluation folder instead.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
API = json.loads((Path(__file__).parent / "public_api.json").read_text())
ROOTS = {
    "consumer": "ConsumerError",
    "engine": "EngineError",
    "evaluation": "EvaluationError",
    "leaderboard": "LeaderboardError",
    "redis_layout": "LayoutError",
    "runtime": "RuntimeConfigError",
    "schemas": "SchemaError",
    "stack": "StackError",
    "tierjob": "TierJobError",
}
_PROBE = """
import importlib, json, sys, types
out = {}
for name in sys.argv[1:]:
    m = importlib.import_module(name)
    exported = list(getattr(m, "__all__", []))
    for n in exported:
        getattr(m, n)  # a name loaded on first use is then in the module too
    public = sorted(n for n, v in vars(m).items()
                    if not n.startswith("_") and not isinstance(v, types.ModuleType)
                    and n != "annotations")
    errors = {n: [c.__name__ for c in getattr(m, n).__mro__]
              for n in exported
              if isinstance(getattr(m, n), type) and issubclass(getattr(m, n), Exception)}
    out[name] = {"all": exported, "public": public, "doc": m.__doc__ or "", "errors": errors}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def surfaces() -> dict[str, dict[str, object]]:
    argv = [sys.executable, "-c", _PROBE, *sorted(API)]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("package", sorted(API))
def test_all_is_exactly_the_recorded_surface(surfaces, package: str) -> None:
    found = surfaces[package]
    assert sorted(found["all"]) == API[package], "update tests/api/public_api.json deliberately"
    assert found["public"] == sorted(found["all"]), "a public name outside __all__, or missing"


@pytest.mark.parametrize("package", sorted(ROOTS))
def test_exceptions_descend_from_the_documented_root(surfaces, package: str) -> None:
    found = surfaces[package]
    root = ROOTS[package]
    assert re.search(rf"Exceptions: `{root}` \(root", found["doc"])
    assert root in found["errors"], f"{package} does not export its root {root}"
    for name, mro in found["errors"].items():
        assert root in mro, f"{package}.{name} is not a {root}"


SERVICES = (
    "consumer", "engine", "evaluation", "leaderboard", "loadgen", "redis_layout", "runtime",
    "schemas", "stack", "tierjob",
)  # fmt: skip


@pytest.mark.parametrize("package", SERVICES)
def test_no_service_imports_the_cli(package: str) -> None:
    """The layers point down: adr_cli dispatches to the services, never the other way."""
    import ast

    offenders = []
    for path in sorted((REPO / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "adr_cli" or n.startswith("adr_cli.") for n in names):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders
