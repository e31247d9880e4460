"""The Dockerfile's `pip install .` gets all the code and every data file the code reads."""

from __future__ import annotations

import fnmatch
import re
import tomllib

from tests.deploy._metrics import REPO

NOT_DATA = (".py", ".pyc", ".md", ".c", ".so")
"""Code, and documentation next to it (a package's README is read by people, not by the code);
C sources setup.py compiles into extensions (adr_cli/_rebuild_core.c) and the extensions built
in place from them for the sources' `adr` (git-ignored)."""


def _pyproject() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _packages() -> list[str]:
    include = _pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted({p.rstrip("*").rstrip(".") for p in include})


DEV_ONLY = {"stack", "loadgen", "evaluation"}
"""Development packages: the local stack, the load generator, the evaluation. Never in the
service image (issue 27); `adr simulate` has its own `simulator` target."""


def _stages_by_name() -> dict[str, tuple[str | None, str]]:
    """stage name -> (the stage it is FROM, when another stage; its text)."""
    out: dict[str, tuple[str | None, str]] = {}
    for text in _stages():
        header = text.splitlines()[0].split()
        name = header[2] if len(header) == 3 and header[1].upper() == "AS" else str(len(out))
        parent = header[0] if header[0] in out else None
        out[name] = (parent, text)
    return out


def _copied(text: str) -> set[str]:
    """The build-context sources of every `COPY SRC... DEST` (not `COPY --from`)."""
    return {
        name.rstrip("/")
        for m in re.finditer(r"^COPY\s+(?!--from)(.+)\s+\S+$", text, re.M)
        for name in m.group(1).split()
    }


def packages_of_target(target: str) -> set[str]:
    """The packages a `docker build --target TARGET` image carries: those copied into the
    stages its /opt/adr comes from (COPY --from=STAGE) and the stages those derive from."""
    stages = _stages_by_name()
    seen: set[str] = set()
    todo = [target]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parent, text = stages[name]
        if parent:
            todo.append(parent)
        todo.extend(re.findall(r"^COPY --from=(\S+)", text, re.M))
    copied = set().union(*(_copied(stages[n][1]) for n in seen))
    return copied & set(_packages())


def test_the_default_image_carries_the_services_only() -> None:
    """The last stage (what `docker build .` makes) has every package but the development
    ones, and the build files; the simulator target adds loadgen, nothing else."""
    last = list(_stages_by_name())[-1]
    assert last == "service"
    build = _stages_by_name()["build"][1]
    assert {"pyproject.toml", _pyproject()["project"]["readme"]} <= _copied(build)
    assert packages_of_target("service") == set(_packages()) - DEV_ONLY
    assert packages_of_target("simulator") == set(_packages()) - DEV_ONLY | {"loadgen"}


def test_no_service_package_imports_a_development_one() -> None:
    """The service image would fail at import otherwise (a consumer reaching into stack/)."""
    service = set(_packages()) - DEV_ONLY
    bad = []
    for package in sorted(service):
        for path in (REPO / package).rglob("*.py"):
            for line in path.read_text().splitlines():
                m = re.match(r"\s*(?:from|import)\s+(\w+)", line)
                if m and m.group(1) in DEV_ONLY:
                    bad.append(f"{path.relative_to(REPO)}: {line.strip()}")
    assert not bad


def test_the_base_is_pinned_by_digest_and_the_image_has_oci_labels() -> None:
    text = (REPO / "Dockerfile").read_text()
    base = re.search(r"^ARG BASE=(\S+)$", text, re.M)
    assert base is not None
    assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", base.group(1))
    stages = _stages_by_name()
    for name, (parent, body) in stages.items():
        image = body.split()[0]
        assert parent or image == "${BASE}", f"stage {name}: FROM {image} is not the pinned base"
    labels = dict(re.findall(r"(org\.opencontainers\.image\.[a-z.]+)=\"([^\"]*)\"", text))
    for key in ("title", "description", "version", "revision", "licenses", "base.name"):
        assert labels.get(f"org.opencontainers.image.{key}"), key
    assert labels["org.opencontainers.image.licenses"] == _pyproject()["project"]["license"]
    version = re.search(r"^ARG VERSION=(\S+)$", text, re.M)
    assert version is not None and version.group(1) == _pyproject()["project"]["version"]


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
    stages = _stages_by_name()
    build, final = stages["build"][1], stages["service"][1] + stages["runtime"][1]
    install = re.search(r"(\S+)/bin/pip install -c constraints\.txt \.(?: |$)", build, re.M)
    assert install is not None and "-e" not in install.group(0)
    venv = install.group(1)
    assert re.search(rf"cd / \\\s+&& {venv}/bin/python -m runtime.compiled status", build)
    copied = re.search(r"^COPY --from=\S+ (\S+) (\S+)$", final, re.M)
    assert copied is not None and copied.group(1) == copied.group(2) == venv
    assert "setup.py" in build and "gcc" in build and "gcc" not in final
