"""The compiled build: a wheel compiled by the build backend (setup.py), told apart at run time.

The sources (an editable install, or the tree first on sys.path) run pure and say so; the wheel in
the compiled environment (runtime.compiled.venv(), made by scripts/_setup.sh) runs every COMPILED
module as an extension module when its build says it compiled, and the .py beside each one with
ADR_COMPILED=0; a pure wheel says why it is pure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from runtime import compiled

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import json; from runtime import compiled; state = compiled.activate();"
    "import importlib; [importlib.import_module(m) for m in compiled.MODULES];"
    "import sys; print(json.dumps([state, compiled.state(),"
    " {m: sys.modules[m].__file__ for m in compiled.MODULES}]))"
)


def _probe(python: str, cwd: Path, pythonpath: str | None, **env: str) -> tuple[str, str, dict]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ADR_COMPILED")}
    if pythonpath is not None:
        base["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [python, "-c", PROBE],
        cwd=cwd,  # not the repository root: "" first on sys.path would shadow an installed build
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    activated, state, files = json.loads(done.stdout)
    return activated, state, files


def _current_compiled_venv() -> Path:
    venv = compiled.venv()
    reason = compiled.stale_reason(venv, ROOT)
    if reason is not None:  # scripts/test builds it; only a machine without gcc lacks it
        (pytest.fail if compiled.required() else pytest.skip)(reason)
    return venv


def test_the_sources_run_pure_and_say_so(tmp_path: Path) -> None:
    activated, state, files = _probe(sys.executable, tmp_path, str(ROOT))
    assert activated == state
    assert state.startswith(f"pure: the sources in {ROOT} ")
    assert all(path.startswith(str(ROOT)) and path.endswith(".py") for path in files.values())


def test_a_compiled_wheel_runs_its_extension_modules_unless_turned_off(tmp_path: Path) -> None:
    venv = _current_compiled_venv()
    python = str(venv / "bin" / "python")
    manifest = compiled.installed(venv) or {}
    if not manifest["compiled"]:
        reason = f"the compiled environment was built pure: {manifest['why']}"
        (pytest.fail if compiled.required() else pytest.skip)(reason)
    assert manifest["why"].startswith("mypyc ")
    activated, state, files = _probe(python, tmp_path, None)
    assert activated == state == "compiled"
    assert set(files) == set(compiled.MODULES)
    for module, path in files.items():
        assert compiled.is_extension(path), (module, path)
        assert (
            "site-packages" in path
            and Path(path).with_name(module.rpartition(".")[2] + ".py").is_file()
        )  # the wheel ships the source beside each extension module
    activated, state, files = _probe(python, tmp_path, None, ADR_COMPILED="0")
    assert activated == state == "pure: ADR_COMPILED=0"
    assert all("site-packages" in p and p.endswith(".py") for p in files.values())
    status = subprocess.run(
        [python, "-P", "-m", "runtime.compiled", "status"],
        cwd=ROOT,  # -P: the installed package even from the source tree (scripts/demo's case)
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ADR_COMPILED")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (status.returncode, status.stdout) == (0, "compiled\n")


def test_a_pure_wheel_says_why(tmp_path: Path) -> None:
    """What a wheel built without a C compiler holds: the .py files and runtime/_build.json."""
    site = tmp_path / "site"
    for package in ("engine", "consumer", "schemas", "redis_layout", "runtime"):
        shutil.copytree(
            ROOT / package, site / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    manifest = {"compiled": False, "why": "no C compiler (cc)", "sources": {}}
    (site / "runtime" / compiled.MANIFEST).write_text(json.dumps(manifest))
    activated, state, _ = _probe(sys.executable, tmp_path, str(site))
    assert state == activated == "pure: built without mypyc (no C compiler (cc))"


def test_why_a_build_here_would_be_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADR_COMPILED", "0")
    assert compiled.cannot_compile() == "ADR_COMPILED=0 at build time"
    monkeypatch.delenv("ADR_COMPILED")
    monkeypatch.setenv("CC", "/nonexistent/cc -O2")
    assert compiled.cannot_compile() == "no C compiler (/nonexistent/cc -O2)"


def test_a_stale_or_missing_compiled_environment_is_not_current(tmp_path: Path) -> None:
    assert "no wheel install" in (compiled.stale_reason(tmp_path, ROOT) or "")
    runtime_dir = tmp_path / "lib" / "python3.11" / "site-packages" / "runtime"
    runtime_dir.mkdir(parents=True)
    manifest = {"compiled": True, "why": "mypyc", "sources": {"engine/_book.py": "0" * 64}}
    (runtime_dir / compiled.MANIFEST).write_text(json.dumps(manifest))
    assert "other sources" in (compiled.stale_reason(tmp_path, ROOT) or "")
    manifest["sources"] = compiled.sources(ROOT)
    (runtime_dir / compiled.MANIFEST).write_text(json.dumps(manifest))
    assert compiled.stale_reason(tmp_path, ROOT) is None
    digests = compiled.sources(ROOT)
    assert {
        "setup.py",
        "pyproject.toml",
        "runtime/compiled.py",
        "redis_layout/scripts/apply.lua",
    } <= set(digests)
    assert all(path.partition("/")[0] != "tests" for path in digests)


def test_the_build_uses_the_locked_versions() -> None:
    """[build-system].requires pins mypy (mypyc) and msgspec as constraints.txt does."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = dict(
        re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line).groups()  # type: ignore[union-attr]
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    required = {
        name: version
        for name, _, version in (r.partition("==") for r in pyproject["build-system"]["requires"])
        if version
    }
    assert set(required) == {"mypy", "msgspec"}
    assert required == {name: pins[name] for name in required}
    assert set(compiled.COMPILED) <= {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")}
