"""Kill event v1: hand-written vectors, round trips, and every rejection reason."""

from __future__ import annotations

import struct
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas import (
    DEFAULT_LIMITS,
    MAX_ID_BYTES,
    MAX_MESSAGE_BYTES,
    KillEvent,
    Limits,
    Reason,
    SchemaError,
    decode_kill_event,
    encode_kill_event,
    kill_event,
)

NOW = 1_764_680_400_000  # 2025-12-02T13:00:00Z in ms
LIMITS = Limits(max_age_ms=3_600_000, max_future_ms=60_000)
REQUIRED = ("v", "id", "arena", "attacker", "victim", "ts")

# 50 examples per property; no per-example deadline (CI boxes are shared and slow).
PROPERTY_SETTINGS = settings(max_examples=50, deadline=None)


def _fixstr(s: str) -> bytes:
    data = s.encode()
    assert len(data) < 32
    return bytes([0xA0 | len(data)]) + data


def _reason(raw: bytes, now: int = NOW, limits: Limits = LIMITS) -> Reason:
    with pytest.raises(SchemaError) as info:
        decode_kill_event(raw, now, limits)
    return info.value.reason


# --- vectors: msgpack written byte by byte from the msgpack spec, not by the code under test ---

VECTOR = (
    b"\x86"  # fixmap, 6 entries
    + _fixstr("v") + b"\x01"
    + _fixstr("id") + _fixstr("srv7-42")
    + _fixstr("arena") + _fixstr("arena-3")
    + _fixstr("attacker") + _fixstr("p17")
    + _fixstr("victim") + _fixstr("p4")
    + _fixstr("ts") + b"\xcf" + struct.pack(">Q", NOW)  # uint 64
)  # fmt: skip


def test_vector_decodes_to_expected_values() -> None:
    event = decode_kill_event(VECTOR, NOW)
    assert (event.v, event.id, event.arena, event.attacker, event.victim, event.ts) == (
        1, "srv7-42", "arena-3", "p17", "p4", NOW,
    )  # fmt: skip
    assert event.extra is msgspec.UNSET


def test_vector_with_other_int_widths_and_field_order() -> None:
    raw = (
        b"\x86"
        + _fixstr("ts") + b"\xd3" + struct.pack(">q", NOW)  # int 64
        + _fixstr("victim") + b"\xd9\x02p4"  # str 8
        + _fixstr("attacker") + b"\xda\x00\x03p17"  # str 16
        + _fixstr("arena") + b"\xdb\x00\x00\x00\x01a"  # str 32
        + _fixstr("id") + _fixstr("e")
        + _fixstr("v") + b"\xcc\x01"  # uint 8
    )  # fmt: skip
    assert decode_kill_event(raw, NOW) == kill_event(
        id="e", arena="a", attacker="p17", victim="p4", ts=NOW
    )


def test_extra_passes_through_byte_for_byte() -> None:
    # A map with a float32, a bin, a nested array and a non-minimal int: kept exactly.
    extra = (
        b"\x84"
        + _fixstr("f32") + b"\xca" + struct.pack(">f", 1.5)
        + _fixstr("bin") + b"\xc4\x02\x00\xff"
        + _fixstr("arr") + b"\x92\x01\xc0"
        + b"\x07" + b"\xcd\x00\x05"  # int key, uint16 value 5
    )  # fmt: skip
    raw = VECTOR[:1].replace(b"\x86", b"\x87") + VECTOR[1:] + _fixstr("extra") + extra
    event = decode_kill_event(raw, NOW)
    assert bytes(event.extra) == extra  # type: ignore[arg-type]
    assert encode_kill_event(event) == raw


def test_extra_nil_counts_as_absent() -> None:
    raw = b"\x87" + VECTOR[1:] + _fixstr("extra") + b"\xc0"
    event = decode_kill_event(raw, NOW)
    assert event.extra is msgspec.UNSET
    assert encode_kill_event(event) == VECTOR


def test_encoder_writes_the_vector() -> None:
    event = kill_event(id="srv7-42", arena="arena-3", attacker="p17", victim="p4", ts=NOW)
    # msgspec writes the smallest int encoding; the vector used uint 64 for ts.
    assert msgspec.msgpack.decode(encode_kill_event(event)) == msgspec.msgpack.decode(VECTOR)


def test_unknown_fields_are_ignored() -> None:
    raw = b"\x87" + VECTOR[1:] + _fixstr("new_in_v1_1") + b"\x2a"
    assert decode_kill_event(raw, NOW) == decode_kill_event(VECTOR, NOW)


# --- limits at their exact edges ---


def test_ts_window_edges_are_inclusive() -> None:
    for ts in (NOW - LIMITS.max_age_ms, NOW + LIMITS.max_future_ms):
        assert decode_kill_event(_encode({**_BASE, "ts": ts}), NOW, LIMITS).ts == ts
    for ts in (NOW - LIMITS.max_age_ms - 1, NOW + LIMITS.max_future_ms + 1):
        assert _reason(_encode({**_BASE, "ts": ts})) == Reason.TS_OUT_OF_RANGE


def test_default_window_is_seven_days_back_one_minute_ahead() -> None:
    """Only plainly absurd times: lateness is decided by event time (consumer, engine)."""
    assert (DEFAULT_LIMITS.max_age_ms, DEFAULT_LIMITS.max_future_ms) == (7 * 86_400_000, 60_000)
    with pytest.raises(ValueError):
        Limits(max_age_ms=-1)


def test_id_byte_limit_counts_utf8_bytes() -> None:
    ok = "é" * (MAX_ID_BYTES // 2)  # 64 bytes, 32 characters
    assert decode_kill_event(_encode({**_BASE, "id": ok}), NOW).id == ok
    assert _reason(_encode({**_BASE, "id": ok + "a"})) == Reason.BAD_ID  # 65 bytes
    assert _reason(_encode({**_BASE, "attacker": "😀" * 17})) == Reason.BAD_ID  # 68 bytes


def test_message_size_limit() -> None:
    def padded(total: int) -> bytes:
        head = _encode({**_BASE, "extra": {"p": ""}})
        pad = total - len(head) - 2  # str 8/16 header grows the string's prefix by 1-2 bytes
        return _encode({**_BASE, "extra": {"p": "x" * pad}})

    exact = padded(MAX_MESSAGE_BYTES)
    assert len(exact) == MAX_MESSAGE_BYTES
    decode_kill_event(exact, NOW)
    over = padded(MAX_MESSAGE_BYTES + 1)
    assert len(over) == MAX_MESSAGE_BYTES + 1
    assert _reason(over) == Reason.TOO_LARGE


# --- properties ---

_BASE: dict[str, Any] = {
    "v": 1, "id": "e1", "arena": "a1", "attacker": "p1", "victim": "p2", "ts": NOW,
}  # fmt: skip


def _encode(obj: Any) -> bytes:
    return msgspec.msgpack.encode(obj)


# At most 4 bytes per character: 16 characters always fit; ASCII ids up to the full 64 bytes.
ids = st.text(min_size=1, max_size=MAX_ID_BYTES // 4) | st.text(
    st.characters(max_codepoint=0x7F), min_size=1, max_size=MAX_ID_BYTES
)
too_long_ids = st.text(min_size=MAX_ID_BYTES + 1, max_size=MAX_ID_BYTES + 16) | st.text(
    st.sampled_from("é😀"), min_size=MAX_ID_BYTES // 2 + 1, max_size=MAX_ID_BYTES
)
extras = st.dictionaries(
    st.text(max_size=8),
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
        max_leaves=8,
    ),
    max_size=4,
)


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    attacker = draw(ids)
    victim = draw(ids.filter(lambda v: v != attacker))
    ev = {
        "v": 1,
        "id": draw(ids),
        "arena": draw(ids),
        "attacker": attacker,
        "victim": victim,
        "ts": draw(st.integers(NOW - LIMITS.max_age_ms, NOW + LIMITS.max_future_ms)),
    }
    extra = draw(st.none() | extras)
    if extra is not None:
        ev["extra"] = extra
    return ev


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events())
def test_round_trip(ev: dict[str, Any]) -> None:
    raw = _encode(ev)
    if len(raw) > MAX_MESSAGE_BYTES:
        assert _reason(raw) == Reason.TOO_LARGE
        return
    decoded = decode_kill_event(raw, NOW, LIMITS)
    assert encode_kill_event(decoded) == raw  # same field order as msgspec writes it
    assert isinstance(decoded, KillEvent)
    assert {f: getattr(decoded, f) for f in REQUIRED} == {f: ev[f] for f in REQUIRED}
    assert decode_kill_event(encode_kill_event(decoded), NOW, LIMITS) == decoded


def _other_type(kind: str) -> st.SearchStrategy[Any]:
    """Values of any msgpack type except `kind`."""
    pool: dict[str, st.SearchStrategy[Any]] = {
        "int": st.integers(-(2**63), 2**64 - 1),
        "float": st.floats(),
        "str": st.text(max_size=5),
        "bool": st.booleans(),
        "nil": st.none(),
        "bin": st.binary(max_size=5),
        "array": st.lists(st.integers(-5, 5), max_size=3),
        "map": st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=2),
    }
    return st.one_of(*(s for k, s in pool.items() if k != kind))


_FIELD_KIND = {"id": "str", "arena": "str", "attacker": "str", "victim": "str", "ts": "int"}


@PROPERTY_SETTINGS
@given(events(), st.sampled_from(REQUIRED))
def test_missing_field(ev: dict[str, Any], field: str) -> None:
    del ev[field]
    assert _reason(_encode(ev)) == Reason.MISSING_FIELD


@PROPERTY_SETTINGS
@given(events(), st.sampled_from(sorted(_FIELD_KIND)), st.data())
def test_wrong_type(ev: dict[str, Any], field: str, data: st.DataObject) -> None:
    ev[field] = data.draw(_other_type(_FIELD_KIND[field]))
    assert _reason(_encode(ev)) == Reason.WRONG_TYPE


@PROPERTY_SETTINGS
@given(events(), _other_type("int"))
def test_version_of_wrong_type(ev: dict[str, Any], v: Any) -> None:
    ev["v"] = v
    assert _reason(_encode(ev)) == Reason.WRONG_TYPE


@PROPERTY_SETTINGS
@given(events(), st.data())
def test_extra_not_a_map(ev: dict[str, Any], data: st.DataObject) -> None:
    ev["extra"] = data.draw(_other_type("map").filter(lambda x: x is not None))
    assert _reason(_encode(ev)) == Reason.WRONG_TYPE


@PROPERTY_SETTINGS
@given(
    events(),
    st.integers(-(2**63), 2**64 - 1).filter(lambda v: v != 1),
    st.lists(st.sampled_from(REQUIRED[1:]), unique=True),
)
def test_unknown_version_whatever_the_other_fields(
    ev: dict[str, Any], v: int, dropped: list[str]
) -> None:
    ev["v"] = v
    for field in dropped:
        del ev[field]
    assert _reason(_encode(ev)) == Reason.UNKNOWN_VERSION


@PROPERTY_SETTINGS
@given(
    events(),
    st.sampled_from(["id", "arena", "attacker", "victim"]),
    st.just("") | too_long_ids,
)
def test_bad_id(ev: dict[str, Any], field: str, value: str) -> None:
    ev[field] = value
    raw = msgspec.msgpack.encode(ev)
    expected = Reason.TOO_LARGE if len(raw) > MAX_MESSAGE_BYTES else Reason.BAD_ID
    assert _reason(raw) == expected


@PROPERTY_SETTINGS
@given(events())
def test_self_kill(ev: dict[str, Any]) -> None:
    ev["victim"] = ev["attacker"]
    assert _reason(_encode(ev)) == Reason.SELF_KILL


@PROPERTY_SETTINGS
@given(
    events(),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(1, 10**9),
    st.booleans(),
)
def test_ts_out_of_range(
    ev: dict[str, Any], max_age: int, max_future: int, beyond: int, future: bool
) -> None:
    limits = Limits(max_age_ms=max_age, max_future_ms=max_future)
    ev["ts"] = NOW + max_future + beyond if future else NOW - max_age - beyond
    assert _reason(_encode(ev), NOW, limits) == Reason.TS_OUT_OF_RANGE


@PROPERTY_SETTINGS
@given(events(), st.binary(max_size=16), st.integers(1, 64))
def test_too_large_before_anything_else(ev: dict[str, Any], head: bytes, over: int) -> None:
    garbage = head + b"\xc1" * (MAX_MESSAGE_BYTES + over - len(head))
    assert _reason(garbage) == Reason.TOO_LARGE
    ev["extra"] = {"pad": "x" * MAX_MESSAGE_BYTES}
    assert _reason(_encode(ev)) == Reason.TOO_LARGE


@PROPERTY_SETTINGS
@given(events(), st.data())
def test_truncated_or_trailing_bytes_are_undecodable(
    ev: dict[str, Any], data: st.DataObject
) -> None:
    raw = _encode(ev)
    cut = data.draw(st.integers(0, len(raw) - 1))
    assert _reason(raw[:cut]) == Reason.UNDECODABLE
    assert _reason(raw + data.draw(st.binary(min_size=1, max_size=4))) == Reason.UNDECODABLE


def test_invalid_opcode_and_invalid_utf8_are_undecodable() -> None:
    assert _reason(b"\xc1") == Reason.UNDECODABLE
    assert _reason(VECTOR.replace(_fixstr("p17"), b"\xa3\xff\xfe\xfd")) == Reason.UNDECODABLE


@PROPERTY_SETTINGS
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(),
        lambda inner: st.lists(inner, max_size=3),
        max_leaves=5,
    )
)
def test_not_a_map(value: Any) -> None:
    assert _reason(_encode(value)) == Reason.NOT_A_MAP


def test_precedence_version_before_fields_before_ids_before_self_kill_before_ts() -> None:
    bad_everything = {**_BASE, "id": "", "victim": "p1", "ts": 0}
    assert _reason(_encode({**bad_everything, "v": 2})) == Reason.UNKNOWN_VERSION
    assert _reason(_encode({k: v for k, v in bad_everything.items() if k != "arena"})) == (
        Reason.MISSING_FIELD
    )
    assert _reason(_encode({**bad_everything, "arena": 5})) == Reason.WRONG_TYPE
    assert _reason(_encode(bad_everything)) == Reason.BAD_ID
    assert _reason(_encode({**bad_everything, "id": "e"})) == Reason.SELF_KILL
    assert _reason(_encode({**bad_everything, "id": "e", "victim": "p2"})) == (
        Reason.TS_OUT_OF_RANGE
    )
