"""Fixtures of the examples/ tests: each example built once per session (see _build.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.examples._build import PUBLISHERS, READERS, Missing

_built: dict[tuple[str, str], list[str] | str] = {}


def _program(kind: str, lang: str, builders: dict[str, Callable[[], list[str]]]) -> list[str]:
    key = (kind, lang)
    if key not in _built:
        try:
            _built[key] = builders[lang]()
        except Missing as exc:
            _built[key] = f"{lang} {kind} example not built: {exc}"
    got = _built[key]
    if isinstance(got, str):
        pytest.skip(got)
    return got


@pytest.fixture(params=sorted(PUBLISHERS))
def publisher(request: pytest.FixtureRequest) -> tuple[str, list[str]]:
    """(language, command) of a built publisher example."""
    return request.param, _program("publisher", request.param, PUBLISHERS)


@pytest.fixture(params=sorted(READERS))
def reader(request: pytest.FixtureRequest) -> tuple[str, list[str]]:
    """(language, command) of a built leaderboard reader example."""
    return request.param, _program("reader", request.param, READERS)
