"""A durable redis-server whose restarts stay in LOADING until the test ends it, for fault tests.

After a start, Redis loads its dataset (RDB, or the AOF: an RDB base and the commands written
since) and meanwhile answers almost every command with `LOADING` (INFO and CONFIG among the few
it serves), as it does after a restart with a big AOF, a restore, or a replica's full resync.
Here the loading is made slow and held on purpose: filler keys of 1 KiB (in their own key
namespace) are rewritten into the AOF's RDB base, a start loads each with `key-load-delay`, and
Redis serves its clients between keys (`loading-process-events-interval-bytes` below one filler
key). `end_loading` sets the delay to 0, so the rest loads at once: LOADING lasts exactly as long
as the test wants, however fast the machine.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Final

import redis

from stack._errors import StackError
from stack._ports import LOOPBACK, free_port
from stack._redis import RECOMMENDED_SETTINGS, RedisServer

FILLER_VALUE_BYTES: Final = 1024
EVENTS_EVERY_BYTES: Final = 1024
"""Redis's smallest `loading-process-events-interval-bytes`: it answers about once a filler key."""
_FILL_CHUNK: Final = 500
_POLL_S: Final = 0.05


@dataclass
class LoadingRedis(RedisServer):
    """redis-server with `appendfsync always` on a port fixed for its life (a restart loses no
    acknowledged write), loading each key of its RDB base `key_load_delay_us` µs slowly, and
    ready once it answers INFO (which it serves while loading), not PING."""

    key_load_delay_us: int = 2000
    """With 10,000 filler keys a restart stays in LOADING about 20 s unless ended sooner."""

    def __post_init__(self) -> None:
        if self.port == 0:
            self.port = free_port()
        self.settings = (
            *RECOMMENDED_SETTINGS,
            "--appendonly", "yes", "--appendfsync", "always",
            "--key-load-delay", str(self.key_load_delay_us),
            "--loading-process-events-interval-bytes", str(EVENTS_EVERY_BYTES),
        )  # fmt: skip

    def fill(self, keys: int, prefix: str = "filler:") -> None:
        """Write `keys` keys `<prefix><i>` of random bytes (they do not compress), then rewrite
        the AOF, so that they are in its RDB base: the part a start loads slowly."""
        client = self._client()
        try:
            for start in range(0, keys, _FILL_CHUNK):
                stop = min(keys, start + _FILL_CHUNK)
                client.mset(
                    {f"{prefix}{i}": os.urandom(FILLER_VALUE_BYTES) for i in range(start, stop)}
                )
            client.bgrewriteaof()
            while True:
                info = client.info("persistence")
                if not (info["aof_rewrite_in_progress"] or info["aof_rewrite_scheduled"]):
                    break
                time.sleep(_POLL_S)
            if info["aof_last_bgrewrite_status"] != "ok":
                raise StackError(f"AOF rewrite failed; log: {self.log_path}")
        finally:
            client.close()

    def loading(self) -> bool:
        """Whether Redis is loading its dataset (`loading` in INFO persistence)."""
        client = self._client()
        try:
            return bool(client.info("persistence")["loading"])
        finally:
            client.close()

    def restart_loading(self, down_s: float = 0.5) -> None:
        """Stop, stay down `down_s` seconds, start again: returns while Redis is loading (held
        until `end_loading`); StackError if the load had already ended (too few filler keys)."""
        self.restart(down_s)
        if not self.loading():
            raise StackError("redis-server was not loading after its restart: fill() it more")

    def end_loading(self, timeout: float = 30.0) -> None:
        """Load the rest without delay, and wait until Redis answers every command."""
        client = self._client()
        try:
            client.config_set("key-load-delay", 0)
            deadline = time.monotonic() + timeout
            while client.info("persistence")["loading"]:
                if time.monotonic() > deadline:
                    raise StackError(f"redis-server still loading after {timeout} s")
                time.sleep(_POLL_S)
        finally:
            client.close()

    def _client(self) -> redis.Redis:
        return redis.Redis(host=LOOPBACK, port=self.port, socket_timeout=10)

    def _ready(self, log_from: int) -> bool:
        client = redis.Redis(host=LOOPBACK, port=self.port, socket_timeout=1)
        try:
            client.info("persistence")
            return True
        except redis.RedisError:
            return False
        finally:
            client.close()
