"""Reads of the live leaderboard (`{ns}:lb`, player hashes, `{ns}:tier_counts`), O(log P + rows).

Ranks are 1-based, best first, by one of two tie policies (`Ties`): "unique", the position in
`{ns}:lb` (equal μ ordered as Redis orders them, by player id in descending byte order, so every
player has a rank of their own: 1, 2, 3); or "shared", one plus the number of players with a
strictly higher μ (equal μ share the rank and the next rank is skipped: 1, 2, 2, 4). The order of
the rows is the same under both.
In a pool of another model than ADR (`{ns}:model`) the ranking key is the model's display
rating, which `Entry.mu` then holds.

Every read works for the read-only ACL user of deploy/redis/acl-users.acl: plain read commands,
and where two keys must come from one state, a read-only script (EVALSHA_RO, EVAL_RO when Redis
does not have it cached yet): never MULTI, which that user may not run. The first read of a Board
checks `{ns}:layout` (redis_layout/layout.py) and refuses a layout this release does not know.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Final, Literal

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
from redis_layout.history_codec import HistoryPoint, decode_history_point
from redis_layout.player_codec import READ_FIELDS, decode_fields
from redis_layout.pool_model import DEFAULT_MODEL

Ties = Literal["unique", "shared"]
TIES: Final[tuple[Ties, ...]] = ("unique", "shared")


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


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    """One page of the board: its rows, and the cursor of the next page (the last row's μ and id;
    None when the page came out short: nothing follows it now)."""

    entries: list[Entry]
    next_after: tuple[float, str] | None


@dataclasses.dataclass(frozen=True, slots=True)
class Profile:
    """One player's standing and stored state, with the recent rating history (oldest first)."""

    player: str
    rank: int | None
    mu: float
    sigma: float | None
    tier: str | None
    events: int
    """Counted kills and deaths (`n`)."""
    last_ts: int | None
    """Time of the last counted event, ms since the epoch."""
    version: int
    """Rating changes applied so far (`ver`, the seq of the latest)."""
    history: list[HistoryPoint]


@dataclasses.dataclass(frozen=True, slots=True)
class Boundaries:
    """The published calibration: tier k holds boundaries[k-1] <= μ < boundaries[k-2]."""

    version: int
    computed_at: int
    boundaries: list[float] | None
    """The 14 boundaries, best tier's first; None before the first calibration."""


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

    def __init__(
        self,
        client: redis.Redis,
        namespace: str,
        ties: Ties = "unique",
        season: str | None = None,
    ) -> None:
        """`season`: read a closed season's archived final board instead of the live one
        (`adr season close`; its players' archived fields stand in for their hashes)."""
        if ties not in TIES:
            raise ValueError(f"unknown tie policy {ties!r} (one of {', '.join(TIES)})")
        self._r = client
        live = Keys.of(namespace)
        self._keys = live if season is None else live.archive(season)
        self._archived = season is not None
        self._ties = ties
        self._around = _ReadOnlyScript(client, scripts.AROUND)
        self._page = _ReadOnlyScript(client, scripts.PAGE)
        self._profile = _ReadOnlyScript(client, scripts.PROFILE)
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
        return self._entries(1, pairs, 0)

    def page(self, after: tuple[float, str] | None, n: int) -> Page:
        """The n rows that follow `after` (a μ and player id: the last row of the previous page)
        in the board's order, or the first n without it, from one state (page.lua). `after` is a
        position, not a row: the page continues strictly after it even if that player has moved
        since, so a row that did not move between two reads is neither repeated nor skipped."""
        self._check_layout()
        args: list[object] = [max(0, n)]
        if after is not None:
            args += [repr(float(after[0])), after[1]]
        start0, flat, above, tiers = self._page([self._keys.lb], [*args, self._keys.player_prefix])
        entries = self._scripted_entries(int(start0) + 1, flat, int(above), tiers)
        last = entries[-1] if entries and len(entries) == n else None
        return Page(entries, None if last is None else (last.mu, last.player))

    def profile(self, player: str, history: int) -> Profile:
        """A player's rank, stored state and last `history` rating changes from one state
        (profile.lua); PlayerNotFound if untracked."""
        self._check_layout()
        rank0, above, fields, points = self._profile(
            [self._keys.lb, self._keys.player(player), self._keys.history(player)],
            [player, max(0, history)],
        )
        mu, sigma, tier, n, last_ts, ver = fields
        if mu is None:
            raise PlayerNotFound(f"no player {player!r}")
        return Profile(
            player,
            self._rank_of(rank0, above),
            float(mu),
            float(sigma) if sigma else None,
            _text(tier) or None if tier else None,
            int(n or 0),
            int(last_ts) if last_ts else None,
            int(ver or 0),
            [decode_history_point(p) for p in points],
        )

    def boundaries(self) -> Boundaries:
        """The published tier boundaries (`{ns}:snapshot`, one HMGET)."""
        self._check_layout()
        version, computed_at, raw = self._r.hmget(
            self._keys.snapshot, "version", "computed_at", "boundaries"
        )
        try:
            values = json.loads(raw) if raw else None
        except ValueError:
            values = "not JSON"
        if values is not None and (
            not isinstance(values, list)
            or not all(type(v) is float or type(v) is int for v in values)
        ):
            raise CorruptValue("snapshot", self._keys.snapshot, "boundaries: not a list of numbers")
        return Boundaries(
            int(version or 0),
            int(computed_at or 0),
            None if values is None else [float(v) for v in values],
        )

    def rank(self, player: str) -> Entry:
        """One player: rank, μ and tier (rank None if unplaced); PlayerNotFound if untracked.
        Rank and hash from one state (rank.lua)."""
        self._check_layout()
        rank0, mu, tier, above = self._rank([self._keys.lb, self._keys.player(player)], [player])
        if mu is None:
            raise PlayerNotFound(f"no player {player!r}")
        if self._model is not None and self._archived:  # the display rating at the close
            mu = self._r.zscore(self._keys.lb, player)  # (the archive keeps the reader fields)
            if mu is None:
                raise PlayerNotFound(f"no player {player!r}")
        elif self._model is not None:  # the display rating, from the hash through the codec
            mu = self._display(player)
        return Entry(
            self._rank_of(rank0, above),
            player,
            float(mu),
            _text(tier) if tier else None,
        )

    def around(self, player: str, k: int) -> list[Entry]:
        """The placed players within k ranks of `player`, best first; PlayerNotFound if unplaced
        (or unknown). Rank and range from one state (around.lua)."""
        self._check_layout()
        answer = self._around([self._keys.lb], [player, max(0, k), self._keys.player_prefix])
        if not answer:
            raise PlayerNotFound(f"player {player!r} is not on the leaderboard")
        rank0, flat, above, tiers = answer
        return self._scripted_entries(max(0, int(rank0) - max(0, k)) + 1, flat, int(above), tiers)

    def tier(self, player: str) -> PlayerTier:
        """A player's tier label (None while unplaced); PlayerNotFound if untracked."""
        self._check_layout()
        tier = self._r.hget(self._keys.player(player), "tier")
        if tier is None:
            raise PlayerNotFound(f"no player {player!r}")
        return PlayerTier(player, _text(tier) or None)

    def friends(self, players: Sequence[str]) -> list[Entry]:
        """The placed players among `players` (a friends list), best first, ties by id
        descending as ZREVRANGE orders them; `rank` is the rank among them by the tie policy
        (one ZMSCORE: the scores come from one state)."""
        self._check_layout()
        unique = list(dict.fromkeys(players))
        if not unique:
            return []
        scores: list[float | None] = self._r.zmscore(self._keys.lb, unique)
        placed = [(p, s) for p, s in zip(unique, scores, strict=True) if s is not None]
        placed.sort(key=lambda ps: (ps[1], ps[0].encode()), reverse=True)
        return self._entries(1, [(p.encode(), s) for p, s in placed], 0)

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
                    self._model = model_named(self.model, parameters, typed=True)
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

    def _rank_of(self, rank0: int | None, above: int | None) -> int | None:
        if rank0 is None:
            return None
        return int(rank0) + 1 if self._ties == "unique" else int(above or 0) + 1

    def _ranks(self, first_rank: int, mus: list[float], above: int) -> list[int]:
        """The rows' ranks by the tie policy: `first_rank` is the first row's position and `above`
        the number of players strictly above its μ. Under "shared" a row ties the row before it
        or, with a lower μ, has every row above it strictly higher: its rank is its position."""
        if self._ties == "unique":
            return [first_rank + i for i in range(len(mus))]
        ranks: list[int] = []
        for i, mu in enumerate(mus):
            if i == 0:
                ranks.append(above + 1)
            else:
                ranks.append(ranks[-1] if mu == mus[i - 1] else first_rank + i)
        return ranks

    def _scripted_entries(
        self, first_rank: int, flat: list[bytes], above: int, tiers: list[bytes | None]
    ) -> list[Entry]:
        """The rows a script read with their tiers, all from its one state."""
        mus = [float(flat[i + 1]) for i in range(0, len(flat), 2)]
        ranks = self._ranks(first_rank, mus, above)
        return [
            Entry(rank, _text(flat[2 * i]), mu, _text(tier) if tier else None)
            for i, (rank, mu, tier) in enumerate(zip(ranks, mus, tiers, strict=True))
        ]

    def _entries(
        self, first_rank: int, pairs: list[tuple[bytes, float]], above: int
    ) -> list[Entry]:
        """`pairs` with each member's tier: one pipelined HGET each, not a transaction. The
        ranks and μ come from the one command or script that read them; a tier read after it
        can be at most the batches applied since newer, and a tier moves only at the player's
        own event (docs/leaderboards.md, "What you can rely on")."""
        pipe = self._r.pipeline(transaction=False)
        for member, _ in pairs:
            pipe.hget(self._keys.player(_text(member)), "tier")
        tiers = pipe.execute()
        ranks = self._ranks(first_rank, [float(mu) for _, mu in pairs], above)
        return [
            Entry(rank, _text(member), float(mu), _text(tier) if tier else None)
            for rank, (member, mu), tier in zip(ranks, pairs, tiers, strict=True)
        ]


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
