"""`adr rebuild`'s read of the kill-events log: every partition from the log start to the end it
had when the rebuild began, decoded with the consumer's checks (schemas.decode_kill_event and
check_key: the same dead-letter reasons), handed out in the rebuild's one order.

The order: each partition in offset order (the consumer's), the partitions merged by event time:
next comes the head with the smallest ts, ties to the lower partition. With one partition this is
the consumer's order exactly; with several, the consumer's interleaving depends on fetch timing
(not deterministic), so the rebuild fixes one deterministic interleaving (docs/operations.md)."""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from runtime import KafkaSettings
from schemas import KillEvent, Limits, Reason, SchemaError, check_key, decode_kill_event

READ_BATCH: Final = 10_000
"""Messages per consume() call: large, so the per-call cost vanishes per event."""
PAUSE_AT: Final = 200_000
"""A partition this far ahead of the merge (events buffered) is paused until the others catch up:
bounds the memory of merging partitions whose event times run apart."""
_POLL_S: Final = 1.0


@dataclass(slots=True)
class LogRead:
    """What the read saw, beside the events it handed out."""

    starts: dict[int, int] = field(default_factory=dict)
    """partition -> the first offset the log held at the start."""
    ends: dict[int, int] = field(default_factory=dict)
    """partition -> the end offset (high watermark) at the start: the rebuild stops there."""
    rejected: dict[str, int] = field(default_factory=dict)
    """dead-letter reason -> messages the decoder rejected (the consumer's reasons)."""
    rejected_samples: list[tuple[int, int, str]] = field(default_factory=list)
    """(partition, offset, reason) of the first rejected messages, for the log."""
    messages: int = 0


def settings(
    bootstrap: str, group: str, extra: dict[str, str], kafka: KafkaSettings | None = None
) -> dict[str, object]:
    """The reader's librdkafka settings: ours (fetch sizes), the operator's `kafka` settings
    (--kafka-config-file, --kafka-config, ADR_KAFKA_CONFIG_FILE, ADR_KAFKA_CONFIG: security,
    tuning) under the consumer's guarded ones (read_committed, no auto commit or reset: a
    conflicting value is KafkaSettingsError, as the consumer refuses it), then the --kafka-setting
    items (the rebuild's own flag, applied last as before)."""
    ours: dict[str, object] = {
        "enable.partition.eof": False,
        "fetch.max.bytes": 64 * 1024 * 1024,
        "max.partition.fetch.bytes": 16 * 1024 * 1024,
        "queued.max.messages.kbytes": 256 * 1024,
    }
    guarded: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "error",
        "isolation.level": "read_committed",
    }
    return {**(kafka or KafkaSettings()).apply(ours, guarded), **extra}


def partitions_of(consumer: Consumer, topic: str, timeout: float) -> list[int]:
    meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    if meta is None or meta.error is not None or not meta.partitions:
        raise KafkaException(f"topic {topic!r} not found: {meta.error if meta else 'no metadata'}")
    return sorted(meta.partitions)


def read_log(
    consumer: Consumer,
    topic: str,
    limits: Limits,
    out: LogRead,
    tick: Callable[[int], None],
    timeout: float = 30.0,
    pause_at: int = PAUSE_AT,
) -> Iterator[tuple[int, int, KillEvent]]:
    """(partition, offset, event) of every decodable kill event up to the ends, in the merged
    order; rejected messages are counted in `out` by reason. `tick(n)` after each read batch; a
    partition with `pause_at` events buffered is paused until the merge has taken half."""
    parts = partitions_of(consumer, topic, timeout)
    for p in parts:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
        out.starts[p], out.ends[p] = low, high
    todo = {p for p in parts if out.ends[p] > out.starts[p]}
    if not todo:
        return
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(todo)])
    buffers: dict[int, deque[tuple[int, int, KillEvent]]] = {p: deque() for p in todo}
    open_parts = set(todo)  # not yet read to their end
    paused: set[int] = set()
    heap: list[tuple[int, int]] = []  # (ts of the partition's head, partition), one per buffer
    now_ms = time.time_ns() // 1_000_000
    while open_parts or heap:
        # Merge: a head is final once every partition still being read has one buffered. Only
        # the partition just taken from can run dry, so that is checked once per event.
        if all(buffers[p] for p in open_parts):
            while heap:
                _ts, p = heapq.heappop(heap)
                buf = buffers[p]
                yield buf.popleft()
                if paused and p in paused and len(buf) <= pause_at // 2:
                    consumer.resume([TopicPartition(topic, p)])
                    paused.discard(p)
                if buf:
                    heapq.heappush(heap, (buf[0][2].ts, p))
                elif p in open_parts:
                    break
        if not open_parts:
            break
        messages = consumer.consume(READ_BATCH, _POLL_S)
        fresh: list[Any] = []
        for m in messages:
            err = m.error()
            if err is not None:
                raise KafkaException(err)
            offset, partition = m.offset(), m.partition()
            if offset is not None and partition is not None and offset < out.ends[partition]:
                fresh.append(m)
        out.messages += len(fresh)
        for m in fresh:
            partition = m.partition()
            try:  # the consumer's checks and reasons (consumer/_intake.py)
                event = decode_kill_event(m.value() or b"", now_ms, limits)
                check_key(event, m.key())
            except SchemaError as exc:
                _reject(out, partition, m.offset(), exc.reason.value)
                continue
            except Exception:  # a decoder bug: undecodable, as the consumer dead-letters it
                _reject(out, partition, m.offset(), Reason.UNDECODABLE.value)
                continue
            buf = buffers[partition]
            if not buf:
                heapq.heappush(heap, (event.ts, partition))
            buf.append((partition, m.offset(), event))
        for p in list(open_parts):
            if _done(consumer, topic, p, out.ends[p]):
                open_parts.discard(p)
            elif len(buffers[p]) >= pause_at and p not in paused and len(open_parts) > 1:
                consumer.pause([TopicPartition(topic, p)])
                paused.add(p)
        tick(out.messages)


def _reject(out: LogRead, partition: int, offset: int, reason: str) -> None:
    out.rejected[reason] = out.rejected.get(reason, 0) + 1
    if len(out.rejected_samples) < 100:
        out.rejected_samples.append((partition, offset, reason))


def _done(consumer: Consumer, topic: str, partition: int, end: int) -> bool:
    """Whether the partition was read to `end` (its position; transaction markers included)."""
    pos = consumer.position([TopicPartition(topic, partition)])[0].offset
    return pos >= end
