"""Hostile bytes: every decoder returns its message or raises SchemaError, nothing else.

Three properties over generated input (raw bytes, arbitrary msgpack values including ext types,
NaN/inf, 64-bit extremes and deep nesting, and mutations of valid messages), and the corpus in
fuzz_corpus/, run every time: each file there is an input that once broke a decoder or sits on
a limit (deep nesting raised RecursionError before schemas._checks.decode_typed). To keep a new
find, write its bytes to fuzz_corpus/<what_it_is>.msgpack.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas import (
    KillEvent,
    RatingChange,
    SchemaError,
    TierBoundaries,
    decode_kill_event,
    decode_rating_change,
    decode_tier_boundaries,
    encode_kill_event,
    kill_event,
)

NOW = 1_764_680_400_000
CORPUS = Path(__file__).parent / "fuzz_corpus"
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DECODERS: dict[str, tuple[Callable[[bytes], object], type]] = {
    "kill_event": (lambda raw: decode_kill_event(raw, NOW), KillEvent),
    "rating_change": (decode_rating_change, RatingChange),
    "tier_boundaries": (decode_tier_boundaries, TierBoundaries),
}


def assert_event_or_schema_error(raw: bytes) -> None:
    """The property, for every decoder."""
    for name, (decode, cls) in DECODERS.items():
        try:
            out = decode(raw)
        except SchemaError:
            continue
        except BaseException as exc:  # the property is "nothing else"
            raise AssertionError(f"{name} raised {type(exc).__name__}: {exc!r:.200}") from exc
        assert isinstance(out, cls), (name, type(out))


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.sampled_from([0, 1, 2, -1, 2**31, 2**63 - 1, 2**64 - 1, -(2**63), NOW]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=80),
    st.binary(max_size=80),
    st.builds(msgspec.msgpack.Ext, st.integers(-128, 127), st.binary(max_size=20)),
    st.sampled_from(["v", "id", "arena", "attacker", "victim", "ts", "extra", "attacker"]),
)
_keys = st.one_of(  # hashable: msgpack map keys may be any of these
    st.sampled_from(["v", "id", "ts", "extra"]),
    st.text(max_size=10),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.none(),
    st.floats(allow_nan=True),
    st.binary(max_size=8),
)
msgpack_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=8),
        st.dictionaries(_keys, inner, max_size=8),
    ),
    max_leaves=40,
)
_FIELDS = ("v", "id", "arena", "attacker", "victim", "ts", "extra")
_GOOD = {"v": 1, "id": "e1", "arena": "a1", "attacker": "p1", "victim": "p2", "ts": NOW}


def _encode(value: object) -> bytes:
    try:
        return msgspec.msgpack.encode(value)
    except (TypeError, OverflowError, ValueError):  # e.g. unhashable/unsupported: not msgpack
        return b"\xc1"


@FUZZ
@given(st.binary(max_size=5000))
def test_raw_bytes(raw: bytes) -> None:
    assert_event_or_schema_error(raw)


@FUZZ
@given(msgpack_values)
def test_arbitrary_msgpack_values(value: object) -> None:
    assert_event_or_schema_error(_encode(value))


@FUZZ
@given(st.dictionaries(st.sampled_from(_FIELDS), msgpack_values, max_size=7), st.booleans())
def test_kill_events_with_fields_replaced(fields: dict[str, object], drop: bool) -> None:
    base = {k: v for k, v in _GOOD.items() if not (drop and k in fields)}
    assert_event_or_schema_error(_encode({**base, **fields}))


@FUZZ
@given(st.data())
def test_mutated_valid_event(data: st.DataObject) -> None:
    raw = bytearray(
        encode_kill_event(kill_event(id="e1", arena="a1", attacker="p1", victim="p2", ts=NOW))
    )
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        at = data.draw(st.integers(0, len(raw)))
        if op == "flip" and at < len(raw):
            raw[at] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del raw[at:]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
    assert_event_or_schema_error(bytes(raw))


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.msgpack")), ids=lambda p: p.stem)
def test_corpus(path: Path) -> None:
    assert_event_or_schema_error(path.read_bytes())


def test_the_corpus_holds_the_deep_nesting_that_once_escaped() -> None:
    names = {p.stem for p in CORPUS.glob("*.msgpack")}
    assert {"deep_array_4000", "deep_map_1300", "deep_inside_extra", "empty", "nil"} <= names
    with pytest.raises(SchemaError) as err:
        decode_kill_event((CORPUS / "deep_inside_extra.msgpack").read_bytes(), NOW)
    assert err.value.reason.value == "undecodable"
