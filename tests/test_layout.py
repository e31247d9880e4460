"""The test tree itself: pytest imports test modules by their basename (rootdir mode, no
packages), so two test files with one name in different folders stop the whole collection."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_module_names_are_unique() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert not [name for name, n in names.items() if n > 1]
