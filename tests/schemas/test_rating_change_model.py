"""Rating change `model`: optional, omitted for ADR (its bytes unchanged), named otherwise."""

from __future__ import annotations

import msgspec
import pytest

from schemas import SchemaError, decode_rating_change, encode_rating_change, rating_change

BASE = dict(
    player="p1", role="attacker", arena="a1", source_id="e1", ts=5, mu_before=1000.0,
    mu_after=1010.0, sigma_after=300.0, tier_before=None, tier_after=None, seq=1,
)  # fmt: skip


def test_adr_changes_have_no_model_key_and_the_bytes_of_before() -> None:
    raw = encode_rating_change(rating_change(**BASE))  # type: ignore[arg-type]
    assert "model" not in msgspec.msgpack.decode(raw)
    assert decode_rating_change(raw).model is None


def test_another_model_is_named_and_round_trips() -> None:
    raw = encode_rating_change(rating_change(**BASE, model="trueskill"))  # type: ignore[arg-type]
    assert msgspec.msgpack.decode(raw)["model"] == "trueskill"
    assert decode_rating_change(raw).model == "trueskill"


def test_sigma_after_zero_only_for_elo() -> None:
    fields = {**BASE, "sigma_after": 0.0}
    assert (
        decode_rating_change(encode_rating_change(rating_change(**fields, model="elo"))).model
        == "elo"
    )  # type: ignore[arg-type]
    for model in (None, "glicko2"):
        with pytest.raises(SchemaError, match="sigma_after"):
            decode_rating_change(encode_rating_change(rating_change(**fields, model=model)))  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="sigma_after"):
        decode_rating_change(
            encode_rating_change(rating_change(**{**fields, "sigma_after": -1.0}, model="elo"))
        )  # type: ignore[arg-type]


def test_a_model_name_longer_than_a_label_is_refused() -> None:
    raw = encode_rating_change(rating_change(**BASE, model="x" * 17))  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="model"):
        decode_rating_change(raw)
