"""Kafka client settings given by the operator: a client.properties file and KEY=VALUE pairs.

Every process that talks to Kafka takes `--kafka-config-file PATH` (env ADR_KAFKA_CONFIG_FILE)
and repeatable `--kafka-config KEY=VALUE` (env ADR_KAFKA_CONFIG, comma-separated), passed to
librdkafka as given: security.protocol, sasl.*, ssl.* and any tuning. Settings a process's
guarantees rest on (idempotence, acks, commit mode, isolation level, ...) are *guarded*: the
operator may repeat them with the same value, and a different value is refused at start, since
silently changing them would lose or duplicate events.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from runtime._errors import KafkaSettingsError
from runtime._secrets import redact_settings
from runtime.settings import add_settings_arguments, key_values, setting, settings_from_args

DEFAULT_BOOTSTRAP: Final = "127.0.0.1:9092"
ENV_FILE: Final = "ADR_KAFKA_CONFIG_FILE"
ENV_PAIRS: Final = "ADR_KAFKA_CONFIG"
_SAME: Final = {"all": "-1", "true": "true", "false": "false"}
_CALLBACKS: Final = frozenset({"error_cb", "logger", "on_delivery", "stats_cb", "oauth_cb"})


def read_properties(path: Path) -> dict[str, str]:
    """`key=value` lines of a client.properties file; `#`/`!` comments and blank lines skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KafkaSettingsError(f"cannot read Kafka config file {path}: {exc.strerror}") from exc
    settings: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise KafkaSettingsError(f"{path}:{number}: expected key=value")
        settings[key.strip()] = value.strip()
    return settings


def parse_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """`KEY=VALUE` strings (flags or the env list) as a dict; the last of a key wins."""
    return key_values(
        pairs, lambda p: KafkaSettingsError(f"bad Kafka setting {p!r}: expected KEY=VALUE")
    )


def _canonical(value: object) -> str:
    text = str(value).strip().lower()
    return _SAME.get(text, text)


@dataclasses.dataclass(frozen=True, slots=True)
class KafkaSettings:
    """The operator's librdkafka settings, in order: file first, then pairs (pairs win)."""

    settings: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        return f"KafkaSettings({redact_settings(self.settings)!r})"

    def apply(
        self, ours: Mapping[str, object], guarded: Mapping[str, object] | None = None
    ) -> dict[str, Any]:
        """`ours` (defaults the operator may change) + `guarded` + the operator's settings.

        An operator setting of a guarded key with another value raises KafkaSettingsError
        naming the key and both values; callbacks cannot be set from text.
        """
        guarded = dict(guarded or {})
        merged: dict[str, Any] = {**ours, **guarded}
        for key, value in self.settings.items():
            if key in _CALLBACKS:
                raise KafkaSettingsError(f"Kafka setting {key!r} cannot be given as text")
            if key in guarded and _canonical(value) != _canonical(guarded[key]):
                raise KafkaSettingsError(
                    f"Kafka setting {key}={value!r} conflicts with {key}={guarded[key]!r}, "
                    "which this process relies on; remove it from the Kafka config"
                )
            if key not in guarded:
                merged[key] = value
        return merged


@dataclasses.dataclass(frozen=True, slots=True)
class Broker:
    """The Kafka cluster a short command (`adr topics`, `adr check --topic`) talks to."""

    bootstrap_servers: str = setting(
        DEFAULT_BOOTSTRAP, env="KAFKA_BOOTSTRAP_SERVERS", help="Kafka bootstrap servers"
    )

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """`--bootstrap-servers` (no config file: see runtime.settings)."""
        add_settings_arguments(parser, cls, config_file=False)

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, environ: Mapping[str, str] | None = None
    ) -> Broker:
        """The flag, else KAFKA_BOOTSTRAP_SERVERS (or its _FILE), else the default."""
        return cls(**settings_from_args(cls, args, environ))


def add_kafka_arguments(parser: argparse.ArgumentParser) -> None:
    """`--kafka-config-file PATH` and repeatable `--kafka-config KEY=VALUE`."""
    parser.add_argument(
        "--kafka-config-file",
        metavar="PATH",
        default=None,
        help=f"librdkafka settings in client.properties form, e.g. security.protocol, sasl.*, "
        f"ssl.* (env {ENV_FILE})",
    )
    parser.add_argument(
        "--kafka-config",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help=f"one librdkafka setting, repeatable; wins over the file (env {ENV_PAIRS}, "
        "comma-separated)",
    )


def kafka_settings_from_args(
    args: argparse.Namespace,
    environ: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> KafkaSettings:
    """`base` (the TOML config file's `[kafka]` table), then the properties file (flag, else
    env), then env pairs, then flag pairs; later sources win."""
    env = os.environ if environ is None else environ
    settings: dict[str, str] = dict(base or {})
    path = getattr(args, "kafka_config_file", None) or env.get(ENV_FILE)
    if path:
        settings.update(read_properties(Path(path)))
    listed = env.get(ENV_PAIRS)  # not env_value: ADR_KAFKA_CONFIG_FILE is the properties file
    if listed:
        settings.update(parse_pairs(p for p in listed.split(",") if p.strip()))
    settings.update(parse_pairs(getattr(args, "kafka_config", None) or []))
    return KafkaSettings(settings)
