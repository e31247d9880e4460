"""The README's shell lines run what they say, followed literally after the set-up: every path
they run exists and is executable, none runs the pure `.venv/bin/adr` where the compiled build
is meant, and `./scripts/adr` runs the build scripts/_setup.sh's `adr_bin` picks."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)


def _shell_lines() -> list[str]:
    return [
        line.split("#", 1)[0].strip()
        for block in _BLOCK.findall(README)
        for line in block.splitlines()
        if line.split("#", 1)[0].strip()
    ]


def _programs(line: str) -> list[str]:
    """The local paths a line runs: ./x, .venv/x, scripts/x, also inside $(...)."""
    found = []
    for inner in [line, *re.findall(r"\$\(([^)]*)\)", line)]:
        for word in shlex.split(inner.replace(";", " ; "), posix=True):
            if re.match(r"^(\./|\.venv/|scripts/)", word):
                found.append(word)
    return found


def test_the_readme_has_shell_lines_that_run_local_programs() -> None:
    programs = {p for line in _shell_lines() for p in _programs(line)}
    assert {"./scripts/demo", "./scripts/test", "./scripts/adr"} <= programs


@pytest.mark.parametrize("line", _shell_lines())
def test_every_program_a_readme_line_runs_exists(line: str) -> None:
    for program in _programs(line):
        path = REPO / program
        assert path.is_file() and os.access(path, os.X_OK), f"{line!r}: {program} is not there"
        assert program != ".venv/bin/adr", f"{line!r} runs the pure build, not the compiled one"


def test_scripts_adr_runs_the_build_adr_bin_names() -> None:
    """After the set-up the tests themselves ran: the compiled build when it is current (CI
    builds it), else the sources (ADR_COMPILED=0); stdout is the command's alone."""
    done = subprocess.run(
        [str(REPO / "scripts" / "adr"), "--version"],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    picked = subprocess.run(
        ["bash", "-c", 'source scripts/_setup.sh && adr_bin'],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    ).stdout.strip()  # fmt: skip
    build = "compiled build" if picked.endswith("compiled/bin/adr") else "pure build"
    assert re.fullmatch(rf"adr-stream \S+ \({build}\)", done.stdout.strip()), done.stdout
    if os.environ.get("ADR_COMPILED") == "1":
        assert build == "compiled build"
