"""Tier boundaries v1: vectors, round trips, structural rejections."""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import (
    Reason,
    SchemaError,
    decode_tier_boundaries,
    encode_tier_boundaries,
    tier_boundaries,
)

# The paper's tier labels (§6), best first.
LABELS = [f"{band}{level}" for band in "12345" for level in "HML"]
SHARES = [1 / 15] * 15

# 50 examples per property; no per-example deadline (CI boxes are shared and slow).
PROPERTY_SETTINGS = settings(max_examples=50, deadline=None)


def _fixstr(s: str) -> bytes:
    data = s.encode()
    return bytes([0xA0 | len(data)]) + data


def _reason(raw: bytes) -> Reason:
    with pytest.raises(SchemaError) as info:
        decode_tier_boundaries(raw)
    return info.value.reason


def test_vector_three_tiers() -> None:
    raw = (
        b"\x88"
        + _fixstr("v") + b"\x01"
        + _fixstr("version") + b"\x07"
        + _fixstr("computed_at") + b"\xcf" + struct.pack(">Q", 1_764_680_400_000)
        + _fixstr("active_count") + b"\xcd\x01\x2c"  # uint16 300
        + _fixstr("mean_mu_active") + b"\xcb" + struct.pack(">d", 1012.5)
        + _fixstr("boundaries") + b"\x92" + b"\xcb" + struct.pack(">d", 1200.0)
        + b"\xcb" + struct.pack(">d", 950.25)
        + _fixstr("labels") + b"\x93" + _fixstr("A") + _fixstr("B") + _fixstr("C")
        + _fixstr("tier_shares") + b"\x93" + (b"\xcb" + struct.pack(">d", 0.25)) * 2
        + b"\xcb" + struct.pack(">d", 0.5)
    )  # fmt: skip
    snap = decode_tier_boundaries(raw)
    assert snap == tier_boundaries(
        version=7,
        computed_at=1_764_680_400_000,
        active_count=300,
        mean_mu_active=1012.5,
        boundaries=(1200.0, 950.25),
        labels=("A", "B", "C"),
        tier_shares=(0.25, 0.25, 0.5),
    )
    assert encode_tier_boundaries(snap) == raw


def test_no_boundaries_yet_is_nil() -> None:
    snap = tier_boundaries(
        version=1, computed_at=0, active_count=3, mean_mu_active=1000.0,
        boundaries=None, labels=LABELS, tier_shares=SHARES,
    )  # fmt: skip
    raw = encode_tier_boundaries(snap)
    assert _fixstr("boundaries") + b"\xc0" in raw
    assert decode_tier_boundaries(raw).boundaries is None


def test_paper_default_shares_are_accepted() -> None:
    shares = [float(Fraction(1, 15))] * 15
    snap = tier_boundaries(
        version=1, computed_at=0, active_count=3, mean_mu_active=1000.0,
        boundaries=None, labels=LABELS, tier_shares=shares,
    )  # fmt: skip
    assert decode_tier_boundaries(encode_tier_boundaries(snap)).tier_shares == shares


finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)


@st.composite
def snapshots(draw: st.DrawFn) -> dict[str, Any]:
    bounds = draw(st.none() | st.lists(finite, min_size=14, max_size=14))
    return {
        "v": 1,
        "version": draw(st.integers(1, 2**63 - 1)),
        "computed_at": draw(st.integers(0, 2**63 - 1)),
        "active_count": draw(st.integers(0, 2**31)),
        "mean_mu_active": draw(finite),
        "boundaries": None if bounds is None else sorted(bounds, reverse=True),
        "labels": LABELS,
        "tier_shares": SHARES,
    }


@PROPERTY_SETTINGS
@given(snapshots())
def test_round_trip(obj: dict[str, Any]) -> None:
    raw = msgspec.msgpack.encode(obj)
    snap = decode_tier_boundaries(raw)
    assert encode_tier_boundaries(snap) == raw


@PROPERTY_SETTINGS
@given(snapshots(), st.data())
def test_missing_field(obj: dict[str, Any], data: st.DataObject) -> None:
    del obj[data.draw(st.sampled_from(sorted(obj)))]
    assert _reason(msgspec.msgpack.encode(obj)) == Reason.MISSING_FIELD


@PROPERTY_SETTINGS
@given(snapshots().filter(lambda o: o["boundaries"] is not None), st.integers(0, 12))
def test_increasing_boundaries_rejected(obj: dict[str, Any], k: int) -> None:
    b = obj["boundaries"]
    b[k + 1] = b[k] + 1.0
    assert _reason(msgspec.msgpack.encode(obj)) == Reason.BAD_VALUE


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"boundaries": [1.0] * 13}, Reason.BAD_VALUE),
        ({"boundaries": [math.nan] * 14}, Reason.BAD_VALUE),
        ({"labels": LABELS[:-1]}, Reason.BAD_VALUE),
        ({"labels": ["1H"] * 15}, Reason.BAD_VALUE),
        ({"labels": [*LABELS[:-1], ""]}, Reason.BAD_VALUE),
        ({"labels": ["1H"], "tier_shares": [1.0]}, Reason.BAD_VALUE),
        ({"tier_shares": [0.1] * 15}, Reason.BAD_VALUE),
        ({"tier_shares": [0.0] + [1 / 14] * 14}, Reason.BAD_VALUE),
        ({"mean_mu_active": math.inf}, Reason.BAD_VALUE),
        ({"version": 0}, Reason.BAD_VALUE),
        ({"active_count": -1}, Reason.BAD_VALUE),
        ({"computed_at": -1}, Reason.TS_OUT_OF_RANGE),
        ({"v": 2}, Reason.UNKNOWN_VERSION),
        ({"labels": "1H"}, Reason.WRONG_TYPE),
        ({"boundaries": ["1.0"] * 14}, Reason.WRONG_TYPE),
        ({"version": 1.0}, Reason.WRONG_TYPE),
    ],
)
def test_rejections(change: dict[str, Any], reason: Reason) -> None:
    obj = {
        "v": 1, "version": 1, "computed_at": 0, "active_count": 30, "mean_mu_active": 1000.0,
        "boundaries": [1400.0 - 20 * k for k in range(14)], "labels": LABELS, "tier_shares": SHARES,
    }  # fmt: skip
    decode_tier_boundaries(msgspec.msgpack.encode(obj))
    assert _reason(msgspec.msgpack.encode({**obj, **change})) == reason
