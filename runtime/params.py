"""`--param NAME=VALUE` and `ADR_PARAMS`: engine parameter overrides, read alike everywhere."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping

from engine import ParamError
from runtime.settings import key_values

ENV_VAR = "ADR_PARAMS"


def add_param_argument(parser: argparse.ArgumentParser, *, env: bool = True) -> None:
    """The repeatable `--param NAME=VALUE` flag (names as in adr-reading.md)."""
    where = f"; env {ENV_VAR}='a=1,b=2', flags win" if env else ""
    parser.add_argument(
        "--param",
        dest="param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"override an ADR parameter by its adr-reading.md name (repeatable{where})",
    )


def param_overrides(
    flag_items: Iterable[str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """NAME -> VALUE from `ADR_PARAMS` (when environ is given), then the flags; later wins."""
    items = [p for p in (environ or {}).get(ENV_VAR, "").split(",") if p.strip()]
    items += list(flag_items)
    return key_values(items, lambda item: ParamError(f"--param expects NAME=VALUE, got {item!r}"))
