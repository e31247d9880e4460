"""The docs name only files that exist: every `path.py` (and `.lua`, `.json`, `.md`) that
docs/design.md, the other docs and the READMEs mention is in the tree (from the repository root
or the document's own folder), so a rename that forgets a page fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted(
    str(p.relative_to(REPO))
    for pattern in ("*.md", "*/README.md", "docs/*.md", "schemas/*.md")
    for p in REPO.glob(pattern)
)
ELSEWHERE = {
    "adr-reading.md",  # ../shared/adr-reading.md, the binding reading of the algorithm
    "runtime/_build.json",  # written into the wheel by setup.py, not a source file
}
_PATH = re.compile(r"(?<![\w./-])((?:\.\./)?[\w.*/-]*\w\.(?:py|lua|json|md))(?![\w/])")


def _tree_names() -> set[str]:
    skip = {".git", ".venv", ".cache", "node_modules", "build", "dist"}
    return {
        p.name
        for p in REPO.rglob("*")
        if p.is_file() and not skip.intersection(p.relative_to(REPO).parts)
    }


def _missing(doc: str) -> list[str]:
    names = _tree_names()
    missing = []
    for ref in sorted(set(_PATH.findall((REPO / doc).read_text()))):
        if ref.startswith((".", "/")) or "://" in ref or ref in ELSEWHERE:
            continue  # outside the repository (../shared/...), or a suffix (`.v1.schema.json`)
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
