"""A studio's kill-event log for `adr evaluate --events`: read, judge each record, keep the good.

The file is what `adr replay` reads: JSON lines or a msgpack stream of maps {"id", "arena",
"attacker", "victim", "ts"} (ts in ms since the Unix epoch; "v", when present, must be 1; unknown
keys are ignored only where the wire format allows them, i.e. `extra`). Each record is judged by
the wire format's own decoder (schemas.decode_kill_event, the checks `adr check` and the consumer
apply: fields, types, ids of 1–64 bytes of UTF-8, self-kills, size), with the event-time window
set to the engine's range [0, 2**53) instead of the wall clock (a log is history, not live
traffic). A bad record is counted under its reason and skipped; nothing in the file is fatal. A
msgpack stream that stops decoding cannot be resynchronised: the rest of the file is counted once
as `undecodable_tail` (its size in bytes is reported).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgpack
import msgspec

from schemas import Limits, SchemaError, decode_kill_event

MAX_TS_MS: Final = 2**53 - 1
# ts must lie in [0, 2**53): the engine's bad_ts range (engine/_book.py) as a decoder window.
LOG_LIMITS: Final = Limits(max_age_ms=0, max_future_ms=MAX_TS_MS)
_MSGPACK_MAP_FIRST_BYTES: Final = frozenset([*range(0x80, 0x90), 0xDE, 0xDF])
NOT_JSON: Final = "not_json"
UNDECODABLE_TAIL: Final = "undecodable_tail"
_EXAMPLES_PER_REASON: Final = 3
_ENCODER: Final = msgspec.msgpack.Encoder()


class LogEvent(msgspec.Struct, frozen=True, gc=False):
    """One good record, with its place in the file (1-based line or record number)."""

    id: str
    arena: str
    attacker: str
    victim: str
    ts: int
    number: int


@dataclass
class LogReading:
    """What reading the file gave: the good events in file order, and the bad ones by reason."""

    events: list[LogEvent] = field(default_factory=list)
    bad: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)  # reason -> "#n: detail"
    records: int = 0
    fmt: str = "jsonl"
    unread_bytes: int = 0

    def reject(self, reason: str, number: int, detail: str) -> None:
        self.bad[reason] += 1
        shown = self.examples.setdefault(reason, [])
        if len(shown) < _EXAMPLES_PER_REASON:
            shown.append(f"#{number}: {detail[:160]}")


def detect_format(head: bytes) -> str:
    """msgpack when the first non-blank byte starts a map, else JSON lines (as `adr replay`)."""
    first = head.lstrip()[:1]
    return "msgpack" if first and first[0] in _MSGPACK_MAP_FIRST_BYTES else "jsonl"


def judge(obj: Any, number: int, reading: LogReading) -> None:
    """Judge one decoded record with the wire format's decoder; keep it or count why not."""
    if isinstance(obj, dict) and "v" not in obj:
        obj = {"v": 1, **obj}  # the replay format does not require the version; v1 is meant
    try:
        raw = _ENCODER.encode(obj)
        event = decode_kill_event(raw, 0, LOG_LIMITS)
    except SchemaError as exc:
        reading.reject(exc.reason.value, number, exc.detail)
        return
    except (TypeError, OverflowError, ValueError) as exc:  # not re-encodable (int > 64 bits)
        reading.reject("wrong_type", number, str(exc))
        return
    reading.events.append(
        LogEvent(event.id, event.arena, event.attacker, event.victim, event.ts, number)
    )


def read_log(path: Path, fmt: str = "auto") -> LogReading:
    """Read and judge every record of the file, `-` for stdin (OSError only when it cannot be
    read at all). The whole log is held in memory: `--order time` sorts it."""
    data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    reading = LogReading(fmt=detect_format(data[:64]) if fmt == "auto" else fmt)
    records = _msgpack_objects(data, reading) if reading.fmt == "msgpack" else _json_objects(data)
    for number, obj in records:
        reading.records += 1
        if isinstance(obj, _NotJson):
            reading.reject(NOT_JSON, number, obj.detail)
        else:
            judge(obj, number, reading)
    return reading


class _NotJson:
    __slots__ = ("detail",)

    def __init__(self, detail: str) -> None:
        self.detail = detail


def _json_objects(data: bytes) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            yield number, msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            yield number, _NotJson(str(exc))
        except RecursionError:
            yield number, _NotJson("nested too deep")


def _msgpack_objects(data: bytes, reading: LogReading) -> Iterator[tuple[int, Any]]:
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=len(data) + 1)
    unpacker.feed(data)
    number = 0
    while True:
        try:
            obj = unpacker.unpack()
        except msgpack.OutOfData:
            left = len(data) - unpacker.tell()
            if left:
                reading.unread_bytes = left
                reading.reject(UNDECODABLE_TAIL, number + 1, f"{left} bytes end mid-record")
            return
        except (msgpack.UnpackException, ValueError, RecursionError) as exc:
            reading.unread_bytes = len(data) - unpacker.tell()
            reading.reject(UNDECODABLE_TAIL, number + 1, f"{exc}; rest of the file unread")
            return
        number += 1
        yield number, obj
