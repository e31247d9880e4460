"""The compiled build is used only while it matches the sources and this interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import compiled

PROBE = (
    "from runtime import compiled; print(compiled.activate_once());"
    "import consumer._batch as b; print(b.__file__)"
)


def _probe(tmp_path: Path, **env: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,  # not the repository root: "" first on sys.path would shadow the build
        env={**os.environ, "PYTHONPATH": str(compiled.ROOT), **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.splitlines()


def test_no_build_means_the_pure_modules(tmp_path: Path) -> None:
    assert "no compiled build" in (compiled.stale_reason(tmp_path) or "")
    state, module = _probe(tmp_path, ADR_COMPILED_DIR=str(tmp_path / "none"))
    assert state.startswith("pure: no compiled build") and module.endswith("consumer/_batch.py")


def test_a_build_of_other_sources_or_another_interpreter_is_not_used(tmp_path: Path) -> None:
    manifest = {"cache_tag": "cpython-01", "sources": {}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert "compiled for cpython-01" in (compiled.stale_reason(tmp_path) or "")
    manifest["cache_tag"] = sys.implementation.cache_tag
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert "other sources" in (compiled.stale_reason(tmp_path) or "")


def test_a_current_build_is_used_unless_turned_off(tmp_path: Path) -> None:
    reason = compiled.stale_reason()
    if reason is not None:
        pytest.skip(reason)  # scripts/test builds it; only a machine without gcc lacks it
    state, module = _probe(tmp_path)
    assert state == "compiled" and module.endswith(".so")
    state, module = _probe(tmp_path, ADR_COMPILED="0")
    assert state == "pure: ADR_COMPILED=0" and module.endswith("consumer/_batch.py")
