"""The tier job: `adr calibrate` (population snapshot → Redis and `tier-boundaries`).
See docs/design.md, "Redis layout" (its key names, snapshot codec and fenced Lua scripts are
`redis_layout`'s); `adr leaderboard` is the `leaderboard` package.

Exceptions: `TierJobError` (root) ← `StateError` (Redis holds what cannot be read),
`PublishError` (the topic missed a message), `LeaseLost`, `SnapshotMovedOn`.
"""

from tierjob._errors import PublishError, StateError, TierJobError
from tierjob.calibration import CalibrationResult, Calibrator
from tierjob.config import Config
from tierjob.lease import Lease
from tierjob.population import LeaseLost, Population, PopulationReader
from tierjob.publish import RedisPublisher, SnapshotMovedOn, TopicPublisher, tier_boundaries_message

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
