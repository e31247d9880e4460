"""`adr serve`'s one config object: flags over environment over the file's `[serve]` table over
its top level over defaults; the engine parameters from the same places; errors as ServeError."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from serve import Config, ServeError
from serve._config import add_config_arguments, config_from_args


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    return parser.parse_args(list(argv))


def test_flags_over_env_over_file_over_defaults(tmp_path: Path) -> None:
    path = tmp_path / "adr.toml"
    path.write_text(
        'namespace = "pool1"\npage_size = 10\n[serve]\npage_size = 12\nties = "shared"\n'
        "port = 9000\n[consume]\nbatch_size = 5\n[params]\ntier_shares = "
        "[0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, "
        "0.0125]\n"
    )
    env = {"ADR_CONFIG_FILE": str(path), "ADR_SERVE_PORT": "9100"}
    config = config_from_args(_args("--port", "9200"), env)
    assert (config.namespace, config.page_size, config.ties, config.port) == (
        "pool1", 12, "shared", 9200
    )  # fmt: skip
    assert config_from_args(_args(), env).port == 9100
    assert config_from_args(_args(), {}).port == Config().port == 8080
    assert float(config.params.tier_shares[8]) == 0.05
    assert "pool1" in repr(config)


def test_the_redis_password_is_never_shown() -> None:
    config = config_from_args(_args(), {"REDIS_URL": "redis://adr-reader:s3cret@h:6379/0"})
    assert "s3cret" not in repr(config)


@pytest.mark.parametrize(
    "env",
    [{"ADR_SERVE_PORT": "http"}, {"ADR_SERVE_TIES": "dense"}, {"ADR_PARAMS": "nope=1"}],
)
def test_bad_values_are_a_serve_error(env: dict[str, str]) -> None:
    with pytest.raises(ServeError):
        config_from_args(_args(), env)
