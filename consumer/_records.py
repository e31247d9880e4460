"""The rating-change records rate_batch emits, written byte by byte: the consumer's hot path,
compiled with mypyc (runtime/compiled.py).

A record is the msgpack map `schemas.encode_rating_change(schemas.rating_change(...))` gives
(schemas/rating_change.md): 13 entries in RatingChange's field order (12 when `seq` is 0, which
omit_defaults leaves out), str keys and values as msgpack str, ints in the smallest msgpack
int, floats as float64, a missing tier as nil. Built here instead of through a RatingChange
Struct and the msgspec encoder: no Struct to build and drop, the keys are constants, and the
part an event's two records share (arena, source id, ts) is written once per event
(`event_part`). tests/consumer/test_batch_records.py checks the bytes against the schema
helpers', tests/engine/test_engine_compiled.py this module compiled against it pure.
"""

from __future__ import annotations

from struct import Struct
from typing import Final

from engine import TIER_LABELS, PlayerState

_BYTE: Final = tuple(bytes((i,)) for i in range(256))
_FLOAT64: Final = Struct(">d").pack
_NIL: Final = b"\xc0"
_FIELDS_13: Final = b"\x8d"
_FIELDS_12: Final = b"\x8c"
_V_AND_ID: Final = b"\xa1v\x01\xa2id"
_PLAYER: Final = b"\xa6player"
_ROLE: Final = {"attacker": b"\xa4role\xa8attacker", "victim": b"\xa4role\xa6victim"}
"""role -> its `role` entry."""
_ID_SUFFIX: Final = {"attacker": b":attacker", "victim": b":victim"}
"""role -> what the record's id adds to the source id (schemas.rating_change_id)."""
_ARENA: Final = b"\xa5arena"
_SOURCE_ID: Final = b"\xa9source_id"
_TS: Final = b"\xa2ts"
_MU_BEFORE: Final = b"\xa9mu_before\xcb"
_MU_AFTER: Final = b"\xa8mu_after\xcb"
_SIGMA_AFTER: Final = b"\xabsigma_after\xcb"
_TIER_BEFORE: Final = b"\xabtier_before"
_TIER_AFTER: Final = b"\xaatier_after"
_SEQ: Final = b"\xa3seq"


def str_header(size: int) -> bytes:
    """The msgpack str header of `size` bytes of UTF-8."""
    if size < 32:
        return _BYTE[0xA0 | size]
    if size < 0x100:
        return b"\xd9" + _BYTE[size]
    if size < 0x10000:
        return b"\xda" + size.to_bytes(2, "big")
    return b"\xdb" + size.to_bytes(4, "big")


def text(value: str) -> bytes:
    """`value` as a msgpack str."""
    data = value.encode()
    return str_header(len(data)) + data


def integer(value: int) -> bytes:
    """`value` as msgpack writes it: the smallest int type that holds it (OverflowError beyond
    64 bits, where msgspec raises too)."""
    if value >= 0:
        if value < 0x80:
            return _BYTE[value]
        if value < 0x100:
            return b"\xcc" + _BYTE[value]
        if value < 0x10000:
            return b"\xcd" + value.to_bytes(2, "big")
        if value < 0x100000000:
            return b"\xce" + value.to_bytes(4, "big")
        return b"\xcf" + value.to_bytes(8, "big")
    if value >= -32:
        return _BYTE[value & 0xFF]
    if value >= -0x80:
        return b"\xd0" + value.to_bytes(1, "big", signed=True)
    if value >= -0x8000:
        return b"\xd1" + value.to_bytes(2, "big", signed=True)
    if value >= -0x80000000:
        return b"\xd2" + value.to_bytes(4, "big", signed=True)
    return b"\xd3" + value.to_bytes(8, "big", signed=True)


_TIERS: Final = (_NIL, *(text(label) for label in TIER_LABELS))
"""tier index -> its entry value: nil for unplaced (0), else its label ('1H'..'5L')."""


def event_part(arena: str, source_id: str, ts: int) -> tuple[bytes, bytes]:
    """What an event's two records share: (its source id as UTF-8, the `arena`, `source_id`
    and `ts` entries)."""
    source = source_id.encode()
    head = _ARENA + text(arena) + _SOURCE_ID + str_header(len(source))
    return source, head + source + _TS + integer(ts)


def record(
    shared: tuple[bytes, bytes],
    player: str,
    role: str,
    old: PlayerState,
    new: PlayerState,
    seq: int,
) -> bytes:
    """The record of `player`'s change in `role` from `old` to `new` (`shared`: `event_part`)."""
    source, middle = shared
    suffix = _ID_SUFFIX[role]
    return b"".join(
        (
            _FIELDS_13 if seq else _FIELDS_12,
            _V_AND_ID,
            str_header(len(source) + len(suffix)),
            source,
            suffix,
            _PLAYER,
            text(player),
            _ROLE[role],
            middle,
            _MU_BEFORE,
            _FLOAT64(float(old.mu)),
            _MU_AFTER,
            _FLOAT64(float(new.mu)),
            _SIGMA_AFTER,
            _FLOAT64(float(new.sigma)),
            _TIER_BEFORE,
            _TIERS[old.tier],
            _TIER_AFTER,
            _TIERS[new.tier],
            _SEQ + integer(seq) if seq else b"",
        )
    )


def rating_change_record(
    player: str,
    role: str,
    arena: str,
    source_id: str,
    ts: int,
    old: PlayerState,
    new: PlayerState,
    seq: int,
) -> bytes:
    """One record on its own (`event_part` then `record`)."""
    return record(event_part(arena, source_id, ts), player, role, old, new, seq)
