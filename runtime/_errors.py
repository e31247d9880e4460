"""The runtime package's exceptions: one root, `RuntimeConfigError`, for bad process settings."""

from __future__ import annotations


class RuntimeConfigError(ValueError):
    """A setting shared by every process (Kafka client settings, secrets) is unusable."""


class KafkaSettingsError(RuntimeConfigError):
    """A Kafka client setting is malformed or conflicts with a guarantee the process relies on."""


class SecretFileError(RuntimeConfigError):
    """A `*_FILE` secret cannot be read, or is given both inline and as a file."""


class SettingsError(RuntimeConfigError):
    """A flag, environment variable or config-file value does not fit its setting."""


class ProbeServerError(RuntimeConfigError):
    """The /metrics, /healthz and /readyz endpoint cannot listen (port in use, an address that is
    not this host's, no permission for a low port)."""
