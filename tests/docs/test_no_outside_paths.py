"""The repository never points outside itself: no file names a path on a developer's machine or a
source that is not shipped (the algorithm's specification is docs/algorithm.md, in the tree), and
no Markdown link climbs out of the repository.

Every file git tracks, and every untracked file it does not ignore (so a new page is checked
before it is committed), is scanned as text. The patterns are written so that this file does
not match them itself.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# (pattern, why it points outside). Character classes such as `[k]` keep this file clean.
OUTSIDE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\.\./shared\b"), "the workplace's shared folder, beside the repository"),
    (re.compile(r"/wor[k]/"), "an absolute path on the development machine"),
    (re.compile(r"(?<![\w/-])seeds/[\w.-]+"), "a source file of the shared seeds folder"),
    (re.compile(r"ADR-Algorith[m]"), "the paper's file name (docs/algorithm.md instead)"),
    (re.compile(r"adr-readin[g]"), "the shared reading's file (docs/algorithm.md#readings)"),
    (re.compile(r"elo-rating-system\.txt|elo-in-moba-games\.txt"), "a shared source file"),
    (re.compile(r"kafka-local-notes\.md|reliability-notes\.md"), "a shared notes file"),
)
_MD_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
_SKIP_DIRS = {".git", ".venv", ".cache", ".pytest_cache", "node_modules", "build", "dist"}


@functools.cache
def _files() -> tuple[str, ...]:
    """Tracked files plus untracked, unignored ones; a walk of the tree where git is missing."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout
        names = {n.decode() for n in out.split(b"\0") if n}
    except (OSError, subprocess.CalledProcessError):
        names = set()
        for root, dirs, files in os.walk(REPO):
            dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
            names.update(str((Path(root) / f).relative_to(REPO)) for f in files)
    return tuple(sorted(n for n in names if (REPO / n).is_file()))


def outside_references(text: str) -> list[str]:
    """'line N: match (why)' for each place `text` names something outside the repository."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern, why in OUTSIDE:
            found.extend(f"line {number}: {m.group(0)} ({why})" for m in pattern.finditer(line))
    return found


def links_leaving(doc: str, text: str) -> list[str]:
    """Relative Markdown link targets in `doc` (a path from the root) that resolve outside it."""
    base = (REPO / doc).parent
    bad = []
    for target in _MD_LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue  # a URL
        if target.startswith("/") or not Path(os.path.normpath(base / target)).is_relative_to(REPO):
            bad.append(target)
    return bad


def _text(name: str) -> str:
    return (REPO / name).read_bytes().decode("utf-8", errors="replace")


def test_the_scan_sees_the_repository() -> None:
    files = set(_files())
    assert {"README.md", "docs/algorithm.md", "engine/__init__.py"} <= files
    assert not any(f.startswith(".git/") for f in files)


def test_no_file_names_a_path_outside_the_repository() -> None:
    found = {name: refs for name in _files() if (refs := outside_references(_text(name)))}
    assert found == {}, "files that point outside the repository (cite docs/algorithm.md)"


def test_no_markdown_link_leaves_the_repository() -> None:
    docs = [n for n in _files() if n.endswith(".md")]
    found = {doc: bad for doc in docs if (bad := links_leaving(doc, _text(doc)))}
    assert found == {}


@pytest.mark.parametrize(
    "text",
    [
        "see " + "../" + "shared/" + "adr-" + "reading.md",
        "The algorithm is " + "/wo" + "rk/shared/" + "seeds/" + "ADR-" + "Algorithm-EN.md",
        "the binding " + "adr-" + "reading step 9",
        "Sources: `" + "seeds/" + "elo-rating-system" + ".txt`",
        "`" + "elo-in-moba-games" + ".txt` (Eq. 5-8)",
    ],
)
def test_the_patterns_catch_outside_references(text: str) -> None:
    assert outside_references(text) != []


@pytest.mark.parametrize(
    "text",
    [
        "the ADR paper's §4.3, as docs/algorithm.md#s4-3 states it",
        "adr evaluate --seeds 5 --out /tmp/eval",
        "evaluation/seeds.py and the random seeds 1-10",
        "[reports](../reports/latest/report.md)",
    ],
)
def test_the_patterns_let_in_repository_references_through(text: str) -> None:
    assert outside_references(text) == []


def test_a_link_climbing_out_of_the_repository_is_caught() -> None:
    text = "[a](../reports/latest/report.md) [b](../../elsewhere.md) [c](/etc/passwd) [d](x.md#y)"
    assert links_leaving("docs/example.md", text) == ["../../elsewhere.md", "/etc/passwd"]
