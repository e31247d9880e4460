"""Render deploy/k8s overlays as `kubectl apply -k` would: the kustomize library, pinned.

The renderer is tools/kustomize (a few lines of Go over sigs.k8s.io/kustomize/api, the version in
its go.mod), built once into `$ADR_CACHE_DIR/kustomize/` (stack's cache root) and rebuilt only
when its sources change: a clean build (empty Go module and build caches, as on a fresh CI
machine) took 35 to 70 s on the shared 2-core development VM; a cached one is a hash of three
files (0.3 s with the interpreter start). Without Go, or when the Go build fails (no module
proxy reachable, say), it falls back to `kubectl kustomize` (the machine's bundled kustomize).
With neither, `renderer()` raises: the deploy tests fail with that message rather than skip, so
a CI machine cannot pass them unchecked.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from stack._provision import cache_root
from tests.deploy._metrics import REPO

TOOL = REPO / "tools" / "kustomize"
K8S = REPO / "deploy" / "k8s"
BASE = K8S / "base"
OVERLAYS = K8S / "overlays"
BUILD_TIMEOUT_S = 900
RENDER_TIMEOUT_S = 120


class NoRenderer(RuntimeError):
    """Neither Go (to build tools/kustomize) nor kubectl is installed."""


def overlay_names() -> list[str]:
    return sorted(p.name for p in OVERLAYS.iterdir() if (p / "kustomization.yaml").is_file())


def _sources_hash() -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update(name.encode() + b"\0" + (TOOL / name).read_bytes() + b"\0")
    return digest.hexdigest()


def build_tool() -> Path:
    """tools/kustomize built into the cache (once per change of its sources); its path."""
    if shutil.which("go") is None:
        raise NoRenderer("go is not installed")
    folder = cache_root() / "kustomize"
    folder.mkdir(parents=True, exist_ok=True)
    binary, stamp = folder / "kustomize", folder / "kustomize.sources"
    with open(folder / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        want = _sources_hash()
        if binary.is_file() and stamp.is_file() and stamp.read_text() == want:
            return binary
        done = subprocess.run(
            ["go", "build", "-mod=readonly", "-trimpath", "-o", str(binary), "."],
            cwd=TOOL, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"go build of tools/kustomize failed:\n{done.stdout}{done.stderr}")
        stamp.write_text(want)
    return binary


@functools.cache
def renderer() -> tuple[str, ...]:
    """The command that renders a kustomization directory given as its last argument."""
    try:
        return (str(build_tool()),)
    except (NoRenderer, RuntimeError, subprocess.TimeoutExpired) as e:
        if shutil.which("kubectl"):
            return ("kubectl", "kustomize")
        raise NoRenderer(
            f"cannot render deploy/k8s: tools/kustomize did not build ({e}) and kubectl is not "
            "installed; install Go (scripts/test builds tools/kustomize) or kubectl"
        ) from e


@functools.cache
def _render_text(directory: Path) -> str:
    done = subprocess.run(
        [*renderer(), str(directory)], capture_output=True, text=True, timeout=RENDER_TIMEOUT_S
    )
    assert done.returncode == 0, f"rendering {directory} failed:\n{done.stderr}"
    return done.stdout


def render(directory: Path) -> list[dict[str, Any]]:
    """Every object the kustomization in `directory` produces (a fresh copy each call)."""
    return [d for d in yaml.safe_load_all(_render_text(directory)) if d is not None]


def render_overlay(name: str) -> list[dict[str, Any]]:
    return render(OVERLAYS / name)
