"""The tier job: `adr calibrate` (population snapshot → Redis and `tier-boundaries`).
See docs/design.md, "Redis layout" (its key names, snapshot codec and fenced Lua scripts are
`redis_layout`'s); `adr leaderboard` is the `leaderboard` package.

Exceptions: `TierJobError` (root) ← `StateError` (Redis holds what cannot be read),
`PublishError` (the topic missed a message), `LeaseLost`, `SnapshotMovedOn`.
"""

from tierjob._calibration import CalibrationResult, Calibrator
from tierjob._errors import PublishError, StateError, TierJobError
from tierjob._lease import Lease
from tierjob._population import LeaseLost, Population, PopulationReader
from tierjob._publish import (
    RedisPublisher,
    SnapshotMovedOn,
    TopicPublisher,
    tier_boundaries_message,
)
from tierjob.config import Config

__all__ = [
    "CalibrationResult",
    "Calibrator",
    "Config",
    "Lease",
    "LeaseLost",
    "Population",
    "PopulationReader",
    "PublishError",
    "RedisPublisher",
    "SnapshotMovedOn",
    "StateError",
    "TierJobError",
    "TopicPublisher",
    "tier_boundaries_message",
]
