"""The I/O shell around the engine: `adr consume` (Kafka → engine → Redis → outbox → Kafka).

The load generator (`adr simulate`) is the `loadgen` package; the leaderboard reader is
`leaderboard`.

Exceptions: `ConsumerError` (root; bad configuration, and the internal signals of the write-ahead
such as `RedisBehind`).
"""

from consumer._errors import ConsumerError
from consumer.config import Config

__all__ = ["Config", "ConsumerError"]
