"""The published snapshot as the fields of the `{ns}:snapshot` hash (docs/design.md).

Fields: `version` (int, +1 per publication), `computed_at` (int ms, wall clock), `active_count`
(int), `mean_mu_active` (repr of the float), `boundaries` (a JSON array of the 14 floats, each
written as its repr, or the empty string before the first calibration with |A| >= p_min; `null`
is read as none too). Floats round-trip exactly.

This is the one codec of the hash: the tier job writes it with `encode_snapshot`; the tier job,
the consumer (`consumer._store`) and anyone else read it with `decode_snapshot`, which checks what
the tier-boundaries message's decoder checks (schemas/tier_boundaries.py): version >= 1,
computed_at and active_count >= 0, finite numbers, exactly 14 non-increasing boundaries. Anything
else is a CorruptValue (`what` = "snapshot"; the tier job reports it as its StateError).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from typing import Any

from engine import TIER_LABELS, Snapshot
from redis_layout._errors import CorruptValue

FIELDS = ("version", "computed_at", "active_count", "mean_mu_active", "boundaries")
BOUNDARY_COUNT = len(TIER_LABELS) - 1


def encode_boundaries(boundaries: tuple[float, ...] | None) -> str:
    """'' (none yet) or a JSON array of shortest round-trip reprs (json writes floats with repr)."""
    return "" if boundaries is None else json.dumps([float(b) for b in boundaries])


def encode_snapshot(snapshot: Snapshot) -> dict[str, str]:
    """The hash fields of `snapshot`, all but `version` (the publish script assigns it)."""
    return {
        "computed_at": str(snapshot.taken_at if snapshot.taken_at is not None else 0),
        "active_count": str(snapshot.active_count),
        "mean_mu_active": repr(float(snapshot.mean_mu_active)),
        "boundaries": encode_boundaries(snapshot.boundaries),
    }


def decode_snapshot(fields: Mapping[Any, Any], key: str = "") -> tuple[int, Snapshot] | None:
    """(version, snapshot) from HGETALL `{ns}:snapshot` (named `key` in a CorruptValue); None when
    nothing was published yet."""
    text = {_text(k): _text(v) for k, v in fields.items()}
    if not text:
        return None
    try:
        version = int(text["version"])
        snapshot = Snapshot(
            taken_at=int(text["computed_at"]),
            mean_mu_active=float(text["mean_mu_active"]),
            boundaries=_decode_boundaries(text["boundaries"]),
            active_count=int(text["active_count"]),
        )
    except (KeyError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        detail = f"unreadable snapshot hash {text!r}: {exc}"
        raise CorruptValue("snapshot", key, detail) from exc
    if not math.isfinite(snapshot.mean_mu_active):
        detail = f"snapshot mean_mu_active is not finite: {text['mean_mu_active']!r}"
        raise CorruptValue("snapshot", key, detail)
    if version < 1 or (snapshot.taken_at or 0) < 0 or snapshot.active_count < 0:
        detail = f"snapshot version, computed_at or active_count out of range: {text!r}"
        raise CorruptValue("snapshot", key, detail)
    return version, snapshot


def _decode_boundaries(raw: str) -> tuple[float, ...] | None:
    value = json.loads(raw) if raw.strip() else None
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != BOUNDARY_COUNT:
        raise ValueError(f"boundaries must be null or {BOUNDARY_COUNT} numbers")
    if not all(isinstance(b, int | float) and not isinstance(b, bool) for b in value):
        raise ValueError("boundaries must be numbers")
    bounds = tuple(float(b) for b in value)
    if not all(math.isfinite(b) for b in bounds):
        raise ValueError("boundaries must be finite")
    if any(hi < lo for hi, lo in itertools.pairwise(bounds)):
        raise ValueError("boundaries must be non-increasing")
    return bounds


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
