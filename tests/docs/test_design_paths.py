"""The docs name only files that exist: every `path.py` (and `.lua`, `.json`, `.md`) that
docs/design.md, the other docs and the READMEs mention is in the tree (from the repository root
or the document's own folder), so a rename that forgets a page fails here."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted(
    {
        str(p.relative_to(REPO))
        for pattern in ("*.md", "*/README.md", "docs/*.md", "schemas/*.md")
        for p in REPO.glob(pattern)
        if not p.relative_to(REPO).parts[0].startswith(".")
    }
)
ELSEWHERE = {
    "runtime/_build.json",  # written into the wheel by setup.py, not a source file
}
_PATH = re.compile(r"(?<![\w./-])((?:\.\./)?[\w.*/-]*\w\.(?:py|lua|json|md))(?![\w/])")


@functools.cache
def _tree_names() -> frozenset[str]:
    """The names of the files in the tree, walked once (skipped folders are not entered)."""
    skip = {".git", ".venv", ".cache", ".pytest_cache", "node_modules", "build", "dist"}
    names: set[str] = set()
    for _root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in skip]
        names.update(files)
    return frozenset(names)


def _missing(doc: str) -> list[str]:
    names = _tree_names()
    missing = []
    for ref in sorted(set(_PATH.findall((REPO / doc).read_text()))):
        if ref.startswith((".", "/")) or "://" in ref or ref in ELSEWHERE:
            continue  # a relative or absolute path, a URL, or a suffix (`.v1.schema.json`)
        if "/" in ref:
            bases = (REPO, (REPO / doc).parent)
            found = any(any(b.glob(ref)) if "*" in ref else (b / ref).exists() for b in bases)
        else:
            found = ref in names or "*" in ref
        if not found:
            missing.append(ref)
    return missing


@pytest.mark.parametrize("doc", DOCS)
def test_every_file_a_doc_names_exists(doc: str) -> None:
    assert _missing(doc) == [], f"{doc} names files that do not exist"
