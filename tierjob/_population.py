"""The active population from Redis: prune expired players, then read μ over A.

Active set A at a cutoff c = now − t_active (ms): the players whose activity time (their n_active-th
most recent counted event, the score in `{ns}:activity`) is later than c. The consumer adds every
player it sees active to `{ns}:active_mu` with its μ; this module removes the expired ones and
reads the rest:

1. Prune (cost ∝ players expired since the last run): the members of `{ns}:activity` scored in
   (pruned_to, c] leave `{ns}:active_mu`; `{ns}:calib:pruned_to` remembers c.
2. Read, atomically (MULTI): |A| = ZCOUNT activity (c, +inf) and all of `{ns}:active_mu` (its
   DUMP, whose scores are binary doubles: see `_rdb`; ZRANGE WITHSCORES where that cannot be
   used). Since `{ns}:active_mu` holds every active player, equal counts prove it holds exactly A.
3. Otherwise (a player the consumer added with an expired activity time, a clock that went back,
   a missing player) reconcile exactly: A from `{ns}:activity`, μ from `{ns}:active_mu`, remove the
   inactive ones, add the missing ones with their hash's μ. Cost O(|A|), counted in the report.

If A is empty, A = P: the μ of every tracked player, read by SCAN of the player hashes, O(P). That
happens only while nobody is active (a new or idle deployment).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import redis

from redis_layout import Keys, raw, scripts
from tierjob import _rdb
from tierjob._errors import StateError, TierJobError

_SCRIPT_BATCH = 1000
"""Player ids per reconciliation script call."""
_SCAN_COUNT = 2000


class LeaseLost(TierJobError):
    """The lease moved to another replica during this run: nothing more is written."""


@dataclasses.dataclass(frozen=True, slots=True)
class Population:
    """What the snapshot is taken from, and what reading it cost."""

    active_mus: list[float]
    """μ over A, ascending."""
    fallback_mus: list[float]
    """μ over all tracked players; read only when A is empty, else []."""
    expired: int
    """Players this run's prune removed from `{ns}:active_mu`."""
    reconciled: bool
    """True when the counts disagreed and the exact O(|A|) reconciliation ran."""
    dropped: int
    """Inactive players the reconciliation removed."""
    added: int
    """Active players missing from `{ns}:active_mu` that the reconciliation added."""
    prune_s: float = 0.0
    """Seconds spent pruning (∝ players expired since the last run)."""
    read_s: float = 0.0
    """Seconds spent reading μ over A (∝ |A|; O(P) only in the A-empty fallback)."""


@dataclasses.dataclass
class PopulationReader:
    """Reads the population of one namespace under one replica's lease (`holder_id`), pruning in
    chunks of `prune_chunk` players; `renew` extends the lease between prune chunks (a long first
    prune outlives a TTL)."""

    client: redis.Redis
    keys: Keys
    holder_id: str
    prune_chunk: int
    renew: Callable[[], bool] | None = None
    _scripts: scripts.Fenced = dataclasses.field(init=False, repr=False)
    _dump_allowed: bool = dataclasses.field(default=True, init=False, repr=False)

    def __post_init__(self) -> None:
        self._scripts = scripts.Fenced(self.client, self.keys, self.holder_id)

    def read(self, cutoff_ms: int) -> Population:
        """The population at `cutoff_ms` (= now − t_active); LeaseLost if the lease is gone."""
        started = time.perf_counter()
        expired = self.prune(cutoff_ms)
        pruned = time.perf_counter()
        count, mus = self._read_fast(cutoff_ms)
        dropped = added = 0
        reconciled = count != len(mus)
        if reconciled:
            mus, dropped, added = self._reconcile(cutoff_ms)
        mus.sort()
        fallback = [] if mus else self.all_mus()
        read = time.perf_counter()
        return Population(
            mus, fallback, expired, reconciled, dropped, added, pruned - started, read - pruned
        )

    def prune(self, cutoff_ms: int) -> int:
        """Remove the players expired in (pruned_to, cutoff] from `{ns}:active_mu`, in chunks."""
        removed_total = 0
        while True:
            removed, _scanned, _upto, done = self._scripts.prune_step(cutoff_ms, self.prune_chunk)
            if removed == scripts.NOT_HOLDER:
                raise LeaseLost("lease lost while pruning")
            removed_total += int(removed)
            if done:
                return removed_total
            if self.renew is not None and not self.renew():
                raise LeaseLost("lease lost while pruning")

    def _read_fast(self, cutoff_ms: int) -> tuple[int, list[float]]:
        """|A| and the μ of every member of `{ns}:active_mu`, read atomically: DUMP (binary
        scores, see `_rdb`) where Redis allows it and the set is large, else ZRANGE."""
        k = self.keys
        if self._dump_allowed:
            try:
                count, payload = raw.transaction(
                    self.client,
                    [("ZCOUNT", k.activity, f"({cutoff_ms}", "+inf"), ("DUMP", k.active_mu)],
                )
            except redis.ResponseError:  # DUMP renamed or denied (ACL): ZRANGE from now on
                self._dump_allowed = False
            else:
                scores = [] if payload is None else _rdb.zset_scores(payload)
                if scores is not None:
                    return int(count), scores
        count, members = raw.transaction(
            self.client,
            [
                ("ZCOUNT", k.activity, f"({cutoff_ms}", "+inf"),
                ("ZRANGE", k.active_mu, 0, -1, "WITHSCORES"),
            ],
        )
        return int(count), _scores(members)[1]

    def _reconcile(self, cutoff_ms: int) -> tuple[list[float], int, int]:
        k = self.keys
        active_ids, members = raw.transaction(
            self.client,
            [
                ("ZRANGE", k.activity, f"({cutoff_ms}", "+inf", "BYSCORE"),
                ("ZRANGE", k.active_mu, 0, -1, "WITHSCORES"),
            ],
        )
        active = set(active_ids)
        mu_of: dict[bytes, float] = dict(zip(*_scores(members), strict=True))
        mus = [mu for member, mu in mu_of.items() if member in active]
        inactive = [member for member in mu_of if member not in active]
        missing = [member for member in active_ids if member not in mu_of]
        dropped = sum(
            _fenced(self._scripts.drop_inactive(cutoff_ms, batch)) for batch in _batches(inactive)
        )
        added = 0
        for batch in _batches(missing):
            pairs = _fenced(self._scripts.add_active(cutoff_ms, batch))
            for mu in pairs[1::2]:
                mus.append(_float(mu))
                added += 1
        return mus, dropped, added

    def all_mus(self) -> list[float]:
        """μ of every tracked player (A = P when nobody is active): SCAN of the hashes, O(P)."""
        pattern = self.keys.match_players
        mus: list[float] = []
        for batch in _batches_of(self.client.scan_iter(match=pattern, count=_SCAN_COUNT)):
            pipe = self.client.pipeline(transaction=False)
            for key in batch:
                pipe.hget(key, "mu")
            mus.extend(_float(mu) for mu in pipe.execute() if mu is not None)
        return mus


def _fenced(answer: Any) -> Any:
    """A reconciliation script's answer; LeaseLost when the lease was not ours."""
    if answer == scripts.NOT_HOLDER:
        raise LeaseLost("lease lost while reconciling the active set")
    return answer


def _scores(reply: list[Any]) -> tuple[list[bytes], list[float]]:
    try:
        return raw.zset_scores(reply)
    except (ValueError, TypeError, IndexError) as exc:
        raise StateError(f"unreadable {{ns}}:active_mu reply: {exc}") from exc


def _float(raw: bytes | str) -> float:
    try:
        return float(raw)
    except ValueError as exc:
        raise StateError(f"unreadable μ {raw!r}") from exc


def _batches(items: list[bytes]) -> list[list[bytes]]:
    return [items[i : i + _SCRIPT_BATCH] for i in range(0, len(items), _SCRIPT_BATCH)]


def _batches_of(keys: Any) -> Any:
    batch: list[bytes] = []
    for key in keys:
        batch.append(key)
        if len(batch) >= _SCAN_COUNT:
            yield batch
            batch = []
    if batch:
        yield batch
