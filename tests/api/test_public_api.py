"""Each package's public surface is its `__all__`, kept exact by tests/api/public_api.json:
adding or removing a name is a deliberate change to that file. Each package's exceptions descend
from the one root its docstring names.

One convention for modules (docs/design.md, "Public surfaces"): a module whose name starts with
`_` is private to its package (only the package itself, its tests and the benches import it); a
module without one is addressed by path from outside: a process entry point (`cli`, `config`,
`__main__`, a module adr_cli's SUBCOMMANDS names), a module another package, bench/, tools/ or
examples/ imports, or one the package docstring names (`params.py`).

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
    "adr_cli": "CliError",
    "consumer": "ConsumerError",
    "engine": "EngineError",
    "evaluation": "EvaluationError",
    "leaderboard": "LeaderboardError",
    "redis_layout": "LayoutError",
    "runtime": "RuntimeConfigError",
    "schemas": "SchemaError",
    "serve": "ServeError",
    "stack": "StackError",
    "tierjob": "TierJobError",
}
_PROBE = """
import importlib, json, pkgutil, sys, types
out = {}
for name in sys.argv[1:]:
    m = importlib.import_module(name)
    defined = {}  # every Exception class a module of the package defines, private ones too
    for info in pkgutil.iter_modules(m.__path__):
        if info.name == "__main__":
            continue
        try:
            sub = importlib.import_module(f"{name}.{info.name}")
        except ModuleNotFoundError as exc:  # an optional extra (adr evaluate's) not installed
            if (exc.name or "").partition(".")[0] in sys.argv[1:]:
                raise
            continue
        for v in vars(sub).values():
            if (isinstance(v, type) and issubclass(v, Exception)
                    and v.__module__.partition(".")[0] == name):
                defined[f"{v.__module__}.{v.__qualname__}"] = [c.__name__ for c in v.__mro__]
    exported = list(getattr(m, "__all__", []))
    for n in exported:
        getattr(m, n)  # a name loaded on first use is then in the module too
    public = sorted(n for n, v in vars(m).items()
                    if not n.startswith("_") and not isinstance(v, types.ModuleType)
                    and n != "annotations")
    errors = {n: [c.__name__ for c in getattr(m, n).__mro__]
              for n in exported
              if isinstance(getattr(m, n), type) and issubclass(getattr(m, n), Exception)}
    out[name] = {"all": exported, "public": public, "doc": m.__doc__ or "", "errors": errors,
                 "has_all": "__all__" in vars(m), "defined": defined}
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
    assert found["has_all"], f"{package}/__init__.py states no __all__"
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
    for name, mro in found["defined"].items():
        assert root in mro, f"{name} is not a {root}"
        short = name.rpartition(".")[2]
        if not short.startswith("_"):
            assert f"`{short}`" in found["doc"], f"the docstring of {package} omits {short}"


def test_every_package_is_covered(surfaces) -> None:
    """Every top-level package of the repository has a recorded surface; a package without a
    root exception (loadgen) defines no exception class at all."""
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")}
    assert packages - {"tests"} == set(API)
    for package in set(API) - set(ROOTS):
        assert surfaces[package]["defined"] == {}, f"{package} needs a root exception"
        assert "Exceptions: none of its own" in surfaces[package]["doc"]


ENTRY_POINTS = {"cli", "config", "__main__"}


def _references(path: Path) -> set[str]:
    """The dotted module names `path` imports (`from a import b` names `a` and `a.b`) or names
    in a string (importlib, adr_cli's SUBCOMMANDS)."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
    return found


_NOT_CODE = frozenset({"tests", "build", "dist"})
"""Top folders whose .py files are not the project's code: tests, and the copies a wheel build
leaves in build/ (setup.py) or dist/."""


@pytest.fixture(scope="module")
def references() -> dict[str, set[str]]:
    """Module name -> the top folders (or files) of the code that references it, tests aside."""
    refs: dict[str, set[str]] = {}
    for path in sorted(REPO.rglob("*.py")):
        rel = path.relative_to(REPO)
        if rel.parts[0] in _NOT_CODE or rel.parts[0].startswith("."):
            continue
        for name in _references(path):
            refs.setdefault(name, set()).add(rel.parts[0])
    return refs


@pytest.mark.parametrize("package", sorted(API))
def test_private_modules_are_imported_only_by_their_package(references, package: str) -> None:
    """`pkg._mod` is imported by pkg itself, by tests and by the benches, nowhere else."""
    offenders = {
        f"{name} <- {sorted(users - {package, 'bench'})}"
        for name, users in references.items()
        if name.startswith(f"{package}._") and users - {package, "bench"}
    }
    assert not offenders


@pytest.mark.parametrize("package", sorted(API))
def test_public_modules_are_addressed_from_outside(references, surfaces, package: str) -> None:
    """A module named without `_` is an entry point, is imported from outside its package (tests
    aside), or is named by its package's docstring; otherwise it should start with `_`."""
    from adr_cli.main import SUBCOMMANDS

    doc = surfaces[package]["doc"]
    commands = {module for module, _ in SUBCOMMANDS.values()}
    internal = []
    for path in sorted((REPO / package).glob("*.py")):
        module = path.stem
        if module.startswith("_") or module in ENTRY_POINTS or f"{module}.py" in doc:
            continue
        if f"{package}.{module}" in commands:
            continue
        users = references.get(f"{package}.{module}", set()) - {package}
        if not users:
            internal.append(f"{package}/{path.name}")
    assert not internal, "name it _module, or say in the package docstring why it is public"


SERVICES = (
    "consumer", "engine", "evaluation", "leaderboard", "loadgen", "redis_layout", "runtime",
    "schemas", "serve", "stack", "tierjob",
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
