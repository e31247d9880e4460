"""The Lua scripts that write a rating pool, one `.lua` file each (package data).

`APPLY` is the consumer's atomic batch write: apply.lua behind a header generated from the one
declaration of its keys, argument sections and player items (redis_layout/apply_contract.py),
which the consumer's Store builds the call from. The others are the tier job's, and every write
they make is fenced by its lease: a replica that paused past its lease's expiry finds another
holder's id in the lease key, so its scripts change nothing (they answer NOT_HOLDER), and it
cannot remove keys or overwrite a newer snapshot. `Fenced` calls them with their keys and
arguments in order. `ACTIVE_PAGE` (the tier job's read of μ over A) and `AROUND`, `PAGE`,
`PROFILE`, `RANK`, `TIER_TABLE` (the leaderboard reader's, run with EVALSHA_RO/EVAL_RO, which the
read-only ACL user may call) are read-only.
"""

from __future__ import annotations

import hashlib
import importlib.resources
from collections.abc import Mapping
from typing import Final

import redis

from redis_layout.apply_contract import lua_header
from redis_layout.keys import Keys


def _source(name: str) -> str:
    return importlib.resources.files(__name__).joinpath(name).read_text()


APPLY: Final = lua_header() + _source("apply.lua")
APPLY_SHA: Final = hashlib.sha1(APPLY.encode()).hexdigest()
"""What EVALSHA names APPLY by (the consumer sends the call pre-packed, not via redis-py)."""
APPLY_SCORED: Final = lua_header(scored=True) + _source("apply.lua")
"""APPLY for a pool whose model is not ADR: each player's items end with its leaderboard score
(apply_contract.SCORED_PLAYER_ITEMS)."""
APPLY_SCORED_SHA: Final = hashlib.sha1(APPLY_SCORED.encode()).hexdigest()
RAISE_EPOCH: Final = _source("raise_epoch.lua")
"""The consumer's raise of the pool epoch when Redis holds less than it wrote (_epoch.py)."""
LEASE_ACQUIRE: Final = _source("lease_acquire.lua")
LEASE_RELEASE: Final = _source("lease_release.lua")
DROP_LEGACY: Final = _source("drop_legacy.lua")
ACTIVE_PAGE: Final = _source("active_page.lua")
"""One page of A with each member's μ (read-only, not fenced: tierjob/_population.py)."""
PUBLISH: Final = _source("publish.lua")
AROUND: Final = _source("around.lua")
"""The leaderboard reader's read of the players around one (read-only, not fenced)."""
RANK: Final = _source("rank.lua")
"""The leaderboard reader's read of one player's rank, μ and tier (read-only)."""
HISTORY_APPEND: Final = _source("history_append.lua")
"""The history reader's ordered, idempotent append to a player's history list (serve/history.py)."""
SEASON_CLOSE: Final = _source("season_close.lua")
"""`adr season close`'s atomic archive of the board (serve/seasons.py)."""
PAGE: Final = _source("page.lua")
"""The leaderboard reader's page of the board after a cursor (read-only)."""
PROFILE: Final = _source("profile.lua")
"""The leaderboard reader's read of one player's standing, hash fields and history (read-only)."""
TIER_TABLE: Final = _source("tier_table.lua")
"""The leaderboard reader's read of the tier counts and the tracked count (read-only)."""

NOT_HOLDER: Final = -1
"""What a fenced script answers when the lease is not (or no longer) ours."""
SNAPSHOT_MOVED_ON: Final = -2
"""What PUBLISH answers when another publication came after the snapshot the job read."""


class Fenced:
    """The tier job's lease-fenced scripts on one pool, called by the lease holder `holder`: each
    method passes the keys and arguments in the order its .lua file documents and returns the
    script's answer (NOT_HOLDER when the lease is not, or no longer, `holder`'s)."""

    def __init__(self, client: redis.Redis, keys: Keys, holder: str) -> None:
        self._keys = keys
        self._holder = holder
        self._drop_legacy, self._publish = map(client.register_script, (DROP_LEGACY, PUBLISH))

    def drop_legacy(self) -> int:
        """drop_legacy.lua: how many of `{ns}:active_mu` and `{ns}:calib:pruned_to` (earlier
        releases' keys) it unlinked, or NOT_HOLDER."""
        k = self._keys
        return int(self._drop_legacy(keys=[k.lease, k.active_mu, k.pruned_to], args=[self._holder]))

    def publish(self, previous_version: int, fields: Mapping[str, str]) -> int:
        """publish.lua with the snapshot codec's `fields`: the new version, NOT_HOLDER or
        SNAPSHOT_MOVED_ON."""
        return int(
            self._publish(
                keys=[self._keys.lease, self._keys.snapshot],
                args=[
                    self._holder,
                    previous_version,
                    fields["computed_at"],
                    fields["active_count"],
                    fields["mean_mu_active"],
                    fields["boundaries"],
                ],
            )
        )
