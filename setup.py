"""Build hook: a wheel build compiles runtime/compiled.py's COMPILED modules with mypyc.

Everything else about the package is in pyproject.toml. mypycify type-checks and writes the C
code as soon as it is called, so it is called only by the commands that build a wheel or the
extensions, not by the metadata hooks pip runs first, and never for an editable install or an
in-place build (the .so files would land in the source tree and shadow the .py files). When it
cannot compile (no mypy in the build environment, no C compiler or Python headers,
ADR_COMPILED=0) the wheel is pure and says why in runtime/_build.json, with a warning here.
See runtime/compiled.py.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import warnings
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
_BUILDS = {"bdist_wheel", "build", "build_ext", "install"}


def _load_compiled() -> Any:
    """runtime/compiled.py by path: the package's own __init__ imports more than a build has."""
    spec = importlib.util.spec_from_file_location("_adr_compiled", ROOT / "runtime" / "compiled.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and typing look the module up by name
    spec.loader.exec_module(module)
    return module


compiled = _load_compiled()


def _extensions() -> tuple[list[Any], str]:
    """(ext_modules, why) for this setup.py run."""
    command = set(sys.argv[1:])
    if command & {"editable_wheel", "develop", "--inplace", "-i"}:
        return [], "an editable or in-place build runs the sources"
    if not command & _BUILDS:
        return [], "metadata only"
    reason = compiled.cannot_compile()
    if reason is not None:
        warnings.warn(f"adr-stream: building pure Python, not compiled: {reason}", stacklevel=1)
        return [], reason
    import mypy.version
    from mypyc.build import mypycify

    # Errors only in the compiled modules: the imported ones are CI's mypy run's concern, and the
    # build environment lacks their third-party imports (redis, confluent-kafka).
    modules = mypycify(["--follow-imports=silent", *compiled.COMPILED])
    # adr rebuild's native batch core (docs/native.md): plain C, no mypyc; -ffp-contract=off and no
    # fast-math keep its doubles the pure engine's, bit for bit.
    native = Extension(
        compiled.NATIVE_MODULE,
        [compiled.NATIVE_SOURCE],
        extra_compile_args=list(compiled.NATIVE_CFLAGS),
    )
    return [*modules, native], (
        f"mypyc {mypy.version.__version__}, {len(compiled.COMPILED)} modules, and the native "
        "rebuild core"
    )


EXTENSIONS, WHY = _extensions()


class BuildPy(build_py):
    """Adds runtime/_build.json: whether the build compiled, why, and the sources' digests."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        manifest = {
            "compiled": bool(EXTENSIONS),
            "why": WHY,
            "cache_tag": sys.implementation.cache_tag,
            "sources": compiled.sources(ROOT),
        }
        target = Path(self.build_lib) / "runtime" / compiled.MANIFEST
        target.write_text(json.dumps(manifest, indent=1, sort_keys=True))


setup(ext_modules=EXTENSIONS, cmdclass={"build_py": BuildPy})
