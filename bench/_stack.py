"""The servers a bench runs against: the operator's when named, else a local stack of its own.

Every bench that needs Kafka and/or Redis starts them the same way: KAFKA_BOOTSTRAP_SERVERS /
REDIS_URL when each server the bench needs is named there (or by a flag the bench passes in),
else one LocalStack (stack/) that serves every server it needs, stopped when the bench leaves
the ``with`` block, however it leaves. A half-named pair (only one of the two set) starts both
locally, so a bench never mixes the operator's broker with its own Redis.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from stack import LocalStack


@dataclass(frozen=True)
class Servers:
    """Where the bench's servers answer; "" for a server the bench did not ask for."""

    kafka_bootstrap: str
    redis_url: str
    local: LocalStack | None  # the stack this bench started (None: the named servers)

    @property
    def started(self) -> bool:
        """Whether the bench started its own servers (a LocalStack) rather than named ones."""
        return self.local is not None


@contextmanager
def bench_servers(
    *,
    kafka: bool = True,
    redis: bool = True,
    kafka_bootstrap: str | None = None,
    redis_url: str | None = None,
    workdir: Path | None = None,
) -> Iterator[Servers]:
    """The servers named (arguments, else KAFKA_BOOTSTRAP_SERVERS / REDIS_URL), else a LocalStack.

    ``kafka`` / ``redis``: which servers the bench needs. ``kafka_bootstrap`` / ``redis_url``:
    a bench's own flag (None: read the environment; "" counts as not named). ``workdir``: the
    LocalStack's folder (None: a fresh temporary one it removes).
    """
    if kafka_bootstrap is None:
        kafka_bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "")
    if redis_url is None:
        redis_url = os.environ.get("REDIS_URL", "")
    named = (not kafka or kafka_bootstrap) and (not redis or redis_url)
    if named:
        yield Servers(kafka_bootstrap if kafka else "", redis_url if redis else "", None)
        return
    local = LocalStack(workdir)
    try:  # a Redis that fails to start after the broker did still stops the broker
        yield Servers(
            local.kafka_bootstrap() if kafka else "", local.redis_url() if redis else "", local
        )
    finally:
        local.stop()
