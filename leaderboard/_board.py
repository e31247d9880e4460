"""Reads of the live leaderboard (`{ns}:lb`, player hashes, `{ns}:tier_counts`), O(log P + rows).

Ranks are 1-based positions in `{ns}:lb` by μ, best first; equal μ are ordered as Redis orders
them (by player id, descending), so every player has one rank.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import redis

from engine import TIER_LABELS
from leaderboard._errors import PlayerNotFound
from redis_layout import Keys, scripts


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One player on the board; `rank` and `tier` are None while the player is unplaced."""

    rank: int | None
    player: str
    mu: float
    tier: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class TierRow:
    tier: str
    players: int
    share: float
    """Of the placed players."""
    target_share: float


@dataclasses.dataclass(frozen=True, slots=True)
class TierTable:
    rows: list[TierRow]
    placed: int
    tracked: int
    """All tracked players (P), placed or not."""


class Board:
    """The leaderboard of one namespace."""

    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self._r = client
        self._keys = Keys.of(namespace)
        self._around = client.register_script(scripts.AROUND)

    def top(self, n: int) -> list[Entry]:
        """The n best placed players."""
        if n < 1:
            return []
        pairs: list[tuple[bytes, float]] = self._r.zrevrange(  # type: ignore[assignment]
            self._keys.lb, 0, n - 1, withscores=True
        )
        return self._entries(1, pairs)

    def rank(self, player: str) -> Entry:
        """One player: rank, μ and tier (rank None if unplaced); PlayerNotFound if untracked."""
        pipe = self._r.pipeline(transaction=True)
        pipe.zrevrank(self._keys.lb, player)
        pipe.hmget(self._keys.player(player), ["mu", "tier"])
        rank0, (mu, tier) = pipe.execute()
        if mu is None:
            raise PlayerNotFound(f"no player {player!r}")
        return Entry(
            None if rank0 is None else rank0 + 1,
            player,
            float(mu),
            _text(tier) if tier else None,
        )

    def around(self, player: str, k: int) -> list[Entry]:
        """The placed players within k ranks of `player`, best first; PlayerNotFound if unplaced."""
        answer = self._around(keys=[self._keys.lb], args=[player, max(0, k)])
        if not answer:
            raise PlayerNotFound(f"player {player!r} is not on the leaderboard")
        rank0, flat = answer
        pairs = [(flat[i], float(flat[i + 1])) for i in range(0, len(flat), 2)]
        return self._entries(max(0, int(rank0) - max(0, k)) + 1, pairs)

    def tiers(self, tier_shares: tuple[Fraction, ...]) -> TierTable:
        """Placed players per tier (the consumer's `{ns}:tier_counts`) against the target shares."""
        pipe = self._r.pipeline(transaction=True)
        pipe.hgetall(self._keys.tier_counts)
        pipe.hget(self._keys.pop, "count")
        raw, tracked = pipe.execute()
        counts = {_text(k): int(v) for k, v in raw.items()}
        placed = sum(counts.get(label, 0) for label in TIER_LABELS)
        rows = [
            TierRow(
                label,
                counts.get(label, 0),
                counts.get(label, 0) / placed if placed else 0.0,
                float(share),
            )
            for label, share in zip(TIER_LABELS, tier_shares, strict=True)
        ]
        return TierTable(rows, placed, int(tracked or 0))

    def _entries(self, first_rank: int, pairs: list[tuple[bytes, float]]) -> list[Entry]:
        pipe = self._r.pipeline(transaction=False)
        for member, _ in pairs:
            pipe.hget(self._keys.player(_text(member)), "tier")
        tiers = pipe.execute()
        return [
            Entry(first_rank + i, _text(member), float(mu), _text(tier) if tier else None)
            for i, ((member, mu), tier) in enumerate(zip(pairs, tiers, strict=True))
        ]


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
