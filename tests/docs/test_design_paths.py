"""docs/design.md names only files that exist: every `path.py` (and `.lua`, `.json`, `.md`) it
mentions is in the tree, so a rename that forgets the design page fails here."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = ("docs/design.md",)
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
        if ref.startswith("../") or "://" in ref or ref in ELSEWHERE:
            continue  # outside the repository (../shared/...)
        if "/" in ref:
            found = any(REPO.glob(ref)) if "*" in ref else (REPO / ref).exists()
        else:
            found = ref in names or "*" in ref
        if not found:
            missing.append(ref)
    return missing


def test_every_file_named_in_the_design_exists() -> None:
    for doc in DOCS:
        assert _missing(doc) == [], f"{doc} names files that do not exist"
