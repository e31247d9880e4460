"""The outbox relay: rating changes written by the atomic batch write -> Kafka, at least once.

Entries are read through a Redis stream consumer group, so instances sharing a namespace never
send the same entry twice while alive. An entry is XACKed and XDELed only after Kafka confirmed
it; an entry read by an instance that then died is claimed by another after `claim_idle_ms` and
sent again: the only way a duplicate (same `id`) reaches `rating-changes`.
"""

from __future__ import annotations

import logging
import time
from typing import Final

import redis
from confluent_kafka import KafkaError, Producer

from consumer._metrics import Metrics

GROUP: Final = "relay"
log = logging.getLogger("adr.consumer.relay")


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
        self._topic = topic
        self._name = consumer_name
        self._batch = batch
        self._claim_idle_ms = claim_idle_ms
        self._metrics = metrics
        self._delivered: list[bytes] = []
        self._in_flight = 0
        self._next_claim = 0.0
        self._group_ready = False

    def _ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            self._r.xgroup_create(self._stream, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    def pump(self) -> int:
        """Acknowledge what Kafka confirmed, then send what the outbox holds; returns sent."""
        self._producer.poll(0)
        self._acknowledge()
        self._ensure_group()
        entries: list[tuple[bytes, dict[bytes, bytes]]] = []
        now = time.monotonic()
        if now >= self._next_claim:
            self._next_claim = now + self._claim_idle_ms / 2000
            claimed = self._r.xautoclaim(
                self._stream, GROUP, self._name, self._claim_idle_ms, "0-0", count=self._batch
            )
            entries.extend(e for e in claimed[1] if e[1])
        try:
            reply = self._r.xreadgroup(GROUP, self._name, {self._stream: ">"}, count=self._batch)
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self._group_ready = False  # Redis lost the group (restarted empty): recreate
            return 0
        for _stream, items in reply or []:
            entries.extend(items)
        for entry_id, fields in entries:
            self._send(entry_id, fields)
        self._producer.poll(0)
        return len(entries)

    def _send(self, entry_id: bytes, fields: dict[bytes, bytes]) -> None:
        while True:
            try:
                self._producer.produce(
                    self._topic,
                    value=fields[b"m"],
                    key=fields[b"k"],
                    on_delivery=lambda err, msg, eid=entry_id: self._delivered_cb(err, eid),
                )
                self._in_flight += 1
                return
            except BufferError:
                self._producer.poll(0.1)  # local queue full: let deliveries drain

    def _delivered_cb(self, err: KafkaError | None, entry_id: bytes) -> None:
        self._in_flight -= 1
        if err is None:
            self._delivered.append(entry_id)
        else:
            self._metrics.swallowed.labels("relay_delivery").inc()
            log.warning("rating change not delivered, will resend", extra={"error": str(err)})

    def _acknowledge(self) -> None:
        if not self._delivered:
            return
        ids, self._delivered = self._delivered, []
        pipe = self._r.pipeline(transaction=False)
        for i in range(0, len(ids), 5000):
            chunk = ids[i : i + 5000]
            pipe.xack(self._stream, GROUP, *chunk)
            pipe.xdel(self._stream, *chunk)
        try:
            pipe.execute()
        except redis.RedisError:
            self._delivered = ids + self._delivered  # retried by the caller's backoff
            raise

    def drain(self, timeout_s: float) -> None:
        """Wait for Kafka to confirm everything sent, then acknowledge it."""
        deadline = time.monotonic() + timeout_s
        while self._in_flight > 0 and time.monotonic() < deadline:
            self._producer.poll(0.1)
        self._acknowledge()

    def backlog(self) -> int:
        return int(self._r.xlen(self._stream))

    @property
    def in_flight(self) -> int:
        return self._in_flight
