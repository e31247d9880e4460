"""The pool epoch: what makes a rewind of Redis visible to readers of `rating-changes`.

Every rating change carries `seq` (the player's ver after it) and `epoch`, and readers keep,
per player, the change with the highest (epoch, seq) (schemas/rating_change.md). When Redis
comes back holding less than was written (a failover to a lagging replica, a restore from an
older RDB/AOF), the consumer applies the lost events again and the changes it emits reuse seqs
already emitted, possibly with other bodies. So before any of them is written the epoch
(`{ns}:epoch` in Redis, absent = 0) is raised above every epoch used before:

    max(stored + 1, highest this instance saw + 1, wall clock in ms, least)

The restore rolls the epoch key back too, so `stored + 1` alone could hand out an epoch the lost
changes already carried; this instance's memory (`seen`) covers a raise it read, and the wall
clock one no instance saw (epochs raised earlier were at most the wall clock then). `least` is
what the caller knows from elsewhere (the group's committed offsets record the epoch: a store a
Redis restore does not roll back). Every batch reads the epoch with its state and its write
applies only while Redis still holds it (scripts/apply.lua), so a change is never written in an
epoch another instance has left: that write conflicts and is rated again in the new one.

Detection (consumer/_lifecycle.py, consumer/_partitions.py): in flight, a read showing a lower
stored offset than this instance wrote (RedisBehind), or a lower epoch than it saw; at
assignment, Redis holding a lower offset than the group committed (commits follow Redis).
"""

from __future__ import annotations

import logging
import time
from typing import Final

from consumer._errors import RedisBehind
from consumer._metrics import Metrics
from consumer._ports import PoolStore

log = logging.getLogger("adr.consumer")

EPOCH_PARTITION: Final = -1
"""RedisBehind's partition when the epoch, not an offset, went back."""


class PoolEpoch:
    """The highest epoch this instance has seen, and the raise."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self.seen = 0
        """The highest epoch this instance read or raised."""

    def observe(self, stored: int) -> None:
        """A read showed `stored`: RedisBehind if it is below one seen (Redis lost the raise, or
        what followed it); else it is remembered."""
        if stored < self.seen:
            raise RedisBehind(EPOCH_PARTITION, stored, self.seen, what="epoch")
        self.seen = stored

    def raise_(self, store: PoolStore, why: str, detail: str = "", least: int = 0) -> int:
        """Raise the pool's epoch above every one used before (see the module docstring) and
        return it. Called before any change of a re-applied range is written. `why` labels
        adr_pool_epoch_raises_total: `rewind` (noticed in flight), `assignment` (Redis behind
        the group's committed offsets), `committed_unknown` (those could not be read)."""
        want = max(self.seen + 1, time.time_ns() // 1_000_000, least)
        epoch = store.raise_epoch(want)
        self.seen = max(self.seen, epoch)
        self._metrics.epoch_raises.labels(why).inc()
        log.warning("pool epoch raised", extra={"epoch": epoch, "why": why, "detail": detail})
        return epoch
