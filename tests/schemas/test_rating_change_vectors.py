"""schemas/vectors/rating_change.v1.json (bytes from the `msgpack` package) against the decoder
and the encoders: the ADR change without `model`, other models' with it."""

from __future__ import annotations

import json

import pytest

from schemas import SchemaError, decode_rating_change, encode_rating_change
from schemas.rating_change import AdrRatingChange
from schemas.vectors import generate_rating_change as generate

VECTORS = json.loads(generate.PATH.read_text(encoding="utf-8"))["vectors"]


def test_the_file_is_what_the_generator_writes() -> None:
    assert generate.main(["--check"]) == 0


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_each_vector_decodes_to_its_verdict_and_encodes_back(vector: dict) -> None:
    raw = bytes.fromhex(vector["hex"])
    if vector["verdict"] == "invalid":
        with pytest.raises(SchemaError):
            decode_rating_change(raw)
        return
    change = decode_rating_change(raw)
    meaning = vector["meaning"]
    assert {k: getattr(change, k) for k in meaning} == meaning
    assert encode_rating_change(change) == raw  # canonical: what a producer writes
    if meaning["model"] is None:  # an ADR pool's producer builds AdrRatingChange: same bytes
        fields = {k: v for k, v in meaning.items() if k != "model"}
        assert encode_rating_change(AdrRatingChange(**fields)) == raw  # type: ignore[arg-type]
