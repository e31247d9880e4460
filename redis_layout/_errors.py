"""The layout's root exception and what its codecs and scripts report."""

from __future__ import annotations


class LayoutError(Exception):
    """Root of every error `redis_layout` raises."""


class CorruptValue(LayoutError):
    """A value read back from Redis that its codec cannot decode (docs/operations.md, "Hostile
    input"): `what` names the kind of value (`player`, `snapshot`), `key` the key when known,
    `detail` what is wrong. The services translate it into their own errors (the consumer's
    CorruptState, the tier job's StateError)."""

    def __init__(self, what: str, key: str, detail: str) -> None:
        super().__init__(f"corrupt {what} {key}: {detail}" if key else f"corrupt {what}: {detail}")
        self.what = what
        self.key = key
        self.detail = detail


class Conflict(LayoutError):
    """The consumer's write script found a value the batch was computed from changed before the
    write (another instance): it wrote nothing."""

    def __init__(self, what: str, key: str) -> None:
        super().__init__(f"{what} {key} changed concurrently")
        self.what = what
