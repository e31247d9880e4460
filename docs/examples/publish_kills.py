"""A game server's side of adr-stream: publish kill events to `kill-events` (docs/game-servers.md).

Plain `msgpack` + `confluent-kafka`, no adr-stream import: any language with a msgpack encoder
and a Kafka client does the same. Run: python docs/examples/publish_kills.py localhost:9092
"""

from __future__ import annotations

import logging
import sys
import time
import uuid

import msgpack
from confluent_kafka import Producer

TOPIC = "kill-events"


def make_producer(bootstrap_servers: str) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap_servers,
            # No duplicates or reordering from the client's own retries.
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "compression.type": "lz4",
            # The Java client's partitioner: every publisher puts an arena on the same partition.
            "partitioner": "murmur2_random",
            # librdkafka's own lines (a broker not reachable yet, say) through Python's logging,
            # formatted as your service's other logs, not written raw to stderr.
            "logger": logging.getLogger("publish_kills.kafka"),
        }
    )


def kill_event(arena: str, attacker: str, victim: str, ts_ms: int, event_id: str) -> bytes:
    """One kill as the v1 msgpack map (schemas/kill_event.md)."""
    return msgpack.packb(
        {"v": 1, "id": event_id, "arena": arena, "attacker": attacker, "victim": victim,
         "ts": ts_ms},
        use_bin_type=True,
    )  # fmt: skip


def publish_kill(
    producer: Producer, arena: str, attacker: str, victim: str, topic: str = TOPIC
) -> str:
    """Send one kill, keyed by arena (one arena = one partition = in order); returns its id."""
    event_id = str(uuid.uuid4())  # keep it if you resend this kill
    ts_ms = time.time_ns() // 1_000_000  # the kill's time, ms since the Unix epoch
    producer.produce(
        topic,
        key=arena.encode(),
        value=kill_event(arena, attacker, victim, ts_ms, event_id),
        on_delivery=_delivered,
    )
    producer.poll(0)  # serve delivery callbacks
    return event_id


def _delivered(err: object, msg: object) -> None:
    if err is not None:
        # After librdkafka's own retries: log it and resend with the same id and ts.
        print(f"kill event not delivered: {err}", file=sys.stderr)


if __name__ == "__main__":
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    p = make_producer(sys.argv[1] if len(sys.argv) > 1 else "localhost:9092")
    publish_kill(p, "arena-42", "alice", "bob")
    publish_kill(p, "arena-42", "bob", "carol")
    p.flush(10)
