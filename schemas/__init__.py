"""Versioned wire formats of adr-stream (msgpack maps), decoders built once, limits on decode.

Each format has a document (``<format>.md``) and a JSON Schema (``<format>.v1.schema.json``)
generated from its Struct by ``python -m schemas``.

Exceptions: `SchemaError` (root and only one; its `reason` is a `Reason`, the dead-letter reason).
"""

from schemas._errors import Reason, SchemaError
from schemas._limits import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_AGE_MS,
    DEFAULT_MAX_FUTURE_MS,
    MAX_ID_BYTES,
    MAX_LABEL_BYTES,
    MAX_MESSAGE_BYTES,
    Limits,
)
from schemas.kill_event import (
    KillEvent,
    check_key,
    decode_kill_event,
    encode_kill_event,
    kill_event,
)
from schemas.rating_change import (
    MAX_RATING_CHANGE_ID_BYTES,
    ROLES,
    RatingChange,
    Role,
    change_order,
    decode_rating_change,
    encode_rating_change,
    rating_change,
    rating_change_id,
)
from schemas.tier_boundaries import (
    TierBoundaries,
    decode_tier_boundaries,
    encode_tier_boundaries,
    tier_boundaries,
)

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_AGE_MS",
    "DEFAULT_MAX_FUTURE_MS",
    "MAX_ID_BYTES",
    "MAX_LABEL_BYTES",
    "MAX_MESSAGE_BYTES",
    "MAX_RATING_CHANGE_ID_BYTES",
    "ROLES",
    "KillEvent",
    "Limits",
    "RatingChange",
    "Reason",
    "Role",
    "SchemaError",
    "TierBoundaries",
    "change_order",
    "check_key",
    "decode_kill_event",
    "decode_rating_change",
    "decode_tier_boundaries",
    "encode_kill_event",
    "encode_rating_change",
    "encode_tier_boundaries",
    "kill_event",
    "rating_change",
    "rating_change_id",
    "tier_boundaries",
]
