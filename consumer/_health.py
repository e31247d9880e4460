"""Readiness (/readyz): one object reads it from the parts that know it.

Each part the consumer needs reports whether it can do its work through one narrow, typed value,
its `status` (`Status`: up or down, and what /readyz shows beside it); `Health` is the one place
where those values are named, combined and answered. No part writes into `Health`: the pipeline
wires the parts to it once (`Health.watch`), and /readyz reads them.

| part           | reported by                          | down while                               |
|----------------|--------------------------------------|------------------------------------------|
| `assigned`     | `Partitions` (consumer/_partitions.py) | no assignment was taken yet            |
| `redis`        | `RedisRetry` (consumer/_retry.py)    | the last Redis step failed               |
| `broker`       | `KafkaErrors` (consumer/_kafka.py)   | the brokers are down, until one answers  |
| `consume`      | `Degraded` (consumer/_degraded.py)   | the kill-event path is degraded          |
| `dead_letters` | `Blocked` (consumer/_blocked.py)     | a partition is stopped at a dead letter  |
| `offsets`      | `LogRange` (consumer/_log_range.py)  | a partition is held outside its log      |

A part's `status` is an immutable value its owner replaces whole, on the main loop's thread, so the
probe server's thread reads a consistent one without a lock. A part not wired is down: a process
is not ready before it knows.
"""

from __future__ import annotations

from typing import Final, NamedTuple, Protocol


class Status(NamedTuple):
    """What one part reports: up or down, and a detail /readyz shows beside it (None: none)."""

    up: bool
    detail: str | None = None


class Reports(Protocol):
    """A part of the consumer that reports whether it can do its work."""

    @property
    def status(self) -> Status: ...


class Health:
    """Readiness (/readyz), read from the parts wired to it."""

    PARTS: Final = ("assigned", "redis", "broker", "consume", "dead_letters", "offsets")
    DETAILS: Final = {"consume": "degraded", "dead_letters": "stopped", "offsets": "held"}
    """The name /readyz shows a part's detail under."""

    def __init__(self) -> None:
        self._parts: dict[str, Reports] = {}

    def watch(self, **parts: Reports) -> None:
        """Read each named part from `parts` (the wiring: a part's reporter may be replaced)."""
        for name in parts:
            if name not in self.PARTS:
                raise KeyError(name)
        self._parts.update(parts)

    def up(self, part: str) -> bool:
        return self._status(part).up

    def detail(self, name: str) -> str | None:
        """The detail /readyz shows as `name=...` (None: none now)."""
        for part, shown in self.DETAILS.items():
            if shown == name:
                return self._status(part).detail
        raise KeyError(name)

    def ready(self) -> bool:
        return all(self._status(p).up for p in self.PARTS)

    def report(self) -> tuple[bool, str]:
        """(ready, `part=0|1 ... name=detail ...`) as /readyz answers."""
        statuses = {p: self._status(p) for p in self.PARTS}
        text = " ".join(
            [f"{p}={int(s.up)}" for p, s in statuses.items()]
            + [
                f"{self.DETAILS[p]}={s.detail}"
                for p, s in statuses.items()
                if s.detail is not None and p in self.DETAILS
            ]
        )
        return all(s.up for s in statuses.values()), text

    def _status(self, part: str) -> Status:
        if part not in self.PARTS:
            raise KeyError(part)
        source = self._parts.get(part)
        return _UNKNOWN if source is None else source.status


_UNKNOWN: Final = Status(False)
