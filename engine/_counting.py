"""The counting rules of a book, in one place: which kill events count, the active set, and when
the population snapshot is taken (docs/algorithm.md#steps, §2.1, §2.3).

RatingBook (ADR's columnar replay book, the consumer's reference) and ModelBook (any model) each
keep one `Counting` and differ only in how they store and rate their players:

- bad input: a self kill, a time outside [0, 2**53) or an empty player id is rejected;
- lateness (not in the paper): the watermark W is the largest event time accepted; an event with
  ts < W − lateness_ms is rejected as late, so a→b cooldown entries with t' + cooldown ≤
  W − lateness can be dropped while the cooldown stays exact for every accepted event;
- the a→b cooldown (§2.1, `Params.t_cooldown`): a repeat of a counted a→b kill within it is a
  duplicate, on one pair table of player numbers (engine/_pairs.py);
- the active set (§2.3): each player whose activity time (the model's) is known has at most one
  heap entry `expiry << 32 | number`, expiry = activity time + T_active when it was filed; the
  activity time only grows, so an entry may lag and is re-filed when it comes due;
- snapshots on event time: before a counted event at t when none exists yet or t − last ≥
  calibrate_every_ms (never with a fixed snapshot), over the active players' ratings, or every
  player's when none is active; the snapshot `predict` takes for an event at t is kept and reused
  by that event's `apply`.

Player numbers are the book's (0, 1, ... in the order players are first tracked); the book tells
the rules when it tracks one (`track`) and lends them a `Players` view that reads activity times
and ratings by number.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Final, Literal, Protocol

import msgspec

from engine._cooldown import is_duplicate
from engine._errors import EngineError
from engine._pairs import PairTable
from engine._snapshot import take_snapshot
from engine._state import Snapshot
from engine.params import MS_PER_SECOND, Params

DEFAULT_CALIBRATE_EVERY_MS: Final = 300 * MS_PER_SECOND
DEFAULT_LATENESS_MS: Final = 3600 * MS_PER_SECOND
MAX_TS_MS: Final = 2**53 - 1  # event times are ints in [0, 2**53): exact in JSON and as float

_HEAP_SHIFT: Final = 32  # active heap entry = expiry << 32 | player number
_HEAP_MASK: Final = (1 << _HEAP_SHIFT) - 1


class Verdict(msgspec.Struct, frozen=True, gc=False):
    """What a book's `apply` did with an event."""

    kind: Literal["counted", "duplicate", "rejected"]
    reason: str | None = None  # why it was rejected: self_kill, late, bad_ts, bad_player


COUNTED: Final = Verdict("counted")
DUPLICATE: Final = Verdict("duplicate")
_REJECTED = {r: Verdict("rejected", r) for r in ("self_kill", "late", "bad_ts", "bad_player")}


class Players(Protocol):
    """What the rules read of a book's players when a snapshot is taken."""

    def activity(self, i: int) -> int | None:
        """Player i's activity time (§2.3), None while it has none."""
        ...

    def rating(self, i: int) -> float:
        """Player i's rating as the snapshot reads it (ADR's μ; another model's display)."""
        ...

    def ratings(self) -> Iterable[float]:
        """Every tracked player's rating (the snapshot's sample when none is active)."""
        ...


class Counting:
    """One book's counting state: counters, watermark, cooldown table, active set, snapshot."""

    def __init__(
        self,
        params: Params,
        calibrate_every_ms: int,
        lateness_ms: int,
        snapshot: Snapshot,
        fixed: bool,
        players: Players,
        empty_mean: float,
    ) -> None:
        """`empty_mean`: μ̄_A of a snapshot taken while no player is tracked."""
        if calibrate_every_ms < 0 or lateness_ms < 0:
            raise EngineError("calibrate_every_ms and lateness_ms must be >= 0")
        self.params = params
        self.calibrate_every_ms = calibrate_every_ms
        self.lateness_ms = lateness_ms
        self.fixed = fixed
        self.snapshot = snapshot
        self._players = players
        self._empty_mean = empty_mean
        # (now, counted, snapshot): a due snapshot computed by predict, reused by apply
        self._pending: tuple[int, int, Snapshot] | None = None
        self.counted = 0
        self.duplicates = 0
        self.rejected = 0
        self.rejected_by_reason: dict[str, int] = {}
        self.watermark: int | None = None
        self.newest_counted: int | None = None  # the largest counted ts (the ladder's season)
        self.pairs = PairTable(params.pair_memory_ms, lateness_ms)
        self._heap: list[int] = []
        self._filed: list[bool] = []  # per player number: has an entry in the heap

    # -- which events count -------------------------------------------------------------------

    def is_late(self, ts: int) -> bool:
        """Whether an event at `ts` is late: older than the watermark less `lateness_ms`."""
        watermark = self.watermark
        return watermark is not None and ts < watermark - self.lateness_ms

    def refusal(self, attacker: str, victim: str, ts: int) -> Verdict | None:
        """The rejection of an event (counted in `rejected`), or None: it is admitted and the
        watermark moves to ts if later."""
        if attacker == victim:
            return self._reject("self_kill")
        if type(ts) is not int or not 0 <= ts <= MAX_TS_MS:
            return self._reject("bad_ts")
        if not attacker or not victim:
            return self._reject("bad_player")
        if self.is_late(ts):
            return self._reject("late")
        watermark = self.watermark
        if watermark is None or ts > watermark:
            self.watermark = ts
        return None

    def pair_last(self, ia: int, ib: int, ts: int) -> int | None:
        """The last counted a→b time an admitted event at ts is checked against (None: none)."""
        watermark = self.watermark
        assert watermark is not None  # an admitted event set it
        return self.pairs.last(ia, ib, ts, watermark)

    def is_repeat(self, last: int | None, ts: int) -> bool:
        """Whether the event at ts repeats a counted a→b kill within the cooldown (§2.1); if so
        it is counted as a duplicate."""
        if is_duplicate(last, ts, self.params):
            self.duplicates += 1
            return True
        return False

    def count(self, ia: int, ib: int, ts: int) -> None:
        """Record a counted a→b kill at ts (after the book rated it)."""
        watermark = self.watermark
        assert watermark is not None
        horizon = watermark - self.lateness_ms - self.params.pair_memory_ms
        self.pairs.put(ia, ib, ts, watermark, horizon)
        self.counted += 1
        newest = self.newest_counted
        if newest is None or ts > newest:
            self.newest_counted = ts

    def _reject(self, reason: str) -> Verdict:
        self.rejected += 1
        self.rejected_by_reason[reason] = self.rejected_by_reason.get(reason, 0) + 1
        return _REJECTED[reason]

    # -- the active set (§2.3) ------------------------------------------------------------------

    def track(self) -> None:
        """The book tracks one more player (the next number)."""
        self._filed.append(False)

    def filed(self, i: int) -> bool:
        """Whether player i has an entry in the active heap."""
        return self._filed[i]

    def file(self, i: int, activity: int) -> None:
        """Give player i, not filed yet, an entry for its activity time."""
        heapq.heappush(self._heap, ((activity + self.params.active_ms) << _HEAP_SHIFT) | i)
        self._filed[i] = True

    def _expire(self, now: int) -> None:
        """Leave in the heap exactly the players active at now, each once."""
        heap, filed, active_ms = self._heap, self._filed, self.params.active_ms
        players = self._players
        while heap and heap[0] >> _HEAP_SHIFT <= now:
            i = heapq.heappop(heap) & _HEAP_MASK
            activity = players.activity(i)
            if activity is not None and activity + active_ms > now:
                heapq.heappush(heap, ((activity + active_ms) << _HEAP_SHIFT) | i)
            else:
                filed[i] = False

    def _active(self, now: int) -> list[float]:
        """The ratings of the players active at now."""
        active_ms = self.params.active_ms
        players = self._players
        filed = self._filed
        numbers: Iterable[int]
        if 4 * len(self._heap) < len(filed):  # few active: visit them through the heap
            numbers = [entry & _HEAP_MASK for entry in self._heap]
        else:  # many: one sequential pass is cheaper than hopping through the heap
            numbers = [i for i in range(len(filed)) if filed[i]]
        active: list[float] = []
        for i in numbers:
            activity = players.activity(i)
            if activity is not None and activity + active_ms > now:
                active.append(players.rating(i))
        return active

    # -- snapshots -----------------------------------------------------------------------------

    def due(self, ts: int) -> bool:
        """Whether a counted event at ts takes a new snapshot first."""
        if self.fixed:
            return False
        taken = self.snapshot.taken_at
        return taken is None or ts - taken >= self.calibrate_every_ms

    def snapshot_at(self, now: int) -> Snapshot:
        """The snapshot an event at `now` uses: the current one or a fresh one if due (§2.3),
        over the ratings of the active players, or every player's when none is active."""
        if not self.due(now):
            return self.snapshot
        pending = self._pending
        if pending is not None and pending[0] == now and pending[1] == self.counted:
            return pending[2]
        previous = self.snapshot
        if not self._filed:
            snapshot = Snapshot(
                taken_at=now,
                mean_mu_active=self._empty_mean,
                boundaries=previous.boundaries,
                active_count=0,
            )
        else:
            active = self._active(now)
            snapshot = take_snapshot(now, active, self._players.ratings(), previous, self.params)
        self._pending = (now, self.counted, snapshot)
        return snapshot

    def take(self, now: int) -> None:
        """Before a counted event at `now` for which a snapshot is `due`: expire the active set
        and put the snapshot in force (the one `predict` took for it, if it did)."""
        self._expire(now)
        self.snapshot = self.snapshot_at(now)
        self._pending = None
