"""The tier job's root exception."""

from __future__ import annotations


class TierJobError(Exception):
    """Root of every error the tier job (``adr calibrate``, ``adr leaderboard``) raises."""


class StateError(TierJobError):
    """The Redis state breaks the layout of docs/design.md (a value the job cannot read)."""


class PublishError(TierJobError):
    """Published to Redis, but the `tier-boundaries` topic did not take the message."""
