"""`adr simulate`: a load generator that plays game servers, publishing seeded kill events
(valid, repeat kills inside the cooldown, and malformed messages of every documented kind) to
Kafka, keyed by arena with Java's partitioner, and/or writing them for `adr replay`.

Exceptions: none of its own; bad flags are usage errors (exit 2).
"""

from loadgen._traffic import (
    KINDS,
    MALFORMED_KINDS,
    REPLAY_FIELDS,
    SimConfig,
    SimMessage,
    World,
    build_world,
    generate,
    replay_line,
)

__all__ = [
    "KINDS",
    "MALFORMED_KINDS",
    "REPLAY_FIELDS",
    "SimConfig",
    "SimMessage",
    "World",
    "build_world",
    "generate",
    "replay_line",
]
