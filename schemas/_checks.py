"""Checks shared by the decoders: size, ids, finite floats, and classifying a failed decode."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeVar

import msgspec

from schemas._errors import Reason, SchemaError
from schemas._limits import MAX_MESSAGE_BYTES

# A code point is at most 4 bytes of UTF-8, so a string this short cannot exceed the byte limit.
_UTF8_MAX_BYTES_PER_CHAR = 4

# msgspec's message for a value of the right type outside a Literal's set (e.g. an unknown role).
_ENUM_ERROR_PREFIX = "Invalid enum value"

_ANY_DECODER = msgspec.msgpack.Decoder()
_TOO_DEEP = "nested deeper than the decoder's recursion limit"

T = TypeVar("T")


def required_fields(cls: type[msgspec.Struct]) -> tuple[str, ...]:
    """Wire names of the fields a message must carry (those without a default)."""
    return tuple(f.encode_name for f in msgspec.structs.fields(cls) if f.required)


def check_size(raw: bytes | bytearray | memoryview) -> None:
    """Reject a message over MAX_MESSAGE_BYTES before spending time decoding it."""
    if len(raw) > MAX_MESSAGE_BYTES:
        raise SchemaError(Reason.TOO_LARGE, f"{len(raw)} bytes > {MAX_MESSAGE_BYTES}")


def utf8_len_within(value: str, max_bytes: int) -> bool:
    """True iff `value` is 1..max_bytes bytes of UTF-8."""
    n = len(value)
    if n == 0:
        return False
    if n * _UTF8_MAX_BYTES_PER_CHAR <= max_bytes:
        return True
    return n <= max_bytes and len(value.encode("utf-8")) <= max_bytes


def check_ids(pairs: Iterable[tuple[str, str]], max_bytes: int) -> None:
    """Each (field, value) must be 1..max_bytes bytes of UTF-8."""
    for name, value in pairs:
        if not utf8_len_within(value, max_bytes):
            raise SchemaError(Reason.BAD_ID, f"{name} must be 1-{max_bytes} bytes of UTF-8")


def check_finite(pairs: Iterable[tuple[str, float]]) -> None:
    """Each (field, value) must be a finite float (no NaN, no ±inf)."""
    for name, value in pairs:
        if not math.isfinite(value):
            raise SchemaError(Reason.BAD_VALUE, f"{name} must be finite, got {value!r}")


def decode_typed(
    decoder: msgspec.msgpack.Decoder[T],
    raw: bytes | bytearray | memoryview,
    required: Iterable[str],
    version: int,
) -> T:
    """`decoder.decode(raw)`, or SchemaError: a failed decode is explained by classify_failure.

    msgspec raises RecursionError, not DecodeError, for nesting past the interpreter's recursion
    limit (a 4 KiB message can nest 4000 deep, also inside `extra`, which msgspec walks to skip);
    that is `undecodable` too, so hostile bytes never raise anything but SchemaError.
    """
    try:
        return decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise classify_failure(raw, required, version, exc) from None
    except RecursionError:
        raise SchemaError(Reason.UNDECODABLE, _TOO_DEEP) from None


def classify_failure(
    raw: bytes | bytearray | memoryview,
    required: Iterable[str],
    version: int,
    error: msgspec.DecodeError,
) -> SchemaError:
    """Explain why the typed decoder failed, in the documented order of precedence.

    Only runs for rejected messages, so it may decode the bytes a second time, untyped.
    """
    try:
        obj = _ANY_DECODER.decode(raw)
    except msgspec.DecodeError as exc:
        return SchemaError(Reason.UNDECODABLE, str(exc))
    except RecursionError:
        return SchemaError(Reason.UNDECODABLE, _TOO_DEEP)
    if not isinstance(obj, dict):
        return SchemaError(Reason.NOT_A_MAP, f"top level is {type(obj).__name__}, not a map")
    if "v" not in obj:
        return SchemaError(Reason.MISSING_FIELD, "missing field 'v'")
    v = obj["v"]
    if type(v) is not int:
        return SchemaError(Reason.WRONG_TYPE, f"field 'v' must be int, got {type(v).__name__}")
    if v != version:
        return SchemaError(Reason.UNKNOWN_VERSION, f"v={v}, this decoder reads v={version}")
    missing = [name for name in required if name not in obj]
    if missing:
        return SchemaError(Reason.MISSING_FIELD, f"missing field {missing[0]!r}")
    if str(error).startswith(_ENUM_ERROR_PREFIX):
        return SchemaError(Reason.BAD_VALUE, str(error))
    return SchemaError(Reason.WRONG_TYPE, str(error))
