"""Rating change v1: stable id, float64 on the wire, vectors, round trips, rejections."""

from __future__ import annotations

import math
import struct
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import (
    MAX_ID_BYTES,
    ROLES,
    Reason,
    SchemaError,
    decode_rating_change,
    encode_rating_change,
    rating_change,
    rating_change_id,
)

# 50 examples per property; no per-example deadline (CI boxes are shared and slow).
PROPERTY_SETTINGS = settings(max_examples=50, deadline=None)


def _fixstr(s: str) -> bytes:
    data = s.encode()
    return bytes([0xA0 | len(data)]) + data


def _f64(x: float) -> bytes:
    return b"\xcb" + struct.pack(">d", x)


def _reason(raw: bytes) -> Reason:
    with pytest.raises(SchemaError) as info:
        decode_rating_change(raw)
    return info.value.reason


TS = 1_764_680_400_000

# Built from the msgpack spec: fixmap 0x8c = 12 entries.
VECTOR = (
    b"\x8c"
    + _fixstr("v") + b"\x01"
    + _fixstr("id") + _fixstr("srv7-42:victim")
    + _fixstr("player") + _fixstr("p4")
    + _fixstr("role") + _fixstr("victim")
    + _fixstr("arena") + _fixstr("arena-3")
    + _fixstr("source_id") + _fixstr("srv7-42")
    + _fixstr("ts") + b"\xcf" + struct.pack(">Q", TS)
    + _fixstr("mu_before") + _f64(1000.0)
    + _fixstr("mu_after") + _f64(987.25)
    + _fixstr("sigma_after") + _f64(341.5)
    + _fixstr("tier_before") + _fixstr("3M")
    + _fixstr("tier_after") + b"\xc0"
)  # fmt: skip


def test_vector_decodes_to_expected_values() -> None:
    change = decode_rating_change(VECTOR)
    assert change == rating_change(
        player="p4",
        role="victim",
        arena="arena-3",
        source_id="srv7-42",
        ts=TS,
        mu_before=1000.0,
        mu_after=987.25,
        sigma_after=341.5,
        tier_before="3M",
        tier_after=None,
    )
    assert change.id == "srv7-42:victim"
    assert change.seq == 0  # a message from before `seq`: the default
    assert encode_rating_change(change) == VECTOR  # seq 0 is left out: the same bytes as then


# The same change with `seq` 7: fixmap 0x8d = 13 entries, seq last.
VECTOR_SEQ = b"\x8d" + VECTOR[1:] + _fixstr("seq") + b"\x07"


def test_seq_vector_decodes_and_encodes_with_seq() -> None:
    change = decode_rating_change(VECTOR_SEQ)
    assert change.seq == 7
    assert change == msgspec.structs.replace(decode_rating_change(VECTOR), seq=7)
    assert encode_rating_change(change) == VECTOR_SEQ


def test_negative_seq_is_rejected() -> None:
    raw = msgspec.msgpack.encode({**msgspec.msgpack.decode(VECTOR), "seq": -1})
    assert _reason(raw) == Reason.BAD_VALUE
    raw = msgspec.msgpack.encode({**msgspec.msgpack.decode(VECTOR), "seq": 1.0})
    assert _reason(raw) == Reason.WRONG_TYPE


def test_id_is_source_id_colon_role_and_stable() -> None:
    assert rating_change_id("e:1", "attacker") == "e:1:attacker"
    assert rating_change_id("e:1", "victim") == "e:1:victim"
    assert ROLES == ("attacker", "victim")


def test_floats_are_float64_even_from_ints_and_float32() -> None:
    change = rating_change(
        player="p", role="attacker", arena="a", source_id="e", ts=0,
        mu_before=1000, mu_after=1012.5, sigma_after=300, tier_before=None, tier_after=None,
    )  # fmt: skip
    raw = encode_rating_change(change)
    assert raw.count(b"\xcb") == 3 and b"\xca" not in raw
    # A float32 from another producer is accepted and widened exactly.
    f32 = VECTOR.replace(_f64(341.5), b"\xca" + struct.pack(">f", 341.5))
    assert decode_rating_change(f32).sigma_after == 341.5


# At most 4 bytes per character: 16 characters always fit; ASCII ids up to the full 64 bytes.
names = st.text(min_size=1, max_size=MAX_ID_BYTES // 4) | st.text(
    st.characters(max_codepoint=0x7F), min_size=1, max_size=MAX_ID_BYTES
)
finite = st.floats(allow_nan=False, allow_infinity=False)
tiers = st.none() | st.sampled_from(["1H", "3M", "5L"])


@st.composite
def changes(draw: st.DrawFn) -> dict[str, Any]:
    source_id = draw(names)
    role = draw(st.sampled_from(ROLES))
    return {
        "v": 1,
        "id": f"{source_id}:{role}",
        "player": draw(names),
        "role": role,
        "arena": draw(names),
        "source_id": source_id,
        "ts": draw(st.integers(0, 2**63 - 1)),
        "mu_before": draw(finite),
        "mu_after": draw(finite),
        "sigma_after": draw(st.floats(min_value=0, exclude_min=True, allow_infinity=False)),
        "tier_before": draw(tiers),
        "tier_after": draw(tiers),
        **({"seq": seq} if (seq := draw(st.integers(0, 2**63 - 1))) else {}),
        **({"epoch": epoch} if (epoch := draw(st.integers(0, 2**63 - 1))) else {}),
    }


@PROPERTY_SETTINGS
@given(changes())
def test_round_trip(obj: dict[str, Any]) -> None:
    raw = msgspec.msgpack.encode(obj)
    change = decode_rating_change(raw)
    assert encode_rating_change(change) == raw
    assert change == rating_change(**{k: obj[k] for k in obj if k not in ("v", "id")})


@PROPERTY_SETTINGS
@given(changes(), st.data())
def test_missing_field(obj: dict[str, Any], data: st.DataObject) -> None:
    field = data.draw(st.sampled_from(sorted(set(obj) - {"seq", "epoch"})))  # defaults
    del obj[field]
    assert _reason(msgspec.msgpack.encode(obj)) == Reason.MISSING_FIELD


@PROPERTY_SETTINGS
@given(changes(), st.sampled_from(["ts", "player", "mu_after", "tier_before"]))
def test_wrong_type(obj: dict[str, Any], field: str) -> None:
    obj[field] = [1] if field != "ts" else 1.5
    assert _reason(msgspec.msgpack.encode(obj)) == Reason.WRONG_TYPE


@PROPERTY_SETTINGS
@given(changes(), st.text().filter(lambda r: r not in ROLES))
def test_unknown_role(obj: dict[str, Any], role: str) -> None:
    obj["role"] = role
    assert _reason(msgspec.msgpack.encode(obj)) == Reason.BAD_VALUE


@PROPERTY_SETTINGS
@given(changes(), st.text(min_size=1, max_size=5))
def test_id_not_derived_from_source_and_role(obj: dict[str, Any], suffix: str) -> None:
    obj["id"] = obj["id"] + suffix
    assert _reason(msgspec.msgpack.encode(obj)) == Reason.BAD_ID


@PROPERTY_SETTINGS
@given(
    changes(),
    st.sampled_from(["mu_before", "mu_after", "sigma_after"]),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)
def test_non_finite_floats(obj: dict[str, Any], field: str, value: float) -> None:
    obj[field] = value
    assert _reason(msgspec.msgpack.encode(obj)) == Reason.BAD_VALUE


def test_other_rejections() -> None:
    base = msgspec.msgpack.decode(VECTOR)
    enc = msgspec.msgpack.encode
    assert _reason(enc({**base, "v": 2})) == Reason.UNKNOWN_VERSION
    assert _reason(enc({**base, "sigma_after": 0.0})) == Reason.BAD_VALUE
    assert _reason(enc({**base, "tier_after": ""})) == Reason.BAD_VALUE
    assert _reason(enc({**base, "tier_after": "x" * 17})) == Reason.BAD_VALUE
    assert _reason(enc({**base, "ts": -1})) == Reason.TS_OUT_OF_RANGE
    assert _reason(enc({**base, "player": ""})) == Reason.BAD_ID
    assert _reason(enc([base])) == Reason.NOT_A_MAP
    assert _reason(VECTOR[:-1]) == Reason.UNDECODABLE
