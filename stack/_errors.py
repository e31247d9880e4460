"""The stack package's root exception."""

from __future__ import annotations


class StackError(Exception):
    """A local Kafka broker or Redis server could not be provisioned, started or stopped."""
