"""Reads of the live leaderboard (`{ns}:lb`, player hashes, `{ns}:tier_counts`), O(log P + rows).

Ranks are 1-based positions in `{ns}:lb` by μ (in a pool of another model than ADR, `{ns}:model`:
by its display rating, which `Entry.mu` then holds), best first; equal μ are ordered as Redis orders
them (by player id, descending), so every player has one rank.

Every read works for the read-only ACL user of deploy/redis/acl-users.acl: plain read commands,
and where two keys must come from one state, a read-only script (EVALSHA_RO, EVAL_RO when Redis
does not have it cached yet): never MULTI, which that user may not run. The first read of a Board
checks `{ns}:layout` (redis_layout/layout.py) and refuses a layout this release does not know.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import redis

from engine import TIER_LABELS, ParamError, model_named
from leaderboard._errors import PlayerNotFound
from redis_layout import (
    CorruptValue,
    Keys,
    LayoutError,
    check_layout,
    pool_model_parameters,
    scripts,
)
from redis_layout.player_codec import READ_FIELDS, decode_fields
from redis_layout.pool_model import DEFAULT_MODEL


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One player on the board; `rank` and `tier` are None while the player is unplaced."""

    rank: int | None
    player: str
    mu: float
    """The rating ranks use: μ in an ADR pool, the model's display rating in another
    (`Board.model`; docs/leaderboards.md, "What a reader sees for each model")."""
    tier: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class PlayerTier:
    """A player's tier label, None while unplaced."""

    player: str
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


class _ReadOnlyScript:
    """A Lua script run with EVALSHA_RO, and EVAL_RO when Redis has not cached it (EVAL_RO
    caches it): the read-only user may run neither SCRIPT LOAD nor EVAL."""

    def __init__(self, client: redis.Redis, source: str) -> None:
        self._r = client
        self._source = source
        self._sha = hashlib.sha1(source.encode()).hexdigest()

    def __call__(self, keys: Sequence[str], args: Sequence[object]) -> Any:
        try:
            return self._r.evalsha_ro(self._sha, len(keys), *keys, *args)  # type: ignore[arg-type]
        except redis.exceptions.NoScriptError:
            return self._r.eval_ro(self._source, len(keys), *keys, *args)  # type: ignore[arg-type]


class Board:
    """The leaderboard of one namespace."""

    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self._r = client
        self._keys = Keys.of(namespace)
        self._around = _ReadOnlyScript(client, scripts.AROUND)
        self._rank = _ReadOnlyScript(client, scripts.RANK)
        self._tier_table = _ReadOnlyScript(client, scripts.TIER_TABLE)
        self._layout_checked = False
        self.model = DEFAULT_MODEL
        """The pool's rating model (`{ns}:model`), read with the layout on the first read."""
        self._model: Any = None
        """That model (built from the parameters the pool records) when it is not ADR."""

    def top(self, n: int) -> list[Entry]:
        """The n best placed players."""
        self._check_layout()
        if n < 1:
            return []
        pairs: list[tuple[bytes, float]] = self._r.zrevrange(  # type: ignore[assignment]
            self._keys.lb, 0, n - 1, withscores=True
        )
        return self._entries(1, pairs)

    def rank(self, player: str) -> Entry:
        """One player: rank, μ and tier (rank None if unplaced); PlayerNotFound if untracked.
        Rank and hash from one state (rank.lua)."""
        self._check_layout()
        rank0, mu, tier = self._rank([self._keys.lb, self._keys.player(player)], [player])
        if mu is None:
            raise PlayerNotFound(f"no player {player!r}")
        if self._model is not None:  # the display rating, from the hash through the codec
            mu = self._display(player)
        return Entry(
            None if rank0 is None else int(rank0) + 1,
            player,
            float(mu),
            _text(tier) if tier else None,
        )

    def around(self, player: str, k: int) -> list[Entry]:
        """The placed players within k ranks of `player`, best first; PlayerNotFound if unplaced
        (or unknown). Rank and range from one state (around.lua)."""
        self._check_layout()
        answer = self._around([self._keys.lb], [player, max(0, k)])
        if not answer:
            raise PlayerNotFound(f"player {player!r} is not on the leaderboard")
        rank0, flat = answer
        pairs = [(flat[i], float(flat[i + 1])) for i in range(0, len(flat), 2)]
        return self._entries(max(0, int(rank0) - max(0, k)) + 1, pairs)

    def tier(self, player: str) -> PlayerTier:
        """A player's tier label (None while unplaced); PlayerNotFound if untracked."""
        self._check_layout()
        tier = self._r.hget(self._keys.player(player), "tier")
        if tier is None:
            raise PlayerNotFound(f"no player {player!r}")
        return PlayerTier(player, _text(tier) or None)

    def friends(self, players: Sequence[str]) -> list[Entry]:
        """The placed players among `players` (a friends list), best first, ties by id
        descending as ZREVRANGE orders them; `rank` is the position among them (one ZMSCORE:
        the scores come from one state)."""
        self._check_layout()
        unique = list(dict.fromkeys(players))
        if not unique:
            return []
        scores: list[float | None] = self._r.zmscore(self._keys.lb, unique)
        placed = [(p, s) for p, s in zip(unique, scores, strict=True) if s is not None]
        placed.sort(key=lambda ps: (ps[1], ps[0].encode()), reverse=True)
        return self._entries(1, [(p.encode(), s) for p, s in placed])

    def tiers(self, tier_shares: tuple[Fraction, ...]) -> TierTable:
        """Placed players per tier (the consumer's `{ns}:tier_counts`) against the target shares,
        and the tracked count, from one state (tier_table.lua)."""
        self._check_layout()
        flat, tracked = self._tier_table([self._keys.tier_counts, self._keys.pop], [])
        counts = {_text(flat[i]): int(flat[i + 1]) for i in range(0, len(flat), 2)}
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

    def _check_layout(self) -> None:
        if not self._layout_checked:
            check_layout(self._r, self._keys)
            self.model, parameters = pool_model_parameters(self._r, self._keys)
            if self.model != DEFAULT_MODEL:
                try:
                    self._model = model_named(self.model, parameters)
                except ParamError as exc:  # a model (or parameter) this release does not know
                    raise LayoutError(f"{self._keys.model}: {exc}: upgrade the reader") from None
            self._layout_checked = True

    def _display(self, player: str) -> float:
        """A player's display rating in a pool of another model than ADR (its hash read after
        rank.lua: at most the batches applied since newer)."""
        key = self._keys.player(player)
        try:
            fields = decode_fields(self._r.hmget(key, list(READ_FIELDS)), key)
            if fields is None:
                raise PlayerNotFound(f"no player {player!r}")
            return float(self._model.display(self._model.from_fields(fields[0])))
        except ValueError as exc:
            raise CorruptValue("player", key, str(exc)) from None

    def _entries(self, first_rank: int, pairs: list[tuple[bytes, float]]) -> list[Entry]:
        """`pairs` with each member's tier: one pipelined HGET each, not a transaction. The
        ranks and μ come from the one command or script that read them; a tier read after it
        can be at most the batches applied since newer, and a tier moves only at the player's
        own event (docs/leaderboards.md, "What you can rely on")."""
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
