"""`adr serve`'s exceptions."""

from __future__ import annotations


class ServeError(Exception):
    """Root of `adr serve`'s errors: a setting that cannot be used (exit 2)."""


class BadCursor(ServeError):
    """A page cursor that this server did not write (or a different version wrote)."""
