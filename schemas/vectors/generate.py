"""Write schemas/vectors/kill_event.v1.json: golden kill-event messages for every publisher.

The bytes come from the `msgpack` package or are written by hand from the msgpack spec, never
from schemas/kill_event.py (the code the vectors test). Run `python -m schemas.vectors.generate`
after changing a vector; `--check` only reports whether the file is up to date (a test runs it).

Each vector: `name`, `about` (what it shows, which library does it), `hex` (the message),
`meaning` (the decoded msgpack in JSON, non-JSON types tagged: `{"$float": x}`, `{"$bin": hex}`,
`{"$timestamp": [s, ns]}`, `{"$ext": [type, hex]}`, `{"$map": [[k, v], ...]}` for non-str keys;
null when the bytes are not one msgpack value), `verdict` (`valid`/`invalid`), `reason` (the
dead-letter reason, null if valid) and `canonical` (true: the bytes are exactly what a v1
encoder writes for the `meaning` — keys in the order v, id, arena, attacker, victim, ts, ints
in their shortest form, unsigned when >= 0 — so publishers' encoders must reproduce them).
Every vector is judged at `now_ms` with the default window (7 days back, 60 s ahead).
"""

from __future__ import annotations

import json
import math
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgpack

PATH: Final = Path(__file__).with_name("kill_event.v1.json")
NOW_MS: Final = 1_764_680_430_000
"""The decoder's wall clock for every vector (2025-12-02T13:00:30Z)."""
TS: Final = 1_764_680_400_000
"""A valid event time: 30 s before NOW_MS."""
HOUR_MS: Final = 3_600_000
MAX_AGE_MS: Final = 7 * 24 * HOUR_MS
"""The decoder's wall-clock guard back (schemas/kill_event.md): lateness itself is by event time."""
MAX_MESSAGE_BYTES: Final = 4096
FIELDS: Final = ("v", "id", "arena", "attacker", "victim", "ts")


@dataclass(frozen=True)
class Vector:
    name: str
    about: str
    raw: bytes
    reason: str | None
    canonical: bool = False


def event(**changes: Any) -> dict[str, Any]:
    """The documented example event, with `changes` (value None removes the field)."""
    base: dict[str, Any] = {
        "v": 1, "id": "srv7-000042", "arena": "arena-3", "attacker": "p17", "victim": "p4",
        "ts": TS,
    }  # fmt: skip
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def pack(obj: Any) -> bytes:
    """msgpack 2.0 (str and bin distinct), doubles for floats, the package's shortest ints."""
    data = msgpack.packb(obj, use_bin_type=True, use_single_float=False)
    assert isinstance(data, bytes)
    return data


def fixstr(s: str) -> bytes:
    data = s.encode()
    assert len(data) < 32
    return bytes([0xA0 | len(data)]) + data


def by_hand_int64_ts() -> bytes:
    """The example with ts as a signed int64 (0xd3): vmihailenco/msgpack's and tinylib's form."""
    body = b"".join(fixstr(k) + pack(v) for k, v in event().items() if k != "ts")
    return b"\x86" + body + fixstr("ts") + b"\xd3" + struct.pack(">q", TS)


def by_hand_map16_str8() -> bytes:
    """The example as map16 with every string as str8: msgpack-c's `pack_map`/`pack_str` for
    larger maps, and encoders that never use the fix forms; valid msgpack, valid event."""
    out = b"\xde" + struct.pack(">H", 6)
    for key, value in event().items():
        out += b"\xd9" + bytes([len(key)]) + key.encode()
        if isinstance(value, str):
            out += b"\xd9" + bytes([len(value.encode())]) + value.encode()
        else:
            out += pack(value)
    return out


def vectors() -> list[Vector]:
    e = event()
    long_id = "a" * 64
    too_long_id = "a" * 65
    return [
        # --- valid -------------------------------------------------------------------------
        Vector("valid/basic", "the documented example, as any conforming encoder writes it",
               pack(e), None, canonical=True),
        Vector("valid/unicode-ids", "ids are UTF-8 text: non-ASCII player names are fine",
               pack(event(attacker="Jöns", victim="玩家-7", arena="арена-1")), None,
               canonical=True),
        Vector("valid/id-64-bytes", "an id of exactly 64 bytes (the maximum)",
               pack(event(id=long_id)), None, canonical=True),
        Vector("valid/ts-oldest", "ts exactly 7 days before the decoder's clock (window included)",
               pack(event(ts=NOW_MS - MAX_AGE_MS)), None, canonical=True),
        Vector("valid/ts-newest", "ts exactly 60 s after the decoder's clock (window included)",
               pack(event(ts=NOW_MS + 60_000)), None, canonical=True),
        Vector("valid/extra-map", "optional `extra` map: carried, never read",
               pack({**e, "extra": {"weapon": "rail", "headshot": True}}), None),
        Vector("valid/extra-nil", "`extra` nil counts as absent",
               pack({**e, "extra": None}), None),
        Vector("valid/unknown-field", "top-level fields the decoder does not know are ignored "
               "(producers may add fields first)", pack({**e, "server": "eu-7"}), None),
        Vector("valid/key-order", "keys in any order (msgpack maps are unordered)",
               pack(dict(reversed(list(e.items())))), None),
        Vector("valid/ts-int64", "ts as signed int64 (0xd3), as vmihailenco/msgpack and tinylib "
               "msgp write an int64: any int width is accepted", by_hand_int64_ts(), None),
        Vector("valid/map16-str8", "map16 header and str8 strings (msgpack-c, MessagePack-CSharp "
               "with some options): any map/str width is accepted", by_hand_map16_str8(), None),
        # --- too_large ------------------------------------------------------------------------
        Vector("invalid/too-large", "over 4096 bytes (a big `extra`)",
               pack({**e, "extra": {"blob": "x" * MAX_MESSAGE_BYTES}}), "too_large"),
        # --- undecodable ----------------------------------------------------------------------
        Vector("invalid/json-text", "JSON text sent instead of msgpack",
               json.dumps(e).encode(), "undecodable"),
        Vector("invalid/truncated", "the example cut short (a partial write)",
               pack(e)[:-3], "undecodable"),
        Vector("invalid/trailing-bytes", "two messages in one Kafka record",
               pack(e) + pack(e), "undecodable"),
        Vector("invalid/never-used-byte", "0xc1, the one byte msgpack never uses",
               b"\xc1", "undecodable"),
        Vector("invalid/bad-utf8", "an id that is not valid UTF-8 in a str (a C/C++ encoder "
               "packing raw bytes as str)",
               b"\x86" + b"".join(
                   fixstr(k) + (b"\xa2\xff\xfe" if k == "victim" else pack(v))
                   for k, v in e.items()), "undecodable"),
        Vector("invalid/empty", "an empty record (a tombstone or a failed serializer)",
               b"", "undecodable"),
        # --- not_a_map ------------------------------------------------------------------------
        Vector("invalid/struct-as-array", "struct as an array: MessagePack-CSharp's default for "
               "[Key(0)]..., msgpack-c's MSGPACK_DEFINE, vmihailenco's `msgpack:\",as_array\"`",
               pack(list(e.values())), "not_a_map"),
        Vector("invalid/string", "a bare string", pack("kill"), "not_a_map"),
        # --- missing_field --------------------------------------------------------------------
        Vector("invalid/pascal-case-keys", "PascalCase keys: MessagePack-CSharp "
               "[MessagePackObject(true)] and Go structs without `msgpack:\"v\"` tags",
               pack({k.capitalize(): v for k, v in e.items()}), "missing_field"),
        Vector("invalid/bin-keys", "keys as bin: an encoder packing byte strings for keys",
               pack({k.encode(): v for k, v in e.items()}), "missing_field"),
        Vector("invalid/missing-v", "no version field", pack(event(v=None)), "missing_field"),
        Vector("invalid/missing-ts", "no ts", pack(event(ts=None)), "missing_field"),
        Vector("invalid/missing-victim", "no victim", pack(event(victim=None)), "missing_field"),
        # --- wrong_type -----------------------------------------------------------------------
        Vector("invalid/ts-float", "ts as a float64: JavaScript Date.now()/1, C# double, "
               "encoders with a float default", pack(event(ts=float(TS))), "wrong_type"),
        Vector("invalid/ts-string", "ts as a string (ISO date or digits)",
               pack(event(ts=str(TS))), "wrong_type"),
        Vector("invalid/ts-timestamp-ext", "ts as the msgpack timestamp extension (-1): "
               "MessagePack-CSharp's DateTime, msgpack-c's time_point",
               pack(event(ts=msgpack.Timestamp(TS // 1000, (TS % 1000) * 1_000_000))),
               "wrong_type"),
        Vector("invalid/id-bin", "bin instead of str: msgpack-c packing std::vector<char>, "
               "byte arrays, Buffer in Node", pack(event(id=b"srv7-000042")), "wrong_type"),
        Vector("invalid/arena-int", "an id as an int (numeric ids must be sent as text)",
               pack(event(arena=3)), "wrong_type"),
        Vector("invalid/v-string", "version as a string", pack(event(v="1")), "wrong_type"),
        Vector("invalid/v-float", "version as a float", pack(event(v=1.0)), "wrong_type"),
        Vector("invalid/v-bool", "version as true", pack(event(v=True)), "wrong_type"),
        Vector("invalid/extra-array", "`extra` not a map", pack({**e, "extra": [1, 2]}),
               "wrong_type"),
        # --- unknown_version ------------------------------------------------------------------
        Vector("invalid/v2", "a version this decoder does not read", pack(event(v=2)),
               "unknown_version"),
        Vector("invalid/v0", "version 0", pack(event(v=0)), "unknown_version"),
        # --- bad_id ---------------------------------------------------------------------------
        Vector("invalid/empty-arena", "an empty id", pack(event(arena="")), "bad_id"),
        Vector("invalid/id-65-bytes", "an id over 64 bytes", pack(event(id=too_long_id)),
               "bad_id", canonical=True),
        Vector("invalid/id-65-utf8-bytes", "33 two-byte characters: 33 chars, 66 bytes",
               pack(event(attacker="é" * 33)), "bad_id", canonical=True),
        # --- self_kill ------------------------------------------------------------------------
        Vector("invalid/self-kill", "attacker == victim (deaths by the world are not sent)",
               pack(event(victim="p17")), "self_kill", canonical=True),
        # --- ts_out_of_range ------------------------------------------------------------------
        Vector("invalid/ts-seconds", "ts in seconds instead of milliseconds",
               pack(event(ts=TS // 1000)), "ts_out_of_range", canonical=True),
        Vector("invalid/ts-too-old", "1 ms older than the window (clock or buffer 7 days off)",
               pack(event(ts=NOW_MS - MAX_AGE_MS - 1)), "ts_out_of_range", canonical=True),
        Vector("invalid/ts-future", "1 ms past the window (server clock > 60 s ahead)",
               pack(event(ts=NOW_MS + 60_001)), "ts_out_of_range", canonical=True),
        Vector("invalid/ts-microseconds", "ts in microseconds", pack(event(ts=TS * 1000)),
               "ts_out_of_range", canonical=True),
        Vector("invalid/ts-negative", "a negative ts (unsigned arithmetic gone wrong)",
               pack(event(ts=-1)), "ts_out_of_range"),
    ]  # fmt: skip


def meaning(obj: Any) -> Any:
    """The JSON form of a decoded msgpack value (see the module docstring for the tags); strict
    JSON: a NaN or infinite float is tagged with its repr."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, int | str):
        return obj
    if isinstance(obj, float):
        return {"$float": obj if math.isfinite(obj) else repr(obj)}  # "nan", "inf": valid JSON
    if isinstance(obj, bytes):
        return {"$bin": obj.hex()}
    if isinstance(obj, msgpack.Timestamp):
        return {"$timestamp": [obj.seconds, obj.nanoseconds]}
    if isinstance(obj, msgpack.ExtType):
        return {"$ext": [obj.code, obj.data.hex()]}
    if isinstance(obj, list | tuple):
        return [meaning(x) for x in obj]
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj):
            return {k: meaning(v) for k, v in obj.items()}
        return {"$map": [[meaning(k), meaning(v)] for k, v in obj.items()]}
    raise TypeError(f"no JSON form for {type(obj).__name__}")


def unpack(raw: bytes) -> Any:
    """One msgpack value with the `msgpack` package; raises ValueError if `raw` is not one."""
    try:
        return msgpack.unpackb(raw, raw=False, strict_map_key=False, timestamp=0)
    except Exception as exc:  # bad bytes, bad UTF-8, too deep, an array as a map key, ...
        raise ValueError(f"{type(exc).__name__}: {exc}") from exc


def document() -> dict[str, Any]:
    rows = []
    for vec in vectors():
        try:
            decoded = meaning(unpack(vec.raw))
        except ValueError:
            decoded = None
        if vec.canonical:
            assert vec.raw == pack({k: decoded[k] for k in FIELDS}), vec.name
        rows.append(
            {
                "name": vec.name,
                "about": vec.about,
                "hex": vec.raw.hex(),
                "meaning": decoded,
                "verdict": "valid" if vec.reason is None else "invalid",
                "reason": vec.reason,
                "canonical": vec.canonical,
            }
        )
    return {
        "format": "kill event v1",
        "now_ms": NOW_MS,
        "window_ms": {"max_age": MAX_AGE_MS, "max_future": 60_000},
        "vectors": rows,
    }


def render() -> str:
    return json.dumps(document(), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if PATH.read_text(encoding="utf-8") != text:
            print(f"{PATH} is out of date: run python -m schemas.vectors.generate")
            return 1
        return 0
    PATH.write_text(text, encoding="utf-8")
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
