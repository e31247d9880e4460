"""Secrets: read from env or from files (Kubernetes Secret volumes), never shown in full.

Every process builds its log lines, error messages and reprs from these helpers, so a password,
token or key given in a URL or a client setting is replaced by `***` before it leaves the process.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from runtime._errors import SecretFileError

MASK: Final = "***"
FILE_SUFFIX: Final = "_FILE"

# Substrings that mark a client setting's value as secret (librdkafka: sasl.password,
# ssl.key.password, ssl.key.pem, ssl.keystore.password, sasl.oauthbearer.client.secret, ...).
_SECRET_PARTS: Final = ("password", "secret", "token", ".pem", "sasl.jaas.config", "credential")
# `scheme://user:password@host`: the password part, whatever the scheme.
_URL_PASSWORD: Final = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)[^@\s]*(?=@)")
# `key=value` / `key: value` / "key": "value" where the key names a secret.
_KEY_VALUE: Final = re.compile(
    r"""(?P<key>["']?[\w.-]*(?:password|secret|token|passwd|pwd)[\w.-]*["']?\s*[=:]\s*["']?)"""
    r"""(?P<value>[^\s"',}]+)""",
    re.IGNORECASE,
)


def is_secret_key(key: str) -> bool:
    """True when a client setting's value must not be shown (its name marks it as secret)."""
    lowered = key.lower()
    return any(part in lowered for part in _SECRET_PARTS)


def redact_url(url: str) -> str:
    """The URL with its password (if any) replaced by `***`; user, host, path and query kept."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    if parts.password is None:
        return redact_text(url)
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{user}:{MASK}@{host}"
    return redact_text(urlunsplit(parts._replace(netloc=netloc)))


def redact_text(text: str) -> str:
    """Free text with URL passwords and `password=...`-style values masked."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    return _KEY_VALUE.sub(lambda m: m.group("key") + MASK, text)


def redact_settings(settings: Mapping[str, object]) -> dict[str, object]:
    """A copy of client settings with every secret value masked (for logs and reprs)."""
    return {key: MASK if is_secret_key(key) else value for key, value in settings.items()}


def env_value(environ: Mapping[str, str], name: str) -> str | None:
    """`name` from the environment, or the content of the file named by `name_FILE`.

    A Kubernetes Secret mounted as a volume is a file; one trailing newline is dropped, as
    editors and `kubectl create secret --from-file` leave one. Both set is an error: which one
    wins would be a guess.
    """
    inline = environ.get(name)
    path = environ.get(name + FILE_SUFFIX)
    if path is None or path == "":
        return inline
    if inline is not None and inline != "":
        raise SecretFileError(f"both {name} and {name}{FILE_SUFFIX} are set; keep one")
    try:
        content = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SecretFileError(f"cannot read {name}{FILE_SUFFIX}={path}: {exc.strerror}") from exc
    return content[:-1] if content.endswith("\n") else content
