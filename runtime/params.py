"""`--profile NAME`, `--param NAME=VALUE`, `ADR_PROFILE`, `ADR_PARAMS` and the config file's
`[params]` table: engine parameter overrides, read alike everywhere."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping

from engine import PROFILES, ParamError, profile_overrides
from runtime.settings import SharedTables, key_values

ENV_VAR = "ADR_PARAMS"
PROFILE_ENV_VAR = "ADR_PROFILE"


def add_param_argument(parser: argparse.ArgumentParser, *, env: bool = True) -> None:
    """The repeatable `--param NAME=VALUE` flag (names: docs/algorithm.md#s9) and `--profile`."""
    where = f"; env {ENV_VAR}='a=1,b=2', flags win" if env else ""
    parser.add_argument(
        "--param",
        dest="param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"override an ADR parameter by its name in docs/algorithm.md (repeatable{where})",
    )
    profile_env = f"; env {PROFILE_ENV_VAR}" if env else ""
    parser.add_argument(
        "--profile",
        dest="profile",
        default=None,
        choices=tuple(PROFILES),
        help="a named parameter set applied before any --param (engine/profiles.py; "
        f"recommended: the opt-in extensions docs/evaluation.md measures{profile_env}; "
        "default paper)",
    )


def param_overrides(
    flag_items: Iterable[str],
    environ: Mapping[str, str] | None = None,
    profile: str | None = None,
    file: SharedTables | None = None,
) -> dict[str, str]:
    """NAME -> VALUE from the profile (`profile`, else `ADR_PROFILE` when environ is given, else
    the config file's `[params] profile`, else none), then the file's other `[params]` keys, then
    `ADR_PARAMS` (when environ is given), then the flags; later wins."""
    env = environ or {}
    name = profile if profile is not None else env.get(PROFILE_ENV_VAR, "").strip()
    if not name and file is not None and file.profile:
        name = file.profile
    overrides: dict[str, str] = profile_overrides(name) if name else {}
    if file is not None:
        overrides.update(file.params)
    items = [p for p in env.get(ENV_VAR, "").split(",") if p.strip()]
    items += list(flag_items)
    overrides.update(
        key_values(items, lambda item: ParamError(f"--param expects NAME=VALUE, got {item!r}"))
    )
    return overrides
