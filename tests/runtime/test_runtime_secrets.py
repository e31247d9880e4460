"""runtime._secrets: passwords never shown; secrets read from `*_FILE` (Secret volumes)."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import (
    SecretFileError,
    env_value,
    is_secret_key,
    redact_settings,
    redact_text,
    redact_url,
)

_PASSWORD = st.text(alphabet=string.ascii_letters + string.digits + "!$&'()*+;=-._~", min_size=4)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:hunter22@redis:6379/0", "redis://:***@redis:6379/0"),
        ("rediss://consumer:s3cret@redis.prod:6380/0?ssl_ca_certs=/ca.pem",
         "rediss://consumer:***@redis.prod:6380/0?ssl_ca_certs=/ca.pem"),
        ("redis://redis:6379/0", "redis://redis:6379/0"),
        ("redis://reader@redis:6379/0", "redis://reader@redis:6379/0"),
    ],
)  # fmt: skip
def test_redact_url_masks_only_the_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@given(user=st.from_regex(r"[a-z]{1,8}", fullmatch=True), password=_PASSWORD)
def test_no_url_password_survives_redaction(user: str, password: str) -> None:
    url = f"redis://{user}:{password}@host:6379/0"
    assert password not in redact_url(url).replace("host:6379", "")
    assert password not in redact_text(f"cannot connect to {url}: refused").replace("host:6379", "")


@pytest.mark.parametrize(
    "text",
    [
        "sasl.password=Zx9-secret",
        'settings {"sasl.password": "Zx9-secret"}',
        "ssl.key.password: Zx9-secret",
        "Error: REDIS_PASSWORD=Zx9-secret rejected",
    ],
)
def test_redact_text_masks_named_secrets(text: str) -> None:
    assert "Zx9-secret" not in redact_text(text)
    assert "***" in redact_text(text)


def test_secret_keys_are_the_librdkafka_credentials() -> None:
    # Property names from librdkafka's CONFIGURATION.md.
    for key in (
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.key.pem",
        "sasl.oauthbearer.client.secret",
    ):
        assert is_secret_key(key), key
    for key in ("sasl.username", "security.protocol", "ssl.ca.location", "sasl.mechanism"):
        assert not is_secret_key(key), key
    assert redact_settings({"sasl.username": "u", "sasl.password": "p"}) == {
        "sasl.username": "u",
        "sasl.password": "***",
    }


def test_env_value_reads_a_secret_file_and_drops_one_newline(tmp_path: Path) -> None:
    secret = tmp_path / "redis-url"
    secret.write_text("redis://:pw@redis:6379/0\n")
    env = {"REDIS_URL_FILE": str(secret)}
    assert env_value(env, "REDIS_URL") == "redis://:pw@redis:6379/0"
    assert env_value({"REDIS_URL": "redis://x"}, "REDIS_URL") == "redis://x"
    assert env_value({}, "REDIS_URL") is None


def test_env_value_refuses_both_forms_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(SecretFileError, match="both REDIS_URL and REDIS_URL_FILE"):
        env_value({"REDIS_URL": "a", "REDIS_URL_FILE": "/x"}, "REDIS_URL")
    with pytest.raises(SecretFileError, match="cannot read REDIS_URL_FILE"):
        env_value({"REDIS_URL_FILE": str(tmp_path / "missing")}, "REDIS_URL")


def test_the_json_log_formatter_masks_what_reaches_it() -> None:
    import json
    import logging

    from runtime.logs import JsonFormatter

    record = logging.makeLogRecord(
        {
            "name": "adr.test",
            "levelno": logging.ERROR,
            "levelname": "ERROR",
            "msg": "cannot connect to %s",
            "args": ("rediss://consumer:Zx9-secret@redis:6380/0",),
            "error": "sasl.password=Zx9-secret rejected",
        }
    )
    line = JsonFormatter().format(record)
    assert "Zx9-secret" not in line
    parsed = json.loads(line)
    assert parsed["msg"] == "cannot connect to rediss://consumer:***@redis:6380/0"
