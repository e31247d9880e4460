"""Each publisher example's encoder writes the canonical bytes of schemas/vectors, refuses
input lines it cannot encode faithfully (a float ts, a missing id) and every line the consumer
would dead-letter (each invalid vector an input line can express: an id over 64 bytes, a
self-kill, ts out of the window) instead of publishing them, and exits non-zero with a message
when the broker cannot be reached."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from tests.examples._build import REPO

DOC = json.loads((REPO / "schemas" / "vectors" / "kill_event.v1.json").read_text())
# The canonical vectors a publisher writes; the invalid canonical ones (a self-kill, an id of
# 65 bytes, ts in seconds...) it refuses instead (test_what_the_consumer_refuses_...).
CANONICAL = [v for v in DOC["vectors"] if v["canonical"] and v["verdict"] == "valid"]
# The vectors are judged at the file's clock (schemas/vectors/README.md): so are the publishers.
AT_VECTORS_CLOCK = {**os.environ, "ADR_NOW_MS": str(DOC["now_ms"])}
_INPUT_FIELDS = ("id", "arena", "attacker", "victim", "ts")


def _run(cmd: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cmd, "--hex"], input=stdin, capture_output=True, text=True, timeout=60,
        env=AT_VECTORS_CLOCK,
    )  # fmt: skip


def _as_input_line(meaning: object) -> dict[str, object] | None:
    """A vector's meaning as a publisher's input line, when one can express it: a v1 map of
    exactly the five fields, strings and an integer ts (no extra, no odd types)."""
    if not isinstance(meaning, dict) or set(meaning) != {"v", *_INPUT_FIELDS}:
        return None
    if meaning["v"] != 1 or type(meaning["v"]) is not int or type(meaning["ts"]) is not int:
        return None
    if not all(isinstance(meaning[f], str) for f in _INPUT_FIELDS[:4]):
        return None
    return {f: meaning[f] for f in _INPUT_FIELDS}


REFUSABLE = [
    pytest.param(line, v["reason"], id=v["name"])
    for v in DOC["vectors"]
    if v["verdict"] == "invalid" and (line := _as_input_line(v["meaning"])) is not None
]


def test_every_invalid_vector_an_input_line_can_express_is_listed() -> None:
    """The self-kill, the over-long ids, the empty arena and every ts out of the window."""
    reasons = {p.values[1] for p in REFUSABLE}
    assert reasons == {"bad_id", "self_kill", "ts_out_of_range"}, reasons
    assert len(REFUSABLE) >= 8


@pytest.mark.parametrize(("line", "reason"), REFUSABLE)
def test_what_the_consumer_refuses_is_refused_not_published(
    publisher: tuple[str, list[str]], line: dict[str, object], reason: str
) -> None:
    lang, cmd = publisher
    good = {"id": "e1", "arena": "a", "attacker": "p1", "victim": "p2", "ts": DOC["now_ms"]}
    done = _run(cmd, json.dumps(good) + "\n" + json.dumps(line, ensure_ascii=False) + "\n")
    assert done.returncode == 2, (lang, reason, done.stdout, done.stderr)
    assert "line 2" in done.stderr, done.stderr
    if reason != "bad_id" or line["arena"]:  # the empty arena is refused as empty
        assert f"({reason})" in done.stderr, done.stderr


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
    now = time.time_ns() // 1_000_000
    line = {"id": "e1", "arena": "a", "attacker": "p1", "victim": "p2", "ts": now}
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
