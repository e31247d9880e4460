"""The compiled build: the engine and the consumer's hot path compiled with mypyc, same sources.

    python -m runtime.compiled status        # "compiled" or "pure: <why>"; exit 0 / 1
    python -m runtime.compiled current [VENV]  # exit 0 if VENV holds a build of these sources
    python -m runtime.compiled native        # build adr rebuild's native core in place

The build backend compiles (setup.py, as black does with mypycify): building the wheel
(`pip install .`, `pip wheel .`, the Dockerfile) passes the COMPILED modules below to mypyc, and
the wheel ships each one's extension module (.so) next to its .py; a plain import then loads the
extension. Without mypy (mypyc) in the build environment, without a C compiler or the Python
headers, or with ADR_COMPILED=0 at build time, setup.py warns and builds a pure wheel. An
editable install (`pip install -e .`) is always pure: compiled in place, the .so files would sit
in the source tree and shadow the .py files a developer edits.

So a checkout has two environments (scripts/_setup.sh makes both):
  - `.venv`, the development one: the project installed editable, pure. The tests, ruff and mypy
    run here, and an edited .py takes effect at once. The pure modules are the reference.
  - `.venv/compiled`, the shipped one: the project's wheel, compiled, plus the runtime
    dependencies only; rebuilt when the sources change (`current` says whether they did).
    `scripts/demo` runs its `adr`; the image is built the same way. The tests run it beside the
    sources and require bit-identical results (tests/engine/test_engine_compiled.py).
Which one a process runs is decided by plain imports; `state()` (logged by `adr consume` at
start, printed by `status`) reads where the modules come from, without importing them.

The wheel carries runtime/_build.json, written by setup.py: whether mypyc compiled it (and if
not, why) and a digest of the sources it was built from. ADR_COMPILED=0 at run time (`activate`,
called by `adr` before anything imports the packages) makes an installed compiled build load the
.py next to each extension instead, to rule the compiled build out without reinstalling.
ADR_COMPILED=1 (.ci/run) makes a missing or pure compiled build fail the set-up and the tests
instead of warning and skipping.

Only the standard library is imported here: setup.py loads this file by path at build time.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import shlex
import shutil
import sys
import sysconfig
import tomllib
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from pathlib import Path
from types import ModuleType
from typing import Any, Final

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
    "engine/_pair_load.py",
    "engine/_store.py",
    "engine/_counting.py",
    "engine/_book.py",
    "engine/_adr_model.py",
    "engine/_model_config.py",
    "engine/_gaussian.py",
    "engine/_gaussian_player.py",
    "engine/_elo.py",
    "engine/_glicko2.py",
    "engine/_trueskill.py",
    "engine/_weng_lin.py",
    "consumer/_batch.py",
    "consumer/_view.py",
    "consumer/_intake.py",
    "redis_layout/keys.py",
    "redis_layout/player_codec.py",
)
"""The modules mypyc compiles (paths from the project root); the one list, read by setup.py.
engine/_state.py and schemas/ stay interpreted: their classes are msgspec Structs; so does
engine/_packed_state.py, whose Structs need `array_like=True`, a class keyword mypyc drops."""
MODULES: Final = tuple(path.removesuffix(".py").replace("/", ".") for path in COMPILED)
NATIVE_SOURCE: Final = "adr_cli/_rebuild_core.c"
"""`adr rebuild`'s native batch core (docs/native.md): a C extension the compiled wheel carries
beside the mypyc modules (setup.py), built under the same conditions (a C compiler, the Python
headers, not ADR_COMPILED=0); without it `adr rebuild` runs its pure path."""
NATIVE_MODULE: Final = NATIVE_SOURCE.removesuffix(".c").replace("/", ".")  # as MODULES
NATIVE_CFLAGS: Final = ("-O2", "-std=gnu11", "-ffp-contract=off", "-fno-fast-math")
"""Bit-identity with the pure engine: no fused multiply-add (-ffp-contract=off; gcc contracts
by default), no fast-math reassociation; x86-64 and arm64 doubles are IEEE-754 binary64."""
MANIFEST: Final = "_build.json"
"""Written by setup.py into the wheel's runtime/ package: {"compiled", "why", "sources"}."""
_DATA: Final = (".py", ".c", ".lua", ".json", ".xml", ".properties")
_BUILD_FILES: Final = ("pyproject.toml", "setup.py", "constraints.txt")
_OFF: Final = ("0", "off", "no", "false", "pure")
_SUFFIXES: Final = (*importlib.machinery.EXTENSION_SUFFIXES, *importlib.machinery.SOURCE_SUFFIXES)
"""In the order import tries them: an extension module shadows the .py beside it."""


def packages(root: Path) -> list[str]:
    """The top-level packages the wheel holds, as pyproject.toml's package discovery lists them."""
    with (root / "pyproject.toml").open("rb") as handle:
        include = tomllib.load(handle)["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted({pattern.rstrip("*").rstrip(".") for pattern in include})


def sources(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of what a wheel is built from: the build's files (the pinned
    versions too) and every file of the wheel's packages that runs (code and data)."""
    files = [root / name for name in _BUILD_FILES if (root / name).is_file()]
    for package in packages(root):
        files += sorted(
            path
            for path in (root / package).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in _DATA
        )
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in files
    }


def _off() -> bool:
    return os.environ.get("ADR_COMPILED", "").strip().lower() in _OFF


def required() -> bool:
    """ADR_COMPILED=1 (.ci/run): a missing or pure compiled build is an error, not a skip."""
    return os.environ.get("ADR_COMPILED", "").strip() == "1"


def cannot_compile() -> str | None:
    """Why a wheel built here and now would be pure (setup.py asks), or None if mypyc can build."""
    if _off():
        return "ADR_COMPILED=0 at build time"
    if importlib.util.find_spec("mypyc") is None:
        return "mypy (mypyc) is not installed in the build environment"
    return cannot_compile_native()  # mypyc's C needs what the native core's does


def venv() -> Path:
    """The compiled build's environment: $ADR_COMPILED_VENV, else `compiled` in this one."""
    return Path(os.environ.get("ADR_COMPILED_VENV") or Path(sys.prefix) / "compiled")


def _preferring_source() -> bool:
    return any(isinstance(finder, _PreferSource) for finder in sys.meta_path)


def _manifest(runtime_dir: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads((runtime_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def _origin(module: str) -> str | None:
    """The file `import module` loads (or loaded), found without importing the module itself."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        return getattr(loaded, "__file__", None)
    parent, _, leaf = module.rpartition(".")
    spec = importlib.util.find_spec(parent)  # top-level: imports nothing
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for suffix in _SUFFIXES:
            if (Path(folder) / (leaf + suffix)).is_file():
                if suffix in importlib.machinery.EXTENSION_SUFFIXES and _preferring_source():
                    return str(Path(folder) / (leaf + ".py"))
                return str(Path(folder) / (leaf + suffix))
    return None


def is_extension(path: str | None) -> bool:
    return path is not None and path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def state() -> str:
    """ "compiled" when every COMPILED module runs compiled in this process, else "pure: <why>"."""
    origins = {module: _origin(module) for module in MODULES}
    pure = [module for module, origin in origins.items() if not is_extension(origin)]
    if not pure:
        return "compiled"
    if len(pure) < len(MODULES):
        return f"pure: only partly compiled ({', '.join(pure)} run from .py files)"
    if _preferring_source():
        return "pure: ADR_COMPILED=0"
    where = Path(origins[MODULES[0]] or __file__).resolve().parent.parent
    manifest = _manifest(Path(__file__).resolve().parent)
    if manifest is not None and manifest.get("compiled"):
        return f"pure: built compiled, but no extension module is beside the .py files in {where}"
    if manifest is not None:
        return f"pure: built without mypyc ({manifest.get('why', 'no reason recorded')})"
    return (
        f"pure: the sources in {where} (an editable install, or a source tree first on "
        "sys.path); the compiled build is a wheel install (pip install .; scripts/_setup.sh "
        "puts one in .venv/compiled)"
    )


class _PreferSource(MetaPathFinder):
    """ADR_COMPILED=0: a COMPILED module loads from the .py beside its extension module."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MODULES:
            return None
        origin = _origin(fullname)
        if origin is None or not origin.endswith(".py"):
            return None
        return importlib.util.spec_from_file_location(fullname, origin)


def activate() -> str:
    """Apply ADR_COMPILED=0 (before the packages are imported); returns `state()`.

    adr_cli/main.py calls it first. Without ADR_COMPILED=0 it changes nothing: whichever
    install is first on sys.path runs.
    """
    if _off() and not _preferring_source():
        sys.meta_path.insert(0, _PreferSource())
    return state()


def installed(venv: Path) -> dict[str, Any] | None:
    """The runtime/_build.json of the wheel installed in `venv`, None if there is none."""
    found = sorted(venv.glob(f"lib/python*/site-packages/runtime/{MANIFEST}"))
    return _manifest(found[0].parent) if found else None


def stale_reason(venv: Path, root: Path | None = None) -> str | None:
    """None when `venv` holds a wheel built from the sources in `root` (this checkout), else why."""
    root = root or Path(__file__).resolve().parent.parent
    manifest = installed(venv)
    if manifest is None:
        return f"no wheel install of adr-stream in {venv}"
    if manifest.get("sources") != sources(root):
        return f"{venv} was built from other sources than {root}"
    return None


def build_native_inplace(root: Path | None = None) -> Path:
    """Compile NATIVE_SOURCE next to itself (adr_cli/_rebuild_core.<suffix>.so, git-ignored) when
    the .so is missing or older than the source, for the editable development environment (the
    wheel builds it through setup.py). No .py of that name exists, so nothing is shadowed.
    Raises OSError (no compiler, no headers, a compile error) with the compiler's output."""
    import subprocess

    root = root or Path(__file__).resolve().parent.parent
    source = root / NATIVE_SOURCE
    target = source.with_name("_rebuild_core" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    if target.is_file() and target.stat().st_mtime >= source.stat().st_mtime:
        return target
    reason = cannot_compile_native()
    if reason is not None:
        raise OSError(reason)
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    include = sysconfig.get_paths()["include"]
    partial = target.with_suffix(".tmp")
    command = [*cc, "-shared", "-fPIC", *NATIVE_CFLAGS, f"-I{include}", str(source), "-o",
               str(partial), "-lm"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise OSError(f"{' '.join(command)}: {done.stderr[-2000:]}")
    partial.replace(target)
    return target


def cannot_compile_native() -> str | None:
    """Why the native core cannot be built here (no C compiler or headers), None if it can."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    if shutil.which(shlex.split(cc)[0]) is None:
        return f"no C compiler ({cc})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python headers (Python.h; Debian: python3-dev)"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.compiled", description=__doc__)
    parser.add_argument("action", choices=("status", "current", "native"))
    parser.add_argument(
        "venv", nargs="?", type=Path, help="current: the environment to check (default: venv())"
    )
    args = parser.parse_args(argv)
    if args.action == "native":  # the rebuild's native core in place, for the sources' `adr`
        try:
            print(build_native_inplace())
        except OSError as exc:
            print(f"not built: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.action == "current":
        reason = stale_reason(args.venv or venv())
        print("current" if reason is None else f"stale: {reason}")
        return 0 if reason is None else 1
    result = activate()
    print(result)
    return 0 if result == "compiled" else 1


if __name__ == "__main__":
    sys.exit(main())
