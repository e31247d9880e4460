"""What every adr process shares below the services: its settings (runtime.settings: flags,
environment, a TOML file, from one dataclass), operator Kafka settings, secrets, and the
connection to a rating pool's Redis (one server, TLS, Sentinel, Cluster).

The Redis names (`connect`, `pool_slot`, `RedisUrlError`) load on first use: every `adr` command
imports this package, and only those that talk to Redis should pay for importing redis-py.

Exceptions: `RuntimeConfigError` (root, a ValueError) ← `KafkaSettingsError`,
`SecretFileError`, `SettingsError`, `RedisUrlError`, `ProbeServerError`.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from runtime._errors import (
    KafkaSettingsError,
    ProbeServerError,
    RuntimeConfigError,
    SecretFileError,
    SettingsError,
)
from runtime._secrets import env_value, is_secret_key, redact_settings, redact_text, redact_url
from runtime.kafka_settings import (
    KafkaSettings,
    add_kafka_arguments,
    kafka_settings_from_args,
    parse_pairs,
    read_properties,
)

__all__ = [
    "KafkaSettings",
    "KafkaSettingsError",
    "ProbeServerError",
    "RedisUrlError",
    "RuntimeConfigError",
    "SecretFileError",
    "SettingsError",
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

if _TYPE_CHECKING:
    from runtime._redis_connect import RedisUrlError, connect, pool_slot

_LAZY = {"RedisUrlError", "connect", "pool_slot"}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'runtime' has no attribute {name!r}")
    from runtime import _redis_connect as redis_connect

    value = getattr(redis_connect, name)
    globals()[name] = value
    return value
