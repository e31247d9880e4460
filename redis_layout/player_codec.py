"""PlayerState <-> the fields of its `{ns}:player:<id>` hash (layout 2: mu, sigma, n, last_ts,
tier as text, the engine's other state as one msgpack field; layout 1 still read): the one codec
of a player's hash. The consumer's hot path, compiled with mypyc (runtime/compiled.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

import msgspec
from msgspec import Raw
from msgspec.structs import astuple

from engine import TIER_LABELS, HashFields, PlayerState, tier_label, tier_of_label
from redis_layout._errors import CorruptValue

FIELDS: Final = ("mu", "sigma", "n", "last_ts", "tier", "window", "state", "ver")
"""The hash's fields as the consumer writes them (layout 2): what readers use stays a field of
its own, `window` (msgpack array of float64, as in layout 1) and the engine's other state in one
msgpack field, `state` (`STATE_ITEMS`). Each value stays under 256 bytes (window: 183 at most;
state: 84), so that with `hash-max-listpack-value 256` (docs/operations.md) the hash stays a
listpack. `ver` counts the player's rating changes (compare-and-set; it is the `seq` of the
latest one, schemas/rating_change.md)."""

STATE_ITEMS: Final = ("streak", "phi", "pool", "h_up", "h_down", "recent")
"""The items of the `state` field, a msgpack array: streak (int), phi, pool, h_up, h_down
(float64), recent (array of int)."""

FIELDS_V1: Final = (
    "mu",
    "sigma",
    "streak",
    "phi",
    "pool",
    "n",
    "last_ts",
    "tier",
    "h_up",
    "h_down",
    "window",
    "recent",
    "ver",
)
"""Layout 1 (before 2026-12-04): one field per state item, the floats as text and window, recent
as msgpack. Still read (`decode_player`); the consumer's next write of the player turns such a
hash into layout 2 (apply.lua deletes the fields layout 2 does not have)."""

STATE_FIELDS: Final = FIELDS_V1[:-1]
"""engine.PlayerState's fields in declaration order (layout 1 holds them so, then `ver`): the
order `_values` unpacks them in (tests/redis_layout/test_layout_player_codec.py checks it)."""

READ_FIELDS: Final = (*FIELDS, *STATE_ITEMS)
"""What `decode_player` takes, in HMGET order: layout 2's fields, then layout 1's state items
(absent, so nil, in a layout-2 hash)."""

_LABEL_BY_TIER: Final = tuple(tier_label(k) for k in range(len(TIER_LABELS) + 1))
_TIER_BY_LABEL: Final = {label.encode(): tier_of_label(label) for label in TIER_LABELS}
"""engine's mapping, keyed by the bytes a hash value arrives as (the decode hot path)."""
_WINDOW_DECODER: Final = msgspec.msgpack.Decoder(tuple[float, ...])
_RECENT_DECODER: Final = msgspec.msgpack.Decoder(tuple[int, ...])
_STATE_DECODER: Final = msgspec.msgpack.Decoder(
    tuple[int, float, float, float, float, tuple[int, ...]]
)
_ENCODER: Final = msgspec.msgpack.Encoder()
_JSON: Final = msgspec.json.Encoder()
_ENCODE: Final = _ENCODER.encode
_JSON_ENCODE: Final = _JSON.encode
"""The encoders' bound methods, made once: compiled, `_ENCODER.encode(x)` looks the method up
by name at every call."""
_STR8_HEADS: Final = tuple(bytes((0xD9, size)) for size in range(0x100))


def decode_player(values: Sequence[Any], key: str = "") -> tuple[PlayerState, int] | None:
    """(state, ver) from HMGET READ_FIELDS (a layout-2 hash, or a layout-1 one: no `state`), or
    None when the player has no hash yet.

    Raises CorruptValue for what the consumer never writes (a field that does not parse, a
    non-finite float, a hash without `mu`, a reply that is an error such as WRONGTYPE), so that
    no such value reaches the engine (which clips odd finite values; one it still cannot rate
    fails that event alone, see consumer._batch.rate_batch); the consumer reports it as its
    CorruptState and dead-letters the player's events.
    """
    if isinstance(values, Exception):
        raise CorruptValue("player", key, str(values))
    if values[0] is None:
        if any(v is not None for v in values):
            raise CorruptValue("player", key, "hash without mu")
        return None
    try:
        (mu, sigma, n, last_ts, tier, window, packed, ver, streak, phi, pool, h_up, h_down,
         recent) = values  # fmt: skip
        if packed is not None:  # layout 2
            streak, phi, pool, h_up, h_down, recent = _STATE_DECODER.decode(packed)
        else:  # layout 1
            streak, phi, pool = int(streak), float(phi), float(pool)
            h_up, h_down = float(h_up), float(h_down)
            recent = _RECENT_DECODER.decode(recent) if recent else ()
        window = _WINDOW_DECODER.decode(window) if window else ()
        state = PlayerState(
            mu=float(mu),
            sigma=float(sigma),
            streak=streak,
            phi=phi,
            pool=pool,
            n=int(n),
            last_ts=int(last_ts) if last_ts else None,
            tier=_TIER_BY_LABEL[tier] if tier else 0,
            h_up=h_up,
            h_down=h_down,
            window=window,
            recent=recent,
        )
        version = int(ver)
    except (ValueError, TypeError, KeyError, msgspec.DecodeError, RecursionError) as exc:
        raise CorruptValue("player", key, f"{type(exc).__name__}: {exc}") from None
    floats = (state.mu, state.sigma, state.phi, state.pool, state.h_up, state.h_down)
    if not all(map(math.isfinite, floats)) or not all(map(math.isfinite, state.window)):
        raise CorruptValue("player", key, "a float is not finite")
    return state, version


def decode_fields(values: Sequence[Any], key: str = "") -> tuple[HashFields, int] | None:
    """(the hash values as engine.HashFields, ver) of a layout-2 hash from HMGET READ_FIELDS,
    for a pool whose model is not ADR (RatingModel.from_fields reads them), or None when the
    player has no hash yet. CorruptValue for a field that does not parse, a non-finite float,
    a layout-1 hash (ADR's only) or an error reply."""
    if isinstance(values, Exception):
        raise CorruptValue("player", key, str(values))
    if values[0] is None:
        if any(v is not None for v in values):
            raise CorruptValue("player", key, "hash without mu")
        return None
    mu, sigma, n, last_ts, tier, window, packed, ver = values[: len(FIELDS)]
    try:
        if packed is None or any(v is not None for v in values[len(FIELDS) :]):
            raise ValueError("not a layout-2 hash")
        fields: HashFields = (
            float(mu),
            float(sigma),
            int(n),
            int(last_ts) if last_ts else None,
            _TIER_BY_LABEL[tier] if tier else 0,
            bytes(window or b""),
            bytes(packed),
        )
        version = int(ver)
    except (ValueError, TypeError, KeyError) as exc:
        raise CorruptValue("player", key, f"{type(exc).__name__}: {exc}") from None
    if not (math.isfinite(fields[0]) and math.isfinite(fields[1])):
        raise CorruptValue("player", key, "a float is not finite")
    return fields, version


def model_values(fields: HashFields) -> tuple[str, str, str, str, str, bytes, bytes]:
    """The hash values in FIELDS order, without `ver`, of a model's fields
    (RatingModel.to_fields): ADR's text forms (`player_values`), `window` and `state` as given."""
    mu, sigma, n, last_ts, tier, window, packed = fields
    return (
        float_text(mu),
        float_text(sigma),
        str(n),
        "" if last_ts is None else str(last_ts),
        _LABEL_BY_TIER[tier],
        window,
        packed,
    )


def model_items(fields: HashFields) -> tuple[str, str, str, str, str, Raw, Raw]:
    """`script_items` of a model's hash values (`model_values`)."""
    mu, sigma, n, last_ts, tier, window, packed = model_values(fields)
    return mu, sigma, n, last_ts, tier, msgpack_str(window), msgpack_str(packed)


def float_text(x: float) -> str:
    """`repr(x)`, in a fraction of its time where repr writes no exponent (0 and 1e-4 <= |x| <
    1e16: every μ, σ and most other values); msgspec's JSON writer gives the same shortest
    digits but writes exponents differently, so those values still go through repr."""
    magnitude = abs(x)
    if 1e-4 <= magnitude < 1e16 or magnitude == 0.0:
        return _JSON_ENCODE(x).decode()
    return repr(x)


def _values(state: PlayerState) -> tuple[str, str, str, str, str, bytes, bytes]:
    """The hash values of `state` in FIELDS order, without `ver`: mu to tier as text, then
    `window` and `state` (STATE_ITEMS as one msgpack array, floats as float64: exact).

    The fields are read in one call, `msgspec.structs.astuple` (PlayerState's declaration order,
    `STATE_FIELDS`): compiled, each `state.x` is a generic attribute lookup, and a float read
    that way is unboxed and boxed again for the encoder."""
    mu, sigma, streak, phi, pool, n, last_ts, tier, h_up, h_down, window, recent = astuple(state)
    return (
        float_text(mu),
        float_text(sigma),
        str(n),
        "" if last_ts is None else str(last_ts),
        _LABEL_BY_TIER[tier],
        _ENCODE(window),
        _ENCODE((streak, phi, pool, h_up, h_down, recent)),
    )


def player_values(state: PlayerState) -> list[str | bytes]:
    """The hash values of `state` in FIELDS order, without `ver`."""
    return list(_values(state))


def script_items(state: PlayerState) -> tuple[str, str, str, str, str, Raw, Raw]:
    """`player_values` as items of the write script's msgpack players section: `window` and
    `state` become msgpack str holding the same bytes (Redis's cmsgpack cannot read the bin
    type). A fixed-length tuple: compiled, returned by value, for rate_batch to unpack."""
    mu, sigma, n, last_ts, tier, window, packed = _values(state)
    return mu, sigma, n, last_ts, tier, msgpack_str(window), msgpack_str(packed)


def msgpack_str(data: bytes) -> Raw:
    """`data` encoded as a msgpack str (any bytes; nothing checks that they are UTF-8)."""
    size = len(data)
    if size < 0x100:
        return Raw(_STR8_HEADS[size] + data)
    if size < 0x10000:
        return Raw(b"\xda" + size.to_bytes(2, "big") + data)
    return Raw(b"\xdb" + size.to_bytes(4, "big") + data)


def encode_player(state: PlayerState, ver: int) -> list[str | bytes]:
    """The flat `field, value, ...` list HSET writes for `state` at version `ver`."""
    flat: list[str | bytes] = []
    for field, value in zip(FIELDS, [*player_values(state), str(ver)], strict=True):
        flat += (field, value)
    return flat


def encode_player_v1(state: PlayerState, ver: int) -> list[str | bytes]:
    """`encode_player` in layout 1 (FIELDS_V1), as hashes written before layout 2 hold it: what
    the decoder still reads, and issue #20's baseline of the raw writes (bench/)."""
    last_ts = state.last_ts
    values: tuple[str | bytes, ...] = (
        float_text(state.mu),
        float_text(state.sigma),
        str(state.streak),
        float_text(state.phi),
        float_text(state.pool),
        str(state.n),
        "" if last_ts is None else str(last_ts),
        _LABEL_BY_TIER[state.tier],
        float_text(state.h_up),
        float_text(state.h_down),
        _ENCODER.encode(state.window),
        _ENCODER.encode(state.recent),
        str(ver),
    )
    flat: list[str | bytes] = []
    for field, value in zip(FIELDS_V1, values, strict=True):
        flat += (field, value)
    return flat
