"""Each publisher example's encoder writes the canonical bytes of schemas/vectors, refuses
input lines it cannot encode faithfully (a float ts, a missing id) instead of publishing them,
and exits non-zero with a message when the broker cannot be reached."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from tests.examples._build import REPO

DOC = json.loads((REPO / "schemas" / "vectors" / "kill_event.v1.json").read_text())
CANONICAL = [v for v in DOC["vectors"] if v["canonical"]]


def _run(cmd: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cmd, "--hex"], input=stdin, capture_output=True, text=True, timeout=60)


def test_encoder_writes_every_canonical_vector(publisher: tuple[str, list[str]]) -> None:
    lang, cmd = publisher
    lines = [
        json.dumps({k: v for k, v in vector["meaning"].items() if k != "v"}, ensure_ascii=False)
        for vector in CANONICAL
    ]
    done = _run(cmd, "\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    got = done.stdout.split()
    assert len(got) == len(CANONICAL)
    for vector, hex_line in zip(CANONICAL, got, strict=True):
        assert hex_line == vector["hex"], f"{lang}: {vector['name']}"


def test_input_it_cannot_encode_faithfully_is_refused(publisher: tuple[str, list[str]]) -> None:
    _, cmd = publisher
    good = {"id": "e1", "arena": "a", "attacker": "p1", "victim": "p2", "ts": 1764680400000}
    for bad in ({**good, "ts": 1764680400000.5}, {**good, "ts": "1764680400000"},
                {k: v for k, v in good.items() if k != "victim"}, {**good, "id": ""}):  # fmt: skip
        done = _run(cmd, json.dumps(good) + "\n" + json.dumps(bad) + "\n")
        assert done.returncode == 2, (bad, done.stdout, done.stderr)
        assert "line 2" in done.stderr


def test_unreachable_broker_exits_non_zero_with_a_message(
    publisher: tuple[str, list[str]],
) -> None:
    _, cmd = publisher
    line = {"id": "e1", "arena": "a", "attacker": "p1", "victim": "p2", "ts": 1764680400000}
    started = time.monotonic()
    done = subprocess.run(
        cmd, input=json.dumps(line) + "\n", capture_output=True, text=True, timeout=60,
        env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "ADR_TOPIC": "t",
             "ADR_DELIVERY_TIMEOUT_MS": "3000"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "not delivered" in done.stderr
    assert time.monotonic() - started < 30


def test_go_sources_are_gofmt_and_vet_clean() -> None:
    if shutil.which("go") is None:
        pytest.skip("go not installed")
    go = REPO / "examples" / "go"
    unformatted = subprocess.run(
        ["gofmt", "-l", "."], cwd=go, capture_output=True, text=True, timeout=60
    )
    assert unformatted.returncode == 0 and unformatted.stdout == "", unformatted.stdout
    vet = subprocess.run(
        ["go", "vet", "-mod=readonly", "./..."], cwd=go, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert vet.returncode == 0, vet.stderr
