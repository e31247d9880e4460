"""`adr leaderboard` and the `Board` reader: top N, a player's rank, the players around one,
a player's tier, a friends board, the tier table, read from the Redis keys the consumer and the
tier job write (docs/leaderboards.md).

Exceptions: `LeaderboardError` (root) ← `PlayerNotFound` (no such player, or not placed).
"""

from leaderboard._board import (
    TIES,
    Board,
    Boundaries,
    Entry,
    Page,
    PlayerTier,
    Profile,
    TierTable,
    Ties,
)
from leaderboard._errors import LeaderboardError, PlayerNotFound

__all__ = [
    "TIES",
    "Board",
    "Boundaries",
    "Entry",
    "LeaderboardError",
    "Page",
    "PlayerNotFound",
    "PlayerTier",
    "Profile",
    "TierTable",
    "Ties",
]
