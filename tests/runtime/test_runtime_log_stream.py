"""runtime.logs.setup's handler writes to the sys.stderr of the moment it writes."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from runtime import logs


def test_json_lines_follow_a_replaced_stderr_and_never_hit_a_closed_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process whose sys.stderr is replaced (pytest's capture between tests does it) kept a
    handler on the old, closed stream: every later line printed "--- Logging error ---" and a
    traceback instead of itself."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # this test's own setup, restored afterwards
    monkeypatch.setattr(root, "level", root.level)
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    logs.setup()
    logging.getLogger("adr.test").warning("before")
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    logging.getLogger("adr.test").warning("after")
    lines = [json.loads(line) for line in second.getvalue().splitlines()]
    assert [line["msg"] for line in lines] == ["after"]
    assert "Logging error" not in second.getvalue()
