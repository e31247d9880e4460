"""The outbox's consumer group kept in order, off an entry's steady path (consumer/_relay.py reads,
sends and acknowledges the entries themselves).

The atomic batch write appends one entry per batch to `{ns}:outbox`. The relays of a namespace
read it through one Redis stream consumer group (`GROUP`), so instances sharing a namespace never
send the same entry twice while alive. What keeps that group in order, none of which an entry
meets on its way while Redis, the broker and the relays are well:

- the group created where it is missing (the first read of a pool, or a Redis restarted empty),
- the relay's in-flight entries kept fresh (XCLAIM JUSTID), so that no one claims them while the
  broker is merely slow, and the entries idle for `outbox_claim_idle_ms` (their reader died, or
  their delivery failed) claimed by another relay (XAUTOCLAIM),
- an entry that does not decode, and a single rating change the broker will never take, moved
  to `{ns}:outbox:quarantine` for the operator, so no relay trips over them again,
- the backlog (entries not yet acknowledged), reported once a second.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec
import redis

from consumer._metrics import Metrics
from redis_layout import Keys

GROUP: Final = "relay"
CHUNK: Final = 1000
"""Entry ids per XACK, XDEL or XCLAIM command."""
_ONE: Final = msgspec.msgpack.Encoder()
log = logging.getLogger("adr.consumer.relay")


class OutboxStream:
    """The outbox group of one rating pool (`keys`), as relay `consumer` of it keeps it."""

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
        """A pipeline (no transaction) for the commands of one round trip on the group; the
        group is created first if it is not known to exist."""
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

    def queue_keep(self, pipe: Any, ids: list[bytes]) -> None:
        """Reset the idle time of `ids` (this relay's in-flight entries), so that no one (this
        relay included) claims them while the broker is merely slow."""
        for i in range(0, len(ids), CHUNK):
            chunk = ids[i : i + CHUNK]
            pipe.xclaim(self._keys.outbox, GROUP, self._consumer, 0, chunk, justid=True)

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

    def quarantine_message(self, entry_id: bytes, player: str, value: bytes, error: str) -> None:
        """Move one rating change the producer or the broker refuses for good (larger than a
        `max.message.bytes`, an invalid record) to the quarantine stream, as an entry of its
        own: kept for the operator, and the rest of its entry goes on."""
        kept: dict[Any, Any] = {
            b"m": _ONE.encode([(player, value)]),
            b"entry": entry_id,
            b"error": error,
        }
        self._r.xadd(self._keys.outbox_quarantine, kept)
        self._metrics.corrupt_state.labels("outbox").inc()

    def quarantine_entry(self, entry_id: bytes, fields: dict[bytes, bytes], error: str) -> None:
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

    def backlog(self) -> int:
        """Outbox entries (batches) not yet acknowledged."""
        return int(self._r.xlen(self._keys.outbox))
