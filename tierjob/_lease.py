"""The calibration lease `{ns}:calib:lease`: at most one replica publishes per interval.

Taken with SET NX PX and extended only by its holder (compare-and-extend in Lua). The lease does
not make a paused replica stop by itself: every write the job makes is a Lua script that checks
the lease value first (see `redis_layout.scripts`), so a replica whose lease expired changes
nothing.
"""

from __future__ import annotations

import redis

from redis_layout import scripts


class Lease:
    """One replica's view of the lease: `hold()` takes or extends it, `release()` gives it up."""

    def __init__(self, client: redis.Redis, key: str, holder_id: str, ttl_ms: int) -> None:
        self.key = key
        self.holder_id = holder_id
        self.ttl_ms = ttl_ms
        self._acquire = client.register_script(scripts.LEASE_ACQUIRE)
        self._release = client.register_script(scripts.LEASE_RELEASE)

    def hold(self) -> bool:
        """Take the lease if free, extend it if ours; False while another replica holds it."""
        return bool(self._acquire(keys=[self.key], args=[self.holder_id, self.ttl_ms]))

    def release(self) -> bool:
        """Delete the lease if it is still ours (a later holder's lease is left alone)."""
        return bool(self._release(keys=[self.key], args=[self.holder_id]))
