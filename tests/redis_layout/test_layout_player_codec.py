"""The player-hash codec (redis_layout.player_codec): a PlayerState round-trips bit for bit, the
write script's msgpack section reads back as the same hash values in Redis, and what the consumer
never writes is a CorruptValue."""

from __future__ import annotations

import math
import random

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import TIER_LABELS, Params, PlayerState, new_player, tier_label
from redis_layout import CorruptValue
from redis_layout.player_codec import (
    FIELDS,
    FIELDS_V1,
    READ_FIELDS,
    STATE_FIELDS,
    decode_player,
    encode_player,
    encode_player_v1,
    float_text,
    msgpack_str,
    player_values,
    script_items,
)

_floats = st.floats(allow_nan=False, allow_infinity=False)


def test_the_codec_unpacks_player_states_in_their_declaration_order() -> None:
    """The hash values unpack msgspec.structs.astuple(state) by position (STATE_FIELDS)."""
    assert PlayerState.__struct_fields__ == STATE_FIELDS


_states = st.builds(
    PlayerState,
    mu=_floats, sigma=_floats, phi=_floats, pool=_floats, h_up=_floats, h_down=_floats,
    streak=st.integers(0, 10**6), n=st.integers(0, 10**9),
    last_ts=st.none() | st.integers(0, 2**62), tier=st.integers(0, len(TIER_LABELS)),
    window=st.lists(_floats, max_size=20).map(tuple),
    recent=st.lists(st.integers(0, 2**62), max_size=5).map(tuple),
)  # fmt: skip


def _as_read(flat: list[str | bytes]) -> list[bytes | None]:
    """What HMGET READ_FIELDS returns for a hash holding `flat` (field, value, ...)."""
    as_redis = dict(zip(flat[0::2], flat[1::2], strict=True))
    return [
        None if k not in as_redis else v if isinstance(v := as_redis[k], bytes) else v.encode()
        for k in READ_FIELDS
    ]


@pytest.mark.parametrize("encode", [encode_player, encode_player_v1], ids=["layout2", "layout1"])
@given(state=_states, ver=st.integers(0, 2**62))
def test_a_player_state_round_trips_through_its_hash_bit_for_bit(
    encode, state: PlayerState, ver: int
) -> None:  # type: ignore[no-untyped-def]
    back, back_ver = decode_player(_as_read(encode(state, ver)))  # type: ignore[misc]
    assert back == state and back_ver == ver
    assert repr(back) == repr(state)  # bit for bit, -0.0 included


_UNPACK = "return cmsgpack.unpack(ARGV[1])"


# The client is only used for stateless EVALs, so sharing it across examples is fine.
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(state=_states)
def test_the_write_script_reads_the_same_hash_values_from_its_msgpack_section(
    redis_client, state: PlayerState
) -> None:  # type: ignore[no-untyped-def]
    """What Redis's own cmsgpack makes of `script_items` is, byte for byte, what HSET of
    `player_values` stores (`state` travels as msgpack str, not bin)."""
    read = redis_client.eval(_UNPACK, 0, msgspec.msgpack.encode(list(script_items(state))))
    want = [v if isinstance(v, bytes) else v.encode() for v in player_values(state)]
    assert read == want


@pytest.mark.parametrize("size", [0, 1, 255, 256, 65_535, 65_536])
def test_msgpack_str_of_any_length_reads_back_in_redis_byte_for_byte(
    redis_client, size: int
) -> None:  # type: ignore[no-untyped-def]
    data = random.Random(size).randbytes(size)
    read = redis_client.eval(_UNPACK, 0, msgspec.msgpack.encode([msgpack_str(data), "x"]))
    assert read == [data, b"x"]


@given(x=st.floats(allow_nan=True, allow_infinity=True))
def test_float_text_is_repr(x: float) -> None:
    assert float_text(x) == repr(x)


@pytest.mark.parametrize(
    "x",
    [0.0, -0.0, 1e-4, -1e-4, math.nextafter(1e-4, 0.0), 1e16, math.nextafter(1e16, 0.0), 5e-324,
     1.7976931348623157e308, 0.1, 1 / 3, 1000.0, 1234.5678, -0.25],
)  # fmt: skip
def test_float_text_is_repr_at_the_edges_of_its_fast_range(x: float) -> None:
    assert float_text(x) == repr(x)


def test_hash_fields_are_what_other_services_read() -> None:
    state = new_player(Params())
    as_redis = dict(zip(*[iter(encode_player(state, 1))] * 2, strict=True))
    assert set(as_redis) == {"mu", "sigma", "n", "last_ts", "tier", "window", "state", "ver"}
    assert set(as_redis) == set(FIELDS)
    assert as_redis["mu"] == "1000.0" and as_redis["tier"] == "" and as_redis["last_ts"] == ""
    assert as_redis["sigma"] == "350.0" and as_redis["n"] == "0" and as_redis["ver"] == "1"
    assert msgspec.msgpack.decode(as_redis["state"]) == [0, 0.0, 0.0, 0.0, 0.0, []]
    assert msgspec.msgpack.decode(as_redis["window"]) == []
    assert tier_label(1) == "1H" and tier_label(15) == "5L" and tier_label(0) == ""
    assert decode_player([None] * len(READ_FIELDS)) is None
    assert set(FIELDS_V1) - set(FIELDS) == set(READ_FIELDS) - set(FIELDS)


_INF_PHI = msgspec.msgpack.encode([0, float("inf"), 0.0, 0.0, 0.0, []])


@pytest.mark.parametrize(
    ("encode", "change", "detail"),
    [
        (encode_player, {"mu": b"x"}, "ValueError"),
        (encode_player, {"sigma": b"nan"}, "not finite"),
        (encode_player, {"state": _INF_PHI}, "not finite"),
        (encode_player, {"window": msgspec.msgpack.encode([float("inf")])}, "not finite"),
        (encode_player, {"state": b"\xc1"}, "DecodeError"),
        (encode_player, {"state": msgspec.msgpack.encode([0, 0.0])}, "length 6"),
        (encode_player, {"tier": b"9Z"}, "KeyError"),
        (encode_player, {"mu": None}, "hash without mu"),
        (encode_player_v1, {"mu": b"x"}, "ValueError"),
        (encode_player_v1, {"phi": b"inf"}, "not finite"),
        (encode_player_v1, {"window": msgspec.msgpack.encode([float("inf")])}, "not finite"),
        (encode_player_v1, {"window": b"\xc1"}, "DecodeError"),
        (encode_player_v1, {"streak": None}, "TypeError"),
    ],
)
def test_what_the_consumer_never_writes_is_a_corrupt_value(
    encode, change: dict[str, bytes | None], detail: str
) -> None:  # type: ignore[no-untyped-def]
    flat = encode(new_player(Params()), 1)
    pairs = zip(flat[0::2], flat[1::2], strict=True)
    stored = {k: v if isinstance(v, bytes) else v.encode() for k, v in pairs}
    values = [change[f] if f in change else stored.get(f) for f in READ_FIELDS]
    with pytest.raises(CorruptValue) as caught:
        decode_player(values, "{ns}:player:p")
    assert caught.value.what == "player" and caught.value.key == "{ns}:player:p"
    assert detail in caught.value.detail


def test_an_error_reply_is_a_corrupt_value() -> None:
    with pytest.raises(CorruptValue, match="WRONGTYPE"):
        decode_player(Exception("WRONGTYPE Operation against a key"), "k")  # type: ignore[arg-type]


def test_every_value_fits_the_recommended_listpack_limit() -> None:
    """With `hash-max-listpack-value 256` (docs/operations.md) a player hash stays a listpack:
    no value is longer, even with a full window and the largest numbers."""
    big = PlayerState(
        mu=-1.7976931348623157e308, sigma=1e-300, streak=2**63 - 1, phi=-1e300, pool=-1e300,
        n=2**63 - 1, last_ts=2**63 - 1, tier=len(TIER_LABELS), h_up=-1e300, h_down=-1e300,
        window=(-1e300,) * Params().window, recent=(2**63 - 1,) * Params().n_active,
    )  # fmt: skip
    assert max(len(v) for v in player_values(big)) <= 256
