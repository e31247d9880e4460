"""Kill event v1: what a game server publishes to `kill-events` (key = arena). See kill_event.md."""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from schemas._checks import check_ids, check_size, decode_typed, required_fields
from schemas._errors import Reason, SchemaError
from schemas._limits import DEFAULT_LIMITS, MAX_ID_BYTES, Limits

VERSION: Final = 1

_MSGPACK_NIL = 0xC0
_MSGPACK_FIXMAP_FIRST, _MSGPACK_FIXMAP_LAST = 0x80, 0x8F
_MSGPACK_MAP16, _MSGPACK_MAP32 = 0xDE, 0xDF

_ID_SCHEMA = {"minLength": 1, "maxLength": MAX_ID_BYTES}


def _id(description: str) -> msgspec.Meta:
    return msgspec.Meta(
        description=f"{description}; 1-{MAX_ID_BYTES} bytes of UTF-8",
        extra_json_schema=_ID_SCHEMA,
    )


# gc=False: only strings, ints and raw bytes, so never part of a reference cycle; the consumer
# decodes thousands per batch that the cyclic garbage collector then need not scan.
class KillEvent(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True, gc=False):
    """A kill in an arena: `attacker` killed `victim` at event time `ts`."""

    v: Annotated[Literal[1], msgspec.Meta(description="format version")]
    id: Annotated[str, _id("event id, unique per event, stable across resends")]
    arena: Annotated[str, _id("arena id; also the Kafka key")]
    attacker: Annotated[str, _id("player id of the killer")]
    victim: Annotated[str, _id("player id of the killed player; differs from attacker")]
    ts: Annotated[
        int,
        msgspec.Meta(
            description="event time, milliseconds since the Unix epoch; "
            "within the decoder's window around its wall clock"
        ),
    ]
    extra: (
        Annotated[
            msgspec.Raw,
            msgspec.Meta(
                description="optional map of publisher data, passed through untouched",
                extra_json_schema={"type": "object"},
            ),
        ]
        | msgspec.UnsetType
    ) = msgspec.UNSET


_DECODER: Final = msgspec.msgpack.Decoder(KillEvent)
_ENCODER: Final = msgspec.msgpack.Encoder()
_REQUIRED: Final = required_fields(KillEvent)


def _extra_is_map(extra: msgspec.Raw) -> bool | None:
    """True for a map, None for nil (treated as absent), False for anything else."""
    first = bytes(memoryview(extra)[:1])[0]
    if first == _MSGPACK_NIL:
        return None
    return _MSGPACK_FIXMAP_FIRST <= first <= _MSGPACK_FIXMAP_LAST or first in (
        _MSGPACK_MAP16,
        _MSGPACK_MAP32,
    )


def decode_kill_event(
    raw: bytes | bytearray | memoryview, now_ms: int, limits: Limits = DEFAULT_LIMITS
) -> KillEvent:
    """Decode and validate one kill event; raise SchemaError with the reason otherwise."""
    check_size(raw)
    event = decode_typed(_DECODER, raw, _REQUIRED, VERSION)
    extra = event.extra
    if extra is not msgspec.UNSET:
        is_map = _extra_is_map(extra)
        if is_map is None:
            event = msgspec.structs.replace(event, extra=msgspec.UNSET)
        elif not is_map:
            raise SchemaError(Reason.WRONG_TYPE, "field 'extra' must be a map")
    id_, arena, attacker, victim = event.id, event.arena, event.attacker, event.victim
    if not (  # the common case at once: ASCII ids of 1-64 characters are 1-64 bytes of UTF-8
        0 < len(id_) <= MAX_ID_BYTES
        and 0 < len(arena) <= MAX_ID_BYTES
        and 0 < len(attacker) <= MAX_ID_BYTES
        and 0 < len(victim) <= MAX_ID_BYTES
        and (id_ + arena + attacker + victim).isascii()
    ):
        check_ids(
            (("id", id_), ("arena", arena), ("attacker", attacker), ("victim", victim)),
            MAX_ID_BYTES,
        )
    if event.attacker == event.victim:
        raise SchemaError(Reason.SELF_KILL, f"attacker and victim are both {event.attacker!r}")
    if not now_ms - limits.max_age_ms <= event.ts <= now_ms + limits.max_future_ms:
        raise SchemaError(
            Reason.TS_OUT_OF_RANGE,
            f"ts={event.ts} outside [{now_ms - limits.max_age_ms}, "
            f"{now_ms + limits.max_future_ms}]",
        )
    return event


def check_key(event: KillEvent, key: bytes | None) -> None:
    """The Kafka key must be the UTF-8 of `event.arena` (a null key too is a mismatch).

    The key picks the partition, and only one partition keeps an arena's events in order; an
    event keyed otherwise would be rated beside, not after, its arena's earlier kills.
    """
    if key is None or key != event.arena.encode():
        shown = None if key is None else key[:80]
        raise SchemaError(Reason.KEY_MISMATCH, f"key {shown!r} is not arena {event.arena!r}")


def encode_kill_event(event: KillEvent) -> bytes:
    """Encode a kill event as a msgpack map (extra, when present, is written byte for byte)."""
    return _ENCODER.encode(event)


def kill_event(
    *,
    id: str,
    arena: str,
    attacker: str,
    victim: str,
    ts: int,
    extra: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET,
) -> KillEvent:
    """A v1 kill event (unvalidated; validation happens on decode)."""
    return KillEvent(
        v=VERSION, id=id, arena=arena, attacker=attacker, victim=victim, ts=ts, extra=extra
    )
