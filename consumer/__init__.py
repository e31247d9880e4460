"""The I/O shell around the engine: `adr consume` (Kafka → engine → Redis → outbox → Kafka).

`adr simulate` (the load generator) lives in consumer.simulate.
"""

from consumer._errors import ConsumerError
from consumer.config import Config

__all__ = ["Config", "ConsumerError"]
