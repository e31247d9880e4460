"""The leaderboard reader's exceptions."""

from __future__ import annotations


class LeaderboardError(Exception):
    """Root of the leaderboard reader's errors."""


class PlayerNotFound(LeaderboardError):
    """No such player (no hash), or, where a rank is needed, a player not placed yet."""
