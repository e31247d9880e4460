"""`--log-level` (and ADR_LOG_LEVEL) on every subcommand: one JSON line shape, filtered by level."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from adr_cli.main import SUBCOMMANDS


def _simulate(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> list[dict]:
    argv = [sys.executable, "-m", "adr_cli", "simulate", "--no-kafka", "--out",
            str(tmp_path / "ev.jsonl"), "--events", "20", *extra]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=True)
    return [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]


def test_log_level_filters_the_json_lines(tmp_path: Path) -> None:
    lines = _simulate(tmp_path)
    assert lines and {"ts", "level", "logger", "msg"} <= set(lines[0])
    assert any(line["level"] == "info" for line in lines)
    assert _simulate(tmp_path, "--log-level", "warning") == []
    env = {**os.environ, "ADR_LOG_LEVEL": "error"}
    assert _simulate(tmp_path, env=env) == []


def test_every_subcommand_has_the_flag() -> None:
    for name in SUBCOMMANDS:
        done = subprocess.run(
            [sys.executable, "-m", "adr_cli", name, "--help"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if "No module named" in done.stderr:  # an optional extra (evaluate) not installed
            continue
        assert "--log-level" in done.stdout, name
