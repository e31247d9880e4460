"""The compiled build: the engine and the consumer's hot path compiled with mypyc, same sources.

    python -m runtime.compiled build       # (re)build into build/mypyc/ (scripts/_setup.sh does)
    python -m runtime.compiled status      # prints "compiled" or "pure: <why>"; exit 0 / 1

The build copies the packages below into build/mypyc/ (ADR_COMPILED_DIR) and compiles the listed
modules there. `adr` (adr_cli/main.py) puts that folder first on sys.path before anything imports
the packages, but only while the copies are byte-identical to the sources and were built for this
interpreter; otherwise, or with ADR_COMPILED=0, every process runs the pure modules, which stay the
reference (tests compare the two). The build needs a C compiler and the Python headers; without
them setup warns and the pure modules run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
PACKAGES: Final = ("engine", "consumer", "schemas", "redis_layout")
"""Copied whole: the compiled modules import each other, and the copies must shadow together."""
COMPILED: Final = (
    "engine/params.py",
    "engine/_errors.py",
    "engine/_cooldown.py",
    "engine/_decay.py",
    "engine/_learning_rate.py",
    "engine/_outcome.py",
    "engine/_sigma.py",
    "engine/_snapshot.py",
    "engine/_tiers.py",
    "engine/_update.py",
    "engine/_kill.py",
    "engine/_pairs.py",
    "engine/_store.py",
    "engine/_book.py",
    "consumer/_batch.py",
    "consumer/_cache.py",
    "redis_layout/keys.py",
    "redis_layout/player_codec.py",
)
"""engine/_state.py and schemas/ stay interpreted: their classes are msgspec Structs."""
_MANIFEST: Final = "manifest.json"
_RUNTIME: Final = (".py", ".lua", ".json")
_OFF: Final = ("0", "off", "no", "false", "pure")


def build_dir() -> Path:
    return Path(os.environ.get("ADR_COMPILED_DIR") or ROOT / "build" / "mypyc")


def _sources() -> dict[str, str]:
    """Relative path -> sha256 of every file the copied packages run (code and data, not docs)."""
    digests: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in _RUNTIME:
                rel = path.relative_to(ROOT).as_posix()
                digests[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def stale_reason(out: Path | None = None) -> str | None:
    """None when `out` holds a build of the current sources for this interpreter, else why not."""
    out = out or build_dir()
    try:
        manifest = json.loads((out / _MANIFEST).read_text())
    except (OSError, ValueError):
        return f"no compiled build in {out} (python -m runtime.compiled build)"
    if manifest.get("cache_tag") != sys.implementation.cache_tag:
        return f"compiled for {manifest.get('cache_tag')}, this is {sys.implementation.cache_tag}"
    if manifest.get("sources") != _sources():
        return "compiled from other sources (rebuild: python -m runtime.compiled build)"
    return None


def build(out: Path | None = None) -> None:
    """Copy the packages into `out` and compile COMPILED there (raises CalledProcessError)."""
    out = out or build_dir()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    sources = _sources()
    for package in PACKAGES:
        shutil.copytree(ROOT / package, out / package, ignore=shutil.ignore_patterns("__pycache__"))
    command = [sys.executable, "-m", "mypyc", *COMPILED]
    done = subprocess.run(command, cwd=out, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise subprocess.CalledProcessError(done.returncode, command)
    shutil.rmtree(out / "build", ignore_errors=True)  # setuptools' intermediate files
    manifest = {"cache_tag": sys.implementation.cache_tag, "sources": sources}
    (out / _MANIFEST).write_text(json.dumps(manifest, indent=1))


def activate() -> str:
    """Put a current build first on sys.path; returns "compiled" or "pure: <why>".

    Must run before engine, consumer or schemas is imported (adr_cli/main.py calls it first).
    """
    if os.environ.get("ADR_COMPILED", "").strip().lower() in _OFF:
        return "pure: ADR_COMPILED=0"
    already = [p for p in PACKAGES if p in sys.modules]
    if already:
        return f"pure: {', '.join(already)} imported before the build could be put first"
    reason = stale_reason()
    if reason is not None:
        return f"pure: {reason}"
    sys.path.insert(0, str(build_dir()))
    return "compiled"


STATE = "pure: not activated"
"""What `activate` decided in this process (logged by the long-running commands)."""


def activate_once() -> str:
    global STATE
    if STATE == "pure: not activated":
        STATE = activate()
    return STATE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.compiled", description=__doc__)
    parser.add_argument("action", choices=("build", "status"))
    parser.add_argument("--if-stale", action="store_true", help="build only when stale")
    args = parser.parse_args(argv)
    reason = stale_reason()
    if args.action == "status":
        print("compiled" if reason is None else f"pure: {reason}")
        return 0 if reason is None else 1
    if args.if_stale and reason is None:
        return 0
    print(f"compiling {len(COMPILED)} modules with mypyc into {build_dir()}", file=sys.stderr)
    try:
        build()
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"compiled build failed ({exc}); the pure modules will run", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
