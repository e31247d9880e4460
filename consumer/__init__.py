"""The I/O shell around the engine: `adr consume` (Kafka → engine → Redis → outbox → Kafka).

The load generator (`adr simulate`) is the `loadgen` package; the leaderboard reader is
`leaderboard`. `content_digest` is what an event-id record holds (`adr rebuild` writes them).

Exceptions: `ConsumerError` (root; bad configuration) ← `CorruptState` (a value read back from
Redis that does not decode), `RedisBehind` (Redis lost acknowledged writes: the write-ahead
rewinds to the offsets Redis holds), `FatalClientError` (a Kafka client failed for good: the
pipeline recreates the clients), `KafkaUnrecoverable` (Kafka refuses what neither waiting nor
new clients change: `adr consume` exits 3), `StopRequested` (a stop asked for while Redis does
not answer: the step is given up). All are handled inside the consumer; none is exported.
"""

from consumer._batch import content_digest
from consumer._errors import ConsumerError
from consumer.config import Config

__all__ = ["Config", "ConsumerError", "content_digest"]
