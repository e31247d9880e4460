"""What every adr process shares below the services: operator Kafka settings and secrets.

Exceptions: `RuntimeConfigError` (root, a ValueError) ← `KafkaSettingsError`, `SecretFileError`.
"""

from runtime._errors import KafkaSettingsError, RuntimeConfigError, SecretFileError
from runtime.kafka_settings import (
    KafkaSettings,
    add_kafka_arguments,
    kafka_settings_from_args,
    parse_pairs,
    read_properties,
)
from runtime.secrets import env_value, is_secret_key, redact_settings, redact_text, redact_url

__all__ = [
    "KafkaSettings",
    "KafkaSettingsError",
    "RuntimeConfigError",
    "SecretFileError",
    "add_kafka_arguments",
    "env_value",
    "is_secret_key",
    "kafka_settings_from_args",
    "parse_pairs",
    "read_properties",
    "redact_settings",
    "redact_text",
    "redact_url",
]
