"""The pool's layout version, `{ns}:layout` (docs/leaderboards.md, "Compatibility").

The consumer stamps it when partitions are assigned to it (`stamp_layout`, SET NX: the first
instance of a pool writes it, the others find it); readers check it (`check_layout`) and refuse a
version they do not know instead of misreading keys. The version is bumped only by a change that
a reader of the keys marked "for readers" would misread (docs/leaderboards.md says which)."""

from __future__ import annotations

from typing import Any, Final

from redis_layout._errors import LayoutError
from redis_layout.keys import Keys

LAYOUT_VERSION: Final = 2
"""The layout this release writes (layout 2: the player hash's `state` field, 2026-12-04)."""
READABLE_LAYOUTS: Final = frozenset({LAYOUT_VERSION})
"""The versions this release's readers read. An absent key reads as layout 2 too: releases
before the key wrote layouts 1 and 2, whose reader keys are the same (docs/leaderboards.md)."""
REBUILDING: Final = "rebuilding"
"""`{ns}:layout` while `adr rebuild` writes the namespace (adr_cli/_rebuild_pool.py): a value no
release reads as a layout, so no reader or consumer takes the namespace as a pool until the
rebuild's last write sets the layout version."""


def rebuilding_reason(key: str) -> str:
    """Why a namespace whose `{ns}:layout` is REBUILDING is refused: said the same everywhere."""
    return (
        f"{key} is {REBUILDING!r}: `adr rebuild` is writing this namespace (or stopped before its "
        "last write; rerun it), and the namespace is a pool only once the rebuild has finished "
        "(docs/operations.md, adr rebuild)"
    )


class UnknownLayout(LayoutError):
    """`{ns}:layout` holds a version this release does not know (or not a version at all), or
    REBUILDING (the message then says so: no upgrade helps)."""

    def __init__(self, key: str, found: str) -> None:
        known = ", ".join(str(v) for v in sorted(READABLE_LAYOUTS))
        super().__init__(
            rebuilding_reason(key)
            if found == REBUILDING
            else f"{key} is layout {found!r}; this release knows layout {known}: "
            "upgrade the reader (docs/leaderboards.md, Compatibility)"
        )
        self.key = key
        self.found = found


def layout_of(key: str, value: bytes | str | None) -> int | None:
    """The version a GET of `{ns}:layout` answered (None: absent); UnknownLayout if unknown."""
    if value is None:
        return None
    text = value.decode(errors="replace") if isinstance(value, bytes) else value
    known = {str(v): v for v in READABLE_LAYOUTS}  # exactly the decimal text, as every reader
    if text not in known:
        raise UnknownLayout(key, text)
    return known[text]


def check_layout(client: Any, keys: Keys) -> int | None:
    """A reader's check: the pool's layout version (None while unstamped), or UnknownLayout."""
    return layout_of(keys.layout, client.get(keys.layout))


def stamp_layout(client: Any, keys: Keys) -> None:
    """The writer's stamp: SET NX of LAYOUT_VERSION, then the same check as a reader's, so that
    a writer of this release refuses a pool another release laid out differently."""
    client.set(keys.layout, str(LAYOUT_VERSION), nx=True)
    check_layout(client, keys)
