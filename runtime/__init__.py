"""What every adr process shares below the services: operator Kafka settings, secrets, and
the connection to a rating pool's Redis (one server, TLS, Sentinel, Cluster).

Exceptions: `RuntimeConfigError` (root, a ValueError) ← `KafkaSettingsError`,
`SecretFileError`, `RedisUrlError`.
"""

from runtime._errors import KafkaSettingsError, RuntimeConfigError, SecretFileError
from runtime.kafka_settings import (
    KafkaSettings,
    add_kafka_arguments,
    kafka_settings_from_args,
    parse_pairs,
    read_properties,
)
from runtime.redis_connect import RedisUrlError, connect, pool_slot
from runtime.secrets import env_value, is_secret_key, redact_settings, redact_text, redact_url

__all__ = [
    "KafkaSettings",
    "KafkaSettingsError",
    "RedisUrlError",
    "RuntimeConfigError",
    "SecretFileError",
    "add_kafka_arguments",
    "connect",
    "env_value",
    "is_secret_key",
    "kafka_settings_from_args",
    "parse_pairs",
    "pool_slot",
    "read_properties",
    "redact_settings",
    "redact_text",
    "redact_url",
]
