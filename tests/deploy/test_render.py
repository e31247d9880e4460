"""tools/kustomize, the renderer of the deploy tests, renders as `kubectl apply -k` would."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.deploy._render import OVERLAYS, _render_text, build_tool, overlay_names


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl to compare with")
@pytest.mark.parametrize("env", overlay_names())
def test_the_pinned_kustomize_renders_what_kubectl_does(env: str) -> None:
    """A cross-check where kubectl is installed (the tests themselves never need it)."""
    if shutil.which("go") is None:
        pytest.skip("no Go: the tests render with kubectl itself")
    ours = _render_text(OVERLAYS / env)
    theirs = subprocess.run(
        ["kubectl", "kustomize", str(OVERLAYS / env)], capture_output=True, text=True, timeout=120
    )
    assert theirs.returncode == 0, theirs.stderr
    assert ours == theirs.stdout


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go (the deploy tests use kubectl)")
def test_the_built_renderer_is_reused_while_its_sources_do_not_change() -> None:
    first = build_tool()
    built_at = first.stat().st_mtime_ns
    assert build_tool() == first and first.stat().st_mtime_ns == built_at
