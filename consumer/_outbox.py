"""The outbox stream as the relay's consumer group reads it (the Redis side of the relay).

The atomic batch write appends one entry per batch to `{ns}:outbox` (`m`: msgpack array of
[player, rating-change bytes]). The relays of a namespace read it through one Redis stream
consumer group (`GROUP`), so instances sharing a namespace never send the same entry twice while
alive; an entry is XACKed and XDELed once Kafka confirmed all of it (consumer/_relay.py decides
when), and one idle for `outbox_claim_idle_ms` (its reader died, or its delivery failed) is
claimed by another. An entry that does not decode, and a single rating change the broker will
never take, are moved to `{ns}:outbox:quarantine` for the operator, so no relay trips over them
again.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec
import redis

from consumer._metrics import Metrics
from redis_layout import Keys

GROUP: Final = "relay"


class OutboxMessage(
    msgspec.Struct, array_like=True, gc=False, forbid_unknown_fields=True, frozen=True
):
    """One [player, rating-change bytes] pair of an entry, decoded as strictly as a tuple would
    be (exactly two items, a str and bytes); gc=False: the thousands a pump holds until the
    broker confirms them are never scanned by the garbage collector, where tuples would be."""

    player: str
    value: bytes


_ENTRY: Final = msgspec.msgpack.Decoder(list[OutboxMessage])
_ONE: Final = msgspec.msgpack.Encoder()
_ACK_CHUNK: Final = 1000
log = logging.getLogger("adr.consumer.relay")


class OutboxStream:
    """The outbox of one rating pool (`keys`) as relay `consumer` of the group reads it."""

    def __init__(
        self, client: redis.Redis, keys: Keys, consumer: str, claim_idle_ms: int, metrics: Metrics
    ) -> None:
        self._r = client
        self._keys = keys
        self._consumer = consumer
        self._claim_idle_ms = claim_idle_ms
        self._metrics = metrics
        self._claim_from = "0-0"
        self._group_ready = False

    def pipeline(self) -> Any:
        """A pipeline (no transaction) for the queue_* steps of one round trip; the group is
        created first if it is not known to exist."""
        if not self._group_ready:
            try:
                self._r.xgroup_create(self._keys.outbox, GROUP, id="0", mkstream=True)
            except redis.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
            self._group_ready = True
        return self._r.pipeline(transaction=False)

    def lost_group(self, replies: list[Any]) -> bool:
        """Whether Redis lost the group (restarted empty): it is created again next time."""
        if any(isinstance(r, Exception) and "NOGROUP" in str(r) for r in replies):
            self._group_ready = False
            return True
        return False

    def queue_acknowledge(self, pipe: Any, ids: list[bytes]) -> None:
        """XACK and XDEL `ids`: Kafka confirmed all of them."""
        for i in range(0, len(ids), _ACK_CHUNK):
            chunk = ids[i : i + _ACK_CHUNK]
            pipe.xack(self._keys.outbox, GROUP, *chunk)
            pipe.xdel(self._keys.outbox, *chunk)

    def queue_keep(self, pipe: Any, ids: list[bytes]) -> None:
        """Reset the idle time of `ids` (this relay's in-flight entries), so that no one (this
        relay included) claims them while the broker is merely slow."""
        for i in range(0, len(ids), _ACK_CHUNK):
            chunk = ids[i : i + _ACK_CHUNK]
            pipe.xclaim(self._keys.outbox, GROUP, self._consumer, 0, chunk, justid=True)

    def queue_read(self, pipe: Any, count: int) -> None:
        """Read up to `count` new entries (the reply: XREADGROUP's)."""
        pipe.xreadgroup(GROUP, self._consumer, {self._keys.outbox: ">"}, count=count)

    def acknowledge(self, ids: list[bytes]) -> None:
        """`queue_acknowledge` in a round trip of its own."""
        if not ids:
            return
        pipe = self.pipeline()
        self.queue_acknowledge(pipe, ids)
        pipe.execute()

    def claim_abandoned(self, count: int) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """Up to `count` entries idle for `outbox_claim_idle_ms`, now this relay's (the caller
        skips its own in-flight ones); the scan goes on from where the last one stopped."""
        reply: Any = self._r.xautoclaim(
            self._keys.outbox,
            GROUP,
            self._consumer,
            self._claim_idle_ms,
            self._claim_from,
            count=count,
        )
        cursor, items = reply[0], reply[1]
        self._claim_from = cursor.decode() if isinstance(cursor, bytes) else str(cursor)
        return [e for e in items if e[1]]

    def decode(self, entry_id: bytes, fields: dict[bytes, bytes]) -> list[OutboxMessage] | None:
        """The entry's rating changes; None for one that does not decode, which is quarantined."""
        try:
            return _ENTRY.decode(fields[b"m"])
        except (KeyError, msgspec.DecodeError, RecursionError) as exc:
            self._quarantine(entry_id, fields, f"{type(exc).__name__}: {exc}")
            return None

    def quarantine_message(self, entry_id: bytes, message: OutboxMessage, error: str) -> None:
        """Move one rating change the producer or the broker refuses for good (larger than a
        `max.message.bytes`, an invalid record) to the quarantine stream, as an entry of its
        own: kept for the operator, and the rest of its entry goes on."""
        kept: dict[Any, Any] = {
            b"m": _ONE.encode([(message.player, message.value)]),
            b"entry": entry_id,
            b"error": error,
        }
        self._r.xadd(self._keys.outbox_quarantine, kept)
        self._metrics.corrupt_state.labels("outbox").inc()

    def backlog(self) -> int:
        """Outbox entries (batches) not yet acknowledged."""
        return int(self._r.xlen(self._keys.outbox))

    def _quarantine(self, entry_id: bytes, fields: dict[bytes, bytes], error: str) -> None:
        """Move an entry that does not decode to the quarantine stream, in one transaction: kept
        for the operator, gone from the outbox, so no relay trips over it again."""
        kept: dict[Any, Any] = {**fields, b"entry": entry_id, b"error": error}
        pipe = self._r.pipeline(transaction=True)
        pipe.xadd(self._keys.outbox_quarantine, kept)
        pipe.xack(self._keys.outbox, GROUP, entry_id)
        pipe.xdel(self._keys.outbox, entry_id)
        pipe.execute()
        self._metrics.corrupt_state.labels("outbox").inc()
        log.error(
            "corrupt outbox entry moved to quarantine",
            extra={"entry": entry_id.decode(), "to": self._keys.outbox_quarantine, "error": error},
        )
