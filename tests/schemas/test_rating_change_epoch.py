"""Rating change `epoch`: its wire form (epoch 0 is the bytes of before) and the reader rule,
order a player's changes by (epoch, seq) (schemas/rating_change.md)."""

from __future__ import annotations

import struct
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import (
    RatingChange,
    Reason,
    SchemaError,
    change_order,
    decode_rating_change,
    encode_rating_change,
    rating_change,
)
from tests.schemas.test_wire_rating_change import VECTOR, VECTOR_SEQ, _fixstr, changes

PROPERTY_SETTINGS = settings(max_examples=50, deadline=None)

EPOCH = 1_796_000_000_123  # a raise at the wall clock in ms: more than 32 bits (uint64 on the wire)

# The seq-7 change in epoch EPOCH: fixmap 0x8e = 14 entries, epoch after seq.
VECTOR_EPOCH = b"\x8e" + VECTOR_SEQ[1:] + _fixstr("epoch") + b"\xcf" + struct.pack(">Q", EPOCH)


def test_epoch_vector_decodes_and_encodes_with_epoch() -> None:
    change = decode_rating_change(VECTOR_EPOCH)
    assert (change.epoch, change.seq) == (EPOCH, 7)
    assert change == msgspec.structs.replace(decode_rating_change(VECTOR_SEQ), epoch=EPOCH)
    assert encode_rating_change(change) == VECTOR_EPOCH
    assert change_order(change) == (EPOCH, 7)


def test_epoch_zero_encodes_as_before_epoch_existed() -> None:
    for raw in (VECTOR, VECTOR_SEQ):
        change = decode_rating_change(raw)
        assert change.epoch == 0
        assert encode_rating_change(msgspec.structs.replace(change, epoch=0)) == raw


@PROPERTY_SETTINGS
@given(changes())
def test_any_change_in_epoch_0_has_the_bytes_it_had_before_epoch(obj: dict[str, Any]) -> None:
    obj.pop("epoch", None)
    raw = msgspec.msgpack.encode(obj)  # what a producer before `epoch` sent
    change = decode_rating_change(raw)
    assert change.epoch == 0 and change_order(change) == (0, change.seq)
    assert encode_rating_change(msgspec.structs.replace(change, epoch=0)) == raw


def test_negative_or_fractional_epoch_is_rejected() -> None:
    for bad, reason in ((-1, Reason.BAD_VALUE), (1.0, Reason.WRONG_TYPE)):
        raw = msgspec.msgpack.encode({**msgspec.msgpack.decode(VECTOR), "epoch": bad})
        with pytest.raises(SchemaError) as info:
            decode_rating_change(raw)
        assert info.value.reason == reason


def _change(seq: int, epoch: int, mu: float) -> RatingChange:
    return rating_change(
        player="p", role="attacker", arena="a", source_id=f"e{epoch}-{seq}", ts=seq,
        mu_before=0.0, mu_after=mu, sigma_after=1.0, tier_before=None, tier_after=None,
        seq=seq, epoch=epoch,
    )  # fmt: skip


def read_latest(messages: list[RatingChange]) -> RatingChange | None:
    """The reader rule: per player keep the highest (epoch, seq); drop anything at or below."""
    held: RatingChange | None = None
    for change in messages:
        if held is None or change_order(change) > change_order(held):
            held = change
    return held


@st.composite
def rewound_histories(draw: st.DrawFn) -> tuple[list[RatingChange], RatingChange]:
    """One player's changes over epochs: each rewind goes back to a ver at most the highest
    reached (Redis kept a prefix) and emits again from there, with other bodies, in a higher
    epoch. Returns every change emitted and the last one (the player's state in Redis)."""
    emitted: list[RatingChange] = []
    epoch, ver = 0, 0
    for rewind in range(draw(st.integers(1, 4))):
        if rewind:
            ver = draw(st.integers(0, ver))  # Redis came back with this ver
            epoch = draw(st.integers(epoch + 1, epoch + 2**40))
        for _ in range(draw(st.integers(1, 6))):
            ver += 1
            emitted.append(_change(ver, epoch, draw(st.floats(-1e4, 1e4))))
    return emitted, emitted[-1]


@PROPERTY_SETTINGS
@given(rewound_histories(), st.randoms(use_true_random=False), st.data())
def test_reader_rule_ends_at_the_last_change_whatever_the_delivery_order(
    history: tuple[list[RatingChange], RatingChange], rnd: object, data: st.DataObject
) -> None:
    emitted, last = history
    # at least once, in any order: duplicates and re-sends arrive after newer changes
    again = data.draw(st.lists(st.sampled_from(emitted), max_size=len(emitted)))
    delivered = emitted + again
    rnd.shuffle(delivered)  # type: ignore[attr-defined]
    assert read_latest(delivered) == last
    # and the wire keeps the order: decoded changes compare as their originals
    assert read_latest([decode_rating_change(encode_rating_change(c)) for c in delivered]) == last


def test_seq_alone_keeps_a_lost_change_and_epoch_fixes_it() -> None:
    lost = _change(5, 0, 1500.0)  # emitted, then Redis lost it and came back at ver 4
    again = _change(5, EPOCH, 1480.0)  # the same event applied again, other body
    assert max([lost, again], key=lambda c: c.seq) is lost  # seq alone: a tie, the first stays
    assert read_latest([lost, again]) is again
    assert read_latest([again, lost]) is again
