"""The decode stage's loops over a batch's Kafka messages: run once per message, so compiled
with mypyc (runtime/compiled.py); the stage itself, with its dead letters, is
consumer/_lifecycle.py's."""

from __future__ import annotations

from typing import Any

from consumer._batch import Accepted
from schemas import Limits, Reason, SchemaError, check_key, decode_kill_event


class Decoded:
    """A batch's messages sorted into kill events and rejections."""

    __slots__ = ("accepted", "failures", "rejected")

    def __init__(self) -> None:
        self.accepted: list[Accepted] = []
        self.rejected: list[tuple[Any, str]] = []
        """(message, dead-letter reason), in the batch's order."""
        self.failures: list[tuple[Any, str]] = []
        """(message, repr of the exception) where the decoder raised something other than
        SchemaError (a decoder bug; such a message is also rejected as undecodable): the
        caller counts and logs each."""


def decode_messages(messages: list[Any], now_ms: int, limits: Limits) -> Decoded:
    """Decode and check each message (schemas.decode_kill_event, the key check)."""
    out = Decoded()
    accepted, rejected = out.accepted, out.rejected
    for m in messages:
        try:
            event = decode_kill_event(m.value() or b"", now_ms, limits)  # None: a tombstone
            check_key(event, m.key())
        except SchemaError as exc:
            rejected.append((m, exc.reason.value))
            continue
        except Exception as exc:  # a decoder bug: the fuzz tests say this cannot happen
            out.failures.append((m, repr(exc)))
            rejected.append((m, Reason.UNDECODABLE.value))
            continue
        accepted.append(Accepted(m.partition(), m.offset(), event, m))
    return out


def next_offsets(messages: list[Any]) -> dict[int, int]:
    """partition -> the offset after the last of `messages` there (they are in log order)."""
    out: dict[int, int] = {}
    for m in messages:
        out[m.partition()] = m.offset() + 1
    return out
