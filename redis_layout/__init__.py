"""The Redis layout of a rating pool, with one owner (docs/design.md, "Redis layout").

- `Keys` (keys.py): every key name, hash-tagged `{ns}`. Nothing else writes a key name.
- player_codec.py: a player's hash <-> PlayerState (the consumer's hot path; compiled).
- layout.py: the pool's layout version `{ns}:layout`, stamped by the consumer, checked by readers.
- pool_model.py: the pool's rating model `{ns}:model`, stamped by the consumer, which refuses a
  pool that records another model (`ModelMismatch`); readers read its name.
- snapshot_codec.py: the `{ns}:snapshot` hash <-> Snapshot (`encode_snapshot`, `decode_snapshot`).
- scripts/: the Lua scripts (the consumer's atomic batch write, the tier job's fenced writes and
  paged read of μ over A,
  the leaderboard's read around a player).
- event_ids.py: the consumer's event-id rule and, with the engine's RatingBook, every rule that
  decides whether a kill counts, offline (`CountingRules`: `adr replay`, `adr evaluate --events`).
- apply_contract.py: the positions of the consumer's atomic write (its KEYS, argument sections and
  a player's items), declared once: apply.lua's header is generated from it.
- raw.py: pipelined reads and writes on one pooled connection without redis-py's per-argument
  packing and reply callbacks.

The consumer, the tier job, the leaderboard reader and the benches use it.

Exceptions: `LayoutError` (root) ← `CorruptValue` (a value read back that its codec cannot
decode), `Conflict` (the write script found a value the batch was computed from changed),
`UnknownLayout` (`{ns}:layout` holds a version this release does not know), `ModelMismatch`
(`{ns}:model` records another model or other parameters) ← `PoolRebuilding` (`adr rebuild` is
writing the namespace: no model to check yet), `BadMeta` (per-player metadata that
breaks a limit of redis_layout.meta_codec, or is not a JSON object of scalars),
`UnknownMetaVersion` (a stored metadata value of a version this release does not know).
"""

from redis_layout._errors import Conflict, CorruptValue, LayoutError
from redis_layout.keys import Keys
from redis_layout.layout import (
    LAYOUT_VERSION,
    UnknownLayout,
    check_layout,
    stamp_layout,
)
from redis_layout.pool_model import (
    ModelMismatch,
    PoolRebuilding,
    model_stamp,
    pool_model,
    pool_model_parameters,
    stamp_model,
)
from redis_layout.snapshot_codec import decode_snapshot, encode_snapshot

__all__ = [
    "LAYOUT_VERSION",
    "Conflict",
    "CorruptValue",
    "Keys",
    "LayoutError",
    "ModelMismatch",
    "PoolRebuilding",
    "UnknownLayout",
    "check_layout",
    "decode_snapshot",
    "encode_snapshot",
    "model_stamp",
    "pool_model",
    "pool_model_parameters",
    "stamp_layout",
    "stamp_model",
]
