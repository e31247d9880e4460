"""One calibration: layout check → lease → previous snapshot → population → engine.take_snapshot
→ publish. A pool whose `{ns}:layout` this release does not know (or one being rebuilt) is
refused with redis_layout.UnknownLayout before anything is read or published."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

import redis

from engine import MODELS, TIER_LABELS, Snapshot, model_named, take_snapshot
from redis_layout import CorruptValue, Keys, decode_snapshot, pool_model_parameters
from redis_layout.layout import UnknownLayout, check_layout
from tierjob._errors import PublishError, StateError
from tierjob._lease import Lease
from tierjob._population import LeaseLost, Population, PopulationReader, model_display
from tierjob._publish import (
    RedisPublisher,
    SnapshotMovedOn,
    TopicPublisher,
    tier_boundaries_message,
)
from tierjob.config import Config

Outcome = Literal["published", "not_holder", "lease_lost", "moved_on"]


@dataclasses.dataclass(frozen=True, slots=True)
class CalibrationResult:
    """What one run did; `snapshot` and `version` are set when it published."""

    outcome: Outcome
    now_ms: int
    duration_s: float
    lease_held: bool
    version: int | None = None
    snapshot: Snapshot | None = None
    population: Population | None = None
    tier_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    topic_error: str | None = None
    corrupt_snapshot: str | None = None
    """Why the previous snapshot did not decode (it was replaced by a fresh one), or None."""
    """Why the tier-boundaries message was not delivered (the Redis publish stands)."""

    def summary(self) -> dict[str, object]:
        """A JSON-ready account of the run (one-shot runs print it on stdout)."""
        out: dict[str, object] = {
            "outcome": self.outcome,
            "now_ms": self.now_ms,
            "duration_s": round(self.duration_s, 6),
            "lease_held": self.lease_held,
            **({"corrupt_snapshot": self.corrupt_snapshot} if self.corrupt_snapshot else {}),
        }
        if self.snapshot is not None:
            s = self.snapshot
            out |= {
                "version": self.version,
                "computed_at": s.taken_at,
                "active_count": s.active_count,
                "mean_mu_active": s.mean_mu_active,
                "boundaries": None if s.boundaries is None else list(s.boundaries),
                "tier_counts": self.tier_counts,
                "topic_error": self.topic_error,
            }
        if self.population is not None:
            p = self.population
            out |= {
                "corrupt_players": p.corrupt,
                "read_pages": p.pages,
                "legacy_keys_removed": p.legacy_removed,
                "fallback_all_players": bool(p.fallback_mus),
                "read_s": round(p.read_s, 6),
            }
        return out


class Calibrator:
    """Takes and publishes the population snapshot of one namespace (docs/design.md, tier job)."""

    def __init__(
        self, client: redis.Redis, config: Config, topic: TopicPublisher | None = None
    ) -> None:
        self._client = client
        self._config = config
        self._keys = Keys.of(config.namespace)
        self._topic = topic
        self.lease = Lease(client, self._keys.lease, config.holder_id, config.lease_ttl_ms)
        self._reader = PopulationReader(
            client, self._keys, config.holder_id, config.read_chunk, renew=self.lease.hold
        )
        self._publisher = RedisPublisher(client, self._keys, config.holder_id)

    def _pool_display(self) -> Callable[[Any], float | None] | None:
        """The display rating of the pool's model ({ns}:model) when it is not ADR, else None
        (ADR: μ); the model is built from the parameters the pool records."""
        name, parameters = pool_model_parameters(self._client, self._keys)
        if name == MODELS[0]:
            return None
        return model_display(model_named(name, parameters, typed=True))

    def run_once(self, now_ms: int | None = None) -> CalibrationResult:
        """Calibrate at `now_ms` (default: the wall clock, as online calibration is defined)."""
        started = time.perf_counter()
        now = int(time.time() * 1000) if now_ms is None else now_ms
        corrupt: str | None = None

        def result(outcome: Outcome, held: bool, **kw: object) -> CalibrationResult:
            duration = time.perf_counter() - started
            return CalibrationResult(
                outcome,
                now,
                duration,
                held,
                corrupt_snapshot=corrupt,
                **kw,  # type: ignore[arg-type]
            )

        # The readers' check of {ns}:layout (UnknownLayout): a namespace `adr rebuild` is writing
        # ("rebuilding") holds a partial pool, whose snapshot must not be published. Checked
        # before the lease, so that nothing is written into it, and again holding the lease: a
        # rebuild that claimed the namespace in between is seen now, and one that claims it
        # later finds the lease key and refuses the namespace (it must be fresh).
        check_layout(self._client, self._keys)
        if not self.lease.hold():
            return result("not_holder", False)
        try:
            check_layout(self._client, self._keys)
        except UnknownLayout:
            self.lease.release()
            raise
        self._reader.display = self._pool_display()
        params = self._config.params
        previous: tuple[int, Snapshot | None] | None
        try:
            raw = self._client.hgetall(self._keys.snapshot)
            try:
                previous = decode_snapshot(raw, self._keys.snapshot)
            except CorruptValue as exc:
                error = StateError(exc.detail)
                previous, corrupt = _replace_corrupt(raw, error), str(error)
            population = self._reader.read(now - params.active_ms)
            snapshot = take_snapshot(
                now,
                population.active_mus,
                population.fallback_mus,
                previous[1] if previous else None,
                params,
            )
            # A long run (the O(P) fallback) may outlive the lease: extend it, or stop here.
            if not self.lease.hold():
                raise LeaseLost("lease taken by another replica during the run")
            version = self._publisher.publish(snapshot, previous[0] if previous else 0)
        except LeaseLost:
            return result("lease_lost", False)
        except SnapshotMovedOn:
            return result("moved_on", True)
        topic_error = None
        if self._topic is not None:
            try:
                message = tier_boundaries_message(version, snapshot, params)
                newest = self._topic.send(
                    self._config.namespace, message, lambda: self._publisher.is_current(version)
                )
            except PublishError as exc:
                topic_error = str(exc)
            else:
                if not newest:  # paused past the lease: a newer snapshot is out, not this one
                    return result("moved_on", False, version=version)
        return result(
            "published",
            True,
            version=version,
            snapshot=snapshot,
            population=population,
            tier_counts=self.tier_counts(),
            topic_error=topic_error,
        )

    def tier_counts(self) -> dict[str, int]:
        """Placed players per tier label, from the consumer's `{ns}:tier_counts` hash."""
        raw = self._client.hgetall(self._keys.tier_counts)
        counts = {_text(k): int(v) for k, v in raw.items()}
        return {label: counts.get(label, 0) for label in TIER_LABELS}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _replace_corrupt(raw: Mapping[Any, Any], error: StateError) -> tuple[int, None]:
    """A published snapshot that does not decode is replaced by a fresh one (no previous
    boundaries to smooth from) at its version + 1, so that the corrupt hash does not stop every
    later run; only an unreadable `version` stops it (the publish script compares versions)."""
    try:
        return int(raw.get(b"version", raw.get("version"))), None
    except (TypeError, ValueError):
        raise error from None
