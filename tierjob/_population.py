"""The active population from Redis: μ over A, read page by page from the consumer's own keys.

Active set A at a cutoff c = now − t_active (ms): the players whose activity time (their n_active-th
most recent counted event, the score in `{ns}:activity`) is later than c. The consumer writes that
score and the player's hash `{ns}:player:<id>` in one atomic script per batch; it keeps no set of
μ for the job, so that its hot path does no work for a calibration that runs every few minutes.
This module reads A from `{ns}:activity` (members scored > c) and each member's μ from the `mu`
field of its hash, in pages of `chunk` members: one short read-only Lua call per page
(scripts/active_page.lua: ZRANGEBYSCORE with LIMIT, then HGET mu of each member), the next page
starting at the last score seen (the members already read at that score are skipped; a page grows
by them when one score holds more than a page). Cost O(|A|), none of it on the consumer's path;
Redis is blocked for one page at a time, never for the whole read.

The pages are not one atomic read. Each page is: it reads its members' activity times and μ at
one instant. Across pages the consumer goes on writing, so each μ is a value some write
committed during the read window (a player rated while the job reads counts with its μ before or
after that event, as in a snapshot taken a moment earlier or later). With c fixed, A only grows
during the window (an activity time never moves back): every player in A when the read starts
is read exactly once (one whose activity time moves past the cursor is de-duplicated), and one
that joins A during the read may be included or not, as by a run a moment later or earlier.
Expired players never need removing: the read starts after c.

A hash that is missing, or whose `mu` is missing, not a float, or not finite (the consumer never
writes one), is skipped, counted (`Population.corrupt`, the tier job's metric
adr_corrupt_state_total{what="player"}) and logged; the rest of A is still read.

A pool whose model is not ADR (`{ns}:model`, docs/models.md) is read the same way, its members'
display rating instead of μ: the page reads each member's hash fields and the model's codec gives
the display rating (`model_display`); the snapshot's mean and boundaries are then on it.

If A is empty, A = P: the μ of every tracked player, read by SCAN of the player hashes. SCAN
visits every key of the database (MATCH only filters what it returns), so the cost is O(keys):
the pool's records and other pools' keys included, not O(P). That happens only while nobody is
active (a new or idle deployment).

Upgrades: `{ns}:active_mu` and `{ns}:calib:pruned_to`, which earlier releases' consumers and tier
job kept, are unlinked by every run under its lease (a no-op once they are gone; a consumer of an
earlier release still running in a rolling upgrade may write `active_mu` again until it stops;
what a tier job of an earlier release does beside new consumers: docs/operations.md).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable
from typing import Any, Final

import redis

from engine import RatingModel
from redis_layout import CorruptValue, Keys, scripts
from redis_layout.player_codec import READ_FIELDS, decode_fields
from tierjob._errors import TierJobError

_SCAN_COUNT: Final = 2000
_LOGGED_KEYS: Final = 10
"""Corrupt player keys named in the run's log line (all of them are counted)."""

log = logging.getLogger("adr.calibrate")


class LeaseLost(TierJobError):
    """The lease moved to another replica during this run: nothing more is written."""


@dataclasses.dataclass(frozen=True, slots=True)
class Population:
    """What the snapshot is taken from, and what reading it cost."""

    active_mus: list[float]
    """μ over A, ascending."""
    fallback_mus: list[float]
    """μ over all tracked players; read only when A is empty, else []."""
    corrupt: int = 0
    """Players skipped: no hash, or a `mu` that is missing, not a float, or not finite."""
    pages: int = 0
    """Lua calls that read A (each blocks Redis for one page of `chunk` members)."""
    legacy_removed: int = 0
    """Keys of earlier releases (`{ns}:active_mu`, `{ns}:calib:pruned_to`) this run unlinked."""
    read_s: float = 0.0
    """Seconds spent reading μ over A (∝ |A|; O(keys of the database) in the A-empty fallback)."""


@dataclasses.dataclass
class PopulationReader:
    """Reads the population of one namespace under one replica's lease (`holder_id`), `chunk`
    members of A per Lua call; `renew` extends the lease between pages (a long read outlives a
    short TTL) and a failed renewal ends the read with LeaseLost."""

    client: redis.Redis
    keys: Keys
    holder_id: str
    chunk: int
    renew: Callable[[], bool] | None = None
    display: Callable[[Any], float | None] | None = None
    """For a pool whose model is not ADR (`model_display`): a player's display rating from the
    HMGET of its hash's READ_FIELDS (None: unreadable), read instead of `mu`."""
    _scripts: scripts.Fenced = dataclasses.field(init=False, repr=False)
    _page: Any = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._scripts = scripts.Fenced(self.client, self.keys, self.holder_id)
        self._page = self.client.register_script(scripts.ACTIVE_PAGE)

    def read(self, cutoff_ms: int) -> Population:
        """The population at `cutoff_ms` (= now − t_active); LeaseLost if the lease is gone."""
        started = time.perf_counter()
        removed = self.drop_legacy()
        corrupt: list[str] = []
        mus, pages = self.active_mus(cutoff_ms, corrupt)
        mus.sort()
        fallback = [] if mus else self.all_mus(corrupt)
        if corrupt:
            log.warning(
                "players skipped: no readable mu",
                extra={"count": len(corrupt), "keys": corrupt[:_LOGGED_KEYS]},
            )
        read = time.perf_counter() - started
        return Population(mus, fallback, len(corrupt), pages, removed, read)

    def drop_legacy(self) -> int:
        """Unlink `{ns}:active_mu` and `{ns}:calib:pruned_to` of earlier releases (fenced)."""
        removed = self._scripts.drop_legacy()
        if removed == scripts.NOT_HOLDER:
            raise LeaseLost("lease lost before reading the population")
        return removed

    def active_mus(self, cutoff_ms: int, corrupt: list[str]) -> tuple[list[float], int]:
        """μ of every member of A (unsorted) and the number of pages read; the keys of the
        players skipped are appended to `corrupt`."""
        k = self.keys
        prefix = k.player_prefix
        low = f"({cutoff_ms}".encode()
        at_low = 0  # members of the last page scored `low`: read already, so skipped
        seen: set[bytes] = set()
        mus: list[float] = []
        pages = 0
        while True:
            limit = self.chunk + at_low
            fields = READ_FIELDS if self.display is not None else ()
            page = self._page(keys=[k.activity], args=[low, limit, prefix, *fields])
            pages += 1
            size, last, at_last = page[0], page[1], page[2]
            members, values = page[3::2], page[4::2]
            if self.display is not None:
                values = [self.display(v) for v in values]
            if not seen.isdisjoint(members):  # read on the previous page (or moved past it)
                fresh = [i for i, member in enumerate(members) if member not in seen]
                members, values = [members[i] for i in fresh], [values[i] for i in fresh]
            seen.update(members)
            _take(members, values, mus, prefix, corrupt)
            if size < limit:
                return mus, pages
            low, at_low = last, at_last
            if self.renew is not None and not self.renew():
                raise LeaseLost("lease lost while reading the active set")

    def all_mus(self, corrupt: list[str] | None = None) -> list[float]:
        """μ of every tracked player (A = P when nobody is active): SCAN of the hashes, O(keys).
        A hash whose `mu` is not a finite float, or a key of another type, is skipped, its key
        appended to `corrupt`; a hash without `mu` (or deleted since the SCAN) is skipped."""
        pattern = self.keys.match_players
        mus: list[float] = []
        display = self.display
        for batch in _batches_of(self.client.scan_iter(match=pattern, count=_SCAN_COUNT)):
            pipe = self.client.pipeline(transaction=False)
            for key in batch:
                if display is None:
                    pipe.hget(key, "mu")
                else:
                    pipe.hmget(key, list(READ_FIELDS))
            for key, value in zip(batch, pipe.execute(raise_on_error=False), strict=True):
                if display is not None:
                    gone = isinstance(value, list) and all(v is None for v in value)
                    value = None if gone else display(value)
                    if value is None and not gone and corrupt is not None:
                        corrupt.append(_text(key))
                        continue
                mu = _mu(value)
                if mu is not None:
                    mus.append(mu)
                elif value is not None and corrupt is not None:  # None: deleted since the SCAN
                    corrupt.append(_text(key))
        return mus


def _take(
    members: list[Any], values: list[Any], mus: list[float], prefix: str, corrupt: list[str]
) -> None:
    """Append the μ of a page's members to `mus`, or the key of each one without a readable μ
    to `corrupt`: all at once when every value is a finite float (the usual page), else one by
    one."""
    try:
        got = list(map(float, values))  # TypeError: nil or an error reply; ValueError: no number
    except (TypeError, ValueError):
        pass
    else:
        if all(map(math.isfinite, got)):
            mus += got
            return
    for member, value in zip(members, values, strict=True):
        mu = _mu(value)
        if mu is None:
            corrupt.append(prefix + _text(member))
        else:
            mus.append(mu)


def model_display(model: RatingModel[Any]) -> Callable[[Any], float | None]:
    """A player's display rating (RatingModel.display) from the HMGET of its hash's
    READ_FIELDS, through the model's codec; None for a hash the codec does not read."""

    def display(values: Any) -> float | None:
        try:
            fields = decode_fields(values)
            if fields is None:
                return None
            rating = model.display(model.from_fields(fields[0]))
        except (CorruptValue, ValueError, TypeError):
            return None
        return rating if math.isfinite(rating) else None

    return display


def _mu(value: Any) -> float | None:
    """A hash's `mu` as the player codec writes it (the repr of a finite float), or None when it
    is missing (nil), an error reply (the key holds another type), or not such a float; a float
    (a display rating `model_display` read) as it is."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if not isinstance(value, bytes | str):
        return None
    try:
        mu = float(value)
    except ValueError:
        return None
    return mu if math.isfinite(mu) else None


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _batches_of(keys: Any) -> Any:
    batch: list[bytes] = []
    for key in keys:
        batch.append(key)
        if len(batch) >= _SCAN_COUNT:
            yield batch
            batch = []
    if batch:
        yield batch
