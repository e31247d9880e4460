"""The Dockerfile's `pip install .` gets all the code and every data file the code reads."""

from __future__ import annotations

import fnmatch
import re
import tomllib

from tests.deploy._metrics import REPO

NOT_DATA = (".py", ".pyc", ".md")
"""Code, and documentation next to it (a package's README is read by people, not by the code)."""


def _pyproject() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _packages() -> list[str]:
    include = _pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted({p.rstrip("*").rstrip(".") for p in include})


def test_dockerfile_copies_every_package_and_the_build_files() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    copied = {  # the sources of every `COPY SRC... DEST`
        name.rstrip("/")
        for m in re.finditer(r"^COPY\s+(.+)\s+\S+$", dockerfile, re.M)
        for name in m.group(1).split()
    }
    assert {"pyproject.toml", _pyproject()["project"]["readme"]} <= copied
    assert set(_packages()) <= copied


def test_every_data_file_of_a_package_is_package_data() -> None:
    """A non-Python file inside a package (a Lua script, a schema) is only in the installed
    image if pyproject's package-data names it; an editable install hides the omission."""
    package_data: dict[str, list[str]] = _pyproject()["tool"]["setuptools"].get("package-data", {})
    missing = []
    for package in _packages():
        for path in (REPO / package).rglob("*"):
            if not path.is_file() or path.suffix in NOT_DATA or "__pycache__" in path.parts:
                continue
            rel = path.relative_to(REPO / package).as_posix()
            globs = package_data.get(package, []) + package_data.get("*", [])
            if not any(fnmatch.fnmatch(rel, g) for g in globs):
                missing.append(f"{package}/{rel}")
    assert not missing, f"add to [tool.setuptools.package-data]: {missing}"


def _stages() -> list[str]:
    return re.split(r"^FROM\s", (REPO / "Dockerfile").read_text(), flags=re.M)[1:]


def test_the_image_runs_the_compiled_build() -> None:
    """The build stage installs the wheel (setup.py compiles it with mypyc) and fails unless
    `status`, run outside the sources, says compiled; the final stage carries that environment
    without the compiler."""
    build, final = _stages()
    install = re.search(r"(\S+)/bin/pip install -c constraints\.txt \.(?: |$)", build, re.M)
    assert install is not None and "-e" not in install.group(0)
    venv = install.group(1)
    assert re.search(rf"cd / \\\s+&& {venv}/bin/python -m runtime.compiled status", build)
    copied = re.search(r"^COPY --from=\S+ (\S+) (\S+)$", final, re.M)
    assert copied is not None and copied.group(1) == copied.group(2) == venv
    assert "setup.py" in build and "gcc" in build and "gcc" not in final
