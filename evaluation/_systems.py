"""The one interface every rated system implements: predict P(a kills b), then update (§10.4)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class RatingSystem(Protocol):
    """An online pairwise rating system fed kill events (a kills b at ts, int ms) in time order."""

    name: str

    def predict(self, a: str, b: str, ts: int) -> float:
        """P(a kills b) as the system would predict it for an event at ts, before seeing it."""
        ...

    def update(self, a: str, b: str, ts: int) -> None:
        """Learn from one event: a killed b at ts."""
        ...

    def rating(self, player: str) -> float:
        """The visible rating of a player (the system's initial value for an unseen player)."""
        ...

    def tier(self, player: str) -> int | None:
        """The system's own tier index (1 best .. 15, 0 unplaced), or None if it has no tiers."""
        ...
