"""A rating pool in memory behind the `PoolStore` port, for tests that need no redis-server.

`MemoryStore` keeps what the write script keeps for one pool and topic (player states and vers, S
and P, cooldowns, event ids, offsets, watermarks, the outbox, the epoch, the leaderboard, the
season schedule's version and ladder) and applies a Plan as redis_layout/scripts/apply.lua does
(for a pool of a model other than ADR, the same script behind the scored header: each player's
score in its players section): every check first (the epoch, the season schedule's version and
ladder, each batch partition's stored offset, each changed player's ver as the players section
carries it, no event id recorded meanwhile), then all of the write or none of it.
tests/consumer/test_pool_store_contract.py runs one suite against it and against the Lua `Store`
on a real redis-server, for every rating model (engine.MODELS), so the two cannot drift apart
unnoticed.

Any model's states are kept as the rating loop left them (a PlayerState for ADR, the model's own
Struct otherwise): the Lua store keeps their hash values and decodes them again, which the
contract suite checks gives the same states.

What it leaves out, on purpose: the script's expiry of cooldown and event-id records by event
time (a record is kept for good: a test never runs long enough for the difference to show), the
type checks of keys in the way (nothing else writes here), and the snapshot, which a test sets
(`snapshot`) instead of a tier job publishing it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from consumer._batch import Plan, View
from consumer._ports import PendingWrite
from engine import NO_SEASONS, AdrModel, RatingModel, SeasonSchedule, Snapshot
from redis_layout import Conflict
from redis_layout.apply_contract import PLAYER_ITEMS, SCORED_PLAYER_ITEMS


@dataclasses.dataclass
class Pool:
    """What the pool holds (what Redis holds for one pool and topic)."""

    players: dict[str, tuple[Any, int]] = dataclasses.field(default_factory=dict)
    """player -> (state, ver): the pool's model's states."""
    cooldowns: dict[str, int] = dataclasses.field(default_factory=dict)
    event_ids: dict[str, bytes] = dataclasses.field(default_factory=dict)
    player_count: int = 0
    sigma_units_total: int = 0
    offsets: dict[int, int] = dataclasses.field(default_factory=dict)
    watermarks: dict[int, int] = dataclasses.field(default_factory=dict)
    outbox: list[list[tuple[str, bytes]]] = dataclasses.field(default_factory=list)
    """One entry per write that had rating changes: its (player, rating change) pairs."""
    epoch: int = 0
    leaderboard: dict[str, str] = dataclasses.field(default_factory=dict)
    """player -> its leaderboard score as the players section sends it: ADR's `mu` once placed in
    a tier, another model's `score` item (its display rating once placed). As the script, a write
    ranks a player that has one and leaves the rank of one that has none."""
    seasons: SeasonSchedule = NO_SEASONS
    """The season schedule (a test closes a season by setting it and `season_version`)."""
    season_version: int = 0
    ladder: int = 0


class MemoryStore:
    """A `PoolStore` (consumer/_ports.py) over a `Pool` in memory, for a pool of `model`
    (None: ADR)."""

    def __init__(self, snapshot: Snapshot, model: RatingModel[Any] | None = None) -> None:
        self.held = Pool()
        self.snapshot = snapshot
        """The snapshot every view carries (a test publishes one by setting it)."""
        scored = model is not None and not isinstance(model, AdrModel)
        items = SCORED_PLAYER_ITEMS if scored else PLAYER_ITEMS
        self._width = len(items)
        self._id = items.index("id")
        self._checked = items.index("checked_ver")
        self._new = items.index("new_ver")
        self._score = items.index("score") if scored else None
        self._mu = items.index("mu")
        self._tier = items.index("tier")

    def saved(self) -> Pool:
        """A copy of what the pool holds now (`restore` goes back to it)."""
        return copy.deepcopy(self.held)

    def restore(self, earlier: Pool) -> None:
        """The pool goes back to `earlier`, as Redis restarted from an older snapshot does."""
        self.held = copy.deepcopy(earlier)

    def read_offsets(self, partitions: list[int]) -> dict[int, int | None]:
        return {p: self.held.offsets.get(p) for p in partitions}

    def raise_epoch(self, least: int) -> int:
        """As scripts/raise_epoch.lua: max(stored + 1, least)."""
        self.held.epoch = max(self.held.epoch + 1, least)
        return self.held.epoch

    def read_view(
        self,
        players: list[str],
        pairs: list[str],
        partitions: list[int],
        cached: Mapping[str, tuple[Any, int]] | None = None,
        ids: Sequence[str] = (),
    ) -> View:
        h = self.held
        stored: dict[str, tuple[Any, int]] = {}
        for p in players:
            hit = cached.get(p) if cached else None
            stored[p] = hit if hit is not None else h.players.get(p, (None, 0))
        return View(
            players=stored,
            cooldowns={k: h.cooldowns.get(k) for k in pairs},
            sigma_units_total=h.sigma_units_total,
            player_count=h.player_count,
            offsets={p: h.offsets.get(p) for p in partitions},
            snapshot=self.snapshot,
            watermarks={p: h.watermarks.get(p) for p in partitions},
            event_ids={k: h.event_ids.get(k) for k in ids},
            epoch=h.epoch,
            seasons=h.seasons,
            season_version=h.season_version,
            ladder=h.ladder,
        )

    def read_view_then_write(
        self,
        players: list[str],
        pairs: list[str],
        partitions: list[int],
        cached: Mapping[str, tuple[Any, int]] | None,
        plan: Plan,
        ids: Sequence[str] = (),
    ) -> tuple[View, PendingWrite]:
        """The read, then `plan`'s write, which runs when its result is asked for (as Redis runs
        it while the caller computes)."""
        return self.read_view(players, pairs, partitions, cached, ids), MemoryWrite(self, plan)

    def write(self, plan: Plan) -> None:
        MemoryWrite(self, plan).result()

    def apply(self, plan: Plan) -> None:
        """What redis_layout/scripts/apply.lua does: check, then write everything or nothing."""
        h = self.held
        items = plan.players
        width, at_id, at_new = self._width, self._id, self._new
        for i in range(0, len(items), width):
            player = str(items[i + at_id])
            if str(h.players.get(player, (None, 0))[1]) != items[i + self._checked]:
                raise Conflict("player", player)
        for partition, stored in plan.offset_checks:
            if h.offsets.get(partition) != stored:
                raise Conflict("offset", str(partition))
        if plan.epoch != h.epoch:
            raise Conflict("epoch", "epoch")
        if plan.season[:2] != (h.season_version, h.ladder):
            raise Conflict("season", "season_schedule")
        for key, _digest, _ts in plan.event_ids:
            if key in h.event_ids:
                raise Conflict("event_id", key)
        if plan.season[2] > plan.season[1]:  # a new season's first event: its board starts empty
            h.leaderboard.clear()
        unranked = set(plan.unranked)  # placed, but their newest event is before the season
        for i in range(0, len(items), width):
            player = str(items[i + at_id])
            state, ver = plan.states[player]
            assert str(ver) == items[i + at_new], "a plan's states and players disagree"
            h.players[player] = (state, ver)
            if self._score is not None:  # another model: its score item, "" = not ranked
                score = str(items[i + self._score])
            else:  # ADR: ranked by μ once placed in a tier
                score = str(items[i + self._mu]) if items[i + self._tier] != "" else ""
            if score and player not in unranked:
                h.leaderboard[player] = score
        h.player_count += plan.count_delta
        h.sigma_units_total += (plan.sigma_hi_delta << 32) + plan.sigma_lo_delta
        h.cooldowns.update(plan.cooldowns)
        h.event_ids.update((key, digest) for key, digest, _ts in plan.event_ids)
        for partition, offset in plan.offsets:
            h.offsets[partition] = max(offset, h.offsets.get(partition, 0))
        h.watermarks.update(plan.watermarks)
        h.ladder = max(h.ladder, plan.season[2])
        if plan.outbox:
            h.outbox.append(list(plan.outbox))


class MemoryWrite:
    """A plan's write on the wire: the pool runs it when its result is asked for."""

    def __init__(self, store: MemoryStore, plan: Plan) -> None:
        self.store = store
        self.plan = plan

    def result(self) -> None:
        self.store.apply(self.plan)
