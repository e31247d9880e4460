"""schemas/vectors: the golden kill-event messages against the Python decoder and encoders.

The vectors' bytes come from the `msgpack` package or the msgpack spec (schemas/vectors/
generate.py), never from schemas/kill_event.py; the publishers in examples/ are tested against
the same file (tests/examples/).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import msgpack
import pytest

from schemas import Limits, Reason, SchemaError, decode_kill_event, encode_kill_event, kill_event
from schemas.vectors import generate

REPO = Path(__file__).resolve().parents[2]
DOC = json.loads(generate.PATH.read_text(encoding="utf-8"))
VECTORS: list[dict[str, Any]] = DOC["vectors"]
LIMITS = Limits(DOC["window_ms"]["max_age"], DOC["window_ms"]["max_future"])
PITFALLS = (
    "invalid/struct-as-array",
    "invalid/pascal-case-keys",
    "invalid/ts-float",
    "invalid/id-bin",
    "invalid/ts-timestamp-ext",
    "invalid/bin-keys",
)
# `bad_value` is for a right-typed value outside its set; kill event v1's only such field is
# `v`, which the decoder reports as `unknown_version` (schemas/README.md#rejections). The
# consumer's meaning and state checks come after decoding and need the Kafka key or Redis, so no
# bytes alone reach them (tests/consumer/test_meaning_checks.py, test_corrupt_state.py).
UNREACHABLE = {Reason.BAD_VALUE, Reason.KEY_MISMATCH, Reason.ID_REUSED, Reason.CORRUPT_STATE}


def _ids(rows: list[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in rows]


def test_vectors_file_is_what_the_generator_writes() -> None:
    assert generate.main(["--check"]) == 0


def test_vectors_cover_every_reachable_reason_and_the_library_pitfalls() -> None:
    names = {v["name"] for v in VECTORS}
    assert len(names) == len(VECTORS)
    reasons = {v["reason"] for v in VECTORS if v["verdict"] == "invalid"}
    assert reasons == {r.value for r in Reason} - {r.value for r in UNREACHABLE}
    assert set(PITFALLS) <= names
    assert any(v["verdict"] == "valid" for v in VECTORS)
    assert all((v["verdict"] == "valid") == (v["reason"] is None) for v in VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=_ids(VECTORS))
def test_meaning_is_what_an_independent_decoder_reads(vector: dict[str, Any]) -> None:
    raw = bytes.fromhex(vector["hex"])
    if vector["meaning"] is None:
        with pytest.raises(ValueError):
            generate.unpack(raw)
    else:
        assert generate.meaning(generate.unpack(raw)) == vector["meaning"]


@pytest.mark.parametrize("vector", VECTORS, ids=_ids(VECTORS))
def test_python_decoder_gives_each_vector_its_verdict(vector: dict[str, Any]) -> None:
    raw = bytes.fromhex(vector["hex"])
    if vector["verdict"] == "valid":
        event = decode_kill_event(raw, DOC["now_ms"], LIMITS)
        meaning = vector["meaning"]
        assert (event.id, event.arena, event.attacker, event.victim, event.ts) == (
            meaning["id"], meaning["arena"], meaning["attacker"], meaning["victim"],
            meaning["ts"],
        )  # fmt: skip
    else:
        with pytest.raises(SchemaError) as info:
            decode_kill_event(raw, DOC["now_ms"], LIMITS)
        assert info.value.reason.value == vector["reason"], info.value.detail


CANONICAL = [v for v in VECTORS if v["canonical"]]


@pytest.mark.parametrize("vector", CANONICAL, ids=_ids(CANONICAL))
def test_python_encoders_write_the_canonical_bytes(vector: dict[str, Any]) -> None:
    fields = {k: v for k, v in vector["meaning"].items() if k != "v"}
    assert encode_kill_event(kill_event(**fields)).hex() == vector["hex"]
    spec = importlib.util.spec_from_file_location(
        "publish_kills", REPO / "docs" / "examples" / "publish_kills.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    raw = example.kill_event(
        fields["arena"], fields["attacker"], fields["victim"], fields["ts"], fields["id"]
    )
    assert raw.hex() == vector["hex"]
    assert msgpack.unpackb(raw) == vector["meaning"]


def test_every_vector_the_game_server_doc_names_exists() -> None:
    text = (REPO / "docs" / "game-servers.md").read_text()
    named = set(re.findall(r"`((?:valid|invalid)/[a-z0-9-]+)`", text))
    assert set(PITFALLS) <= named
    assert named <= {v["name"] for v in VECTORS}
