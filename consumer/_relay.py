"""The outbox relay: rating changes written by the atomic batch write -> Kafka, at least once.

Each outbox entry holds one batch's rating changes (`m`: msgpack array of [player, message]).
Entries are read through a Redis stream consumer group, so instances sharing a namespace never
send the same entry twice while alive. An entry is XACKed and XDELed only after Kafka confirmed
every message of it; an entry read by an instance that then died is claimed by another after
`claim_idle_ms` and sent again: the only way a duplicate (same `id`) reaches `rating-changes`.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

import msgspec
import redis
from confluent_kafka import KafkaError, Message, Producer

from consumer._metrics import Metrics
from runtime.kafka_produce import produce_waiting

GROUP: Final = "relay"
_ENTRY: Final = msgspec.msgpack.Decoder(list[tuple[str, bytes]])
_ACK_CHUNK: Final = 1000
log = logging.getLogger("adr.consumer.relay")


class _Entry:
    """Delivery bookkeeping of one outbox entry."""

    __slots__ = ("entry_id", "failed", "pending")

    def __init__(self, entry_id: bytes, pending: int) -> None:
        self.entry_id = entry_id
        self.pending = pending
        self.failed = False


class Relay:
    def __init__(
        self,
        client: redis.Redis,
        producer: Producer,
        stream: str,
        topic: str,
        consumer_name: str,
        batch: int,
        claim_idle_ms: int,
        metrics: Metrics,
    ) -> None:
        self._r = client
        self._producer = producer
        self._stream = stream
        self._quarantine_stream = stream + ":quarantine"
        self._topic = topic
        self._name = consumer_name
        self._batch = batch
        self._claim_idle_ms = claim_idle_ms
        self._metrics = metrics
        self._done: list[bytes] = []
        self._in_flight = 0
        self._next_claim = 0.0
        self._group_ready = False

    def use_producer(self, producer: Producer) -> None:
        """Switch to a new producer; what the old one did not confirm is claimed again later."""
        self._producer = producer
        self._in_flight = 0

    def pump(self) -> int:
        """Acknowledge what Kafka confirmed and read what the outbox holds, in one round trip,
        then send it; returns the entries sent."""
        self._producer.poll(0)
        if not self._group_ready:
            try:
                self._r.xgroup_create(self._stream, GROUP, id="0", mkstream=True)
            except redis.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
            self._group_ready = True
        acked, self._done = self._done, []
        pipe = self._r.pipeline(transaction=False)
        self._queue_acknowledge(pipe, acked)
        now = time.monotonic()
        claiming = now >= self._next_claim
        if claiming:
            self._next_claim = now + self._claim_idle_ms / 2000
            pipe.xautoclaim(
                self._stream, GROUP, self._name, self._claim_idle_ms, "0-0", count=self._batch
            )
        pipe.xreadgroup(GROUP, self._name, {self._stream: ">"}, count=self._batch)
        try:
            replies: list[Any] = pipe.execute(raise_on_error=False)
        except redis.RedisError:
            self._done = acked + self._done  # acknowledged on the next try
            raise
        failed = [r for r in replies if isinstance(r, Exception)]
        if any("NOGROUP" in str(r) for r in failed):
            self._group_ready = False  # Redis lost the group (restarted empty): recreate
            return 0
        if failed:
            self._done = acked + self._done
            raise failed[0]
        entries: list[tuple[bytes, dict[bytes, bytes]]] = []
        if claiming:
            entries.extend(e for e in replies[-2][1] if e[1])
        for _stream, items in replies[-1] or []:
            entries.extend(items)
        for entry_id, fields in entries:
            try:
                messages = _ENTRY.decode(fields[b"m"])
            except (KeyError, msgspec.DecodeError, RecursionError) as exc:
                self._quarantine(entry_id, fields, f"{type(exc).__name__}: {exc}")
                continue
            self._send(entry_id, messages)
        self._producer.poll(0)
        return len(entries)

    def _quarantine(self, entry_id: bytes, fields: dict[bytes, bytes], error: str) -> None:
        """Move an entry that does not decode to the quarantine stream, in one transaction: kept
        for the operator, gone from the outbox, so no relay trips over it again."""
        kept: dict[Any, Any] = {**fields, b"entry": entry_id, b"error": error}
        pipe = self._r.pipeline(transaction=True)
        pipe.xadd(self._quarantine_stream, kept)
        pipe.xack(self._stream, GROUP, entry_id)
        pipe.xdel(self._stream, entry_id)
        pipe.execute()
        self._metrics.corrupt_state.labels("outbox").inc()
        log.error(
            "corrupt outbox entry moved to quarantine",
            extra={"entry": entry_id.decode(), "to": self._quarantine_stream, "error": error},
        )

    def _send(self, entry_id: bytes, messages: list[tuple[str, bytes]]) -> None:
        entry = _Entry(entry_id, len(messages))

        def delivered(err: KafkaError | None, _msg: Message) -> None:
            self._in_flight -= 1
            entry.pending -= 1
            if err is not None:
                entry.failed = True  # stays pending in the group: claimed and re-sent later
                self._metrics.swallowed.labels("relay_delivery").inc()
                log.warning("rating change not delivered", extra={"error": str(err)})
            if entry.pending == 0 and not entry.failed:
                self._done.append(entry.entry_id)

        for player, value in messages:
            produce_waiting(self._producer, self._topic, value, player, on_delivery=delivered)
            self._in_flight += 1

    def _queue_acknowledge(self, pipe: Any, ids: list[bytes]) -> None:
        for i in range(0, len(ids), _ACK_CHUNK):
            chunk = ids[i : i + _ACK_CHUNK]
            pipe.xack(self._stream, GROUP, *chunk)
            pipe.xdel(self._stream, *chunk)

    def _acknowledge(self) -> None:
        if not self._done:
            return
        ids, self._done = self._done, []
        pipe = self._r.pipeline(transaction=False)
        self._queue_acknowledge(pipe, ids)
        try:
            pipe.execute()
        except redis.RedisError:
            self._done = ids + self._done  # acknowledged on the next try
            raise

    def drain(self, timeout_s: float) -> None:
        """Wait for Kafka to confirm everything sent, then acknowledge it."""
        deadline = time.monotonic() + timeout_s
        while self._in_flight > 0 and time.monotonic() < deadline:
            self._producer.poll(0.1)
        self._acknowledge()

    def backlog(self) -> int:
        """Outbox entries (batches) not yet acknowledged."""
        return int(self._r.xlen(self._stream))
