"""Tier boundaries v1: the tier job's snapshot on the compacted topic `tier-boundaries`.

See tier_boundaries.md.
"""

from __future__ import annotations

import itertools
import math
from typing import Annotated, Final, Literal

import msgspec

from schemas._checks import (
    check_finite,
    check_size,
    decode_typed,
    required_fields,
    utf8_len_within,
)
from schemas._errors import Reason, SchemaError
from schemas._limits import MAX_LABEL_BYTES

VERSION: Final = 1

_SHARES_SUM_TOLERANCE: Final = 1e-9
"""Shares are float64 images of exact fractions; their sum may miss 1 by a few ulps."""


class TierBoundaries(msgspec.Struct, kw_only=True, frozen=True):
    """A published population snapshot: μ̄_A and the tier boundaries B_1 ≥ … ≥ B_{K−1}."""

    v: Annotated[Literal[1], msgspec.Meta(description="format version")]
    version: Annotated[
        int,
        msgspec.Meta(
            description="snapshot number, increases by 1 per publication",
            extra_json_schema={"minimum": 1},
        ),
    ]
    computed_at: Annotated[
        int,
        msgspec.Meta(
            description="wall-clock time of the snapshot, ms since the Unix epoch",
            extra_json_schema={"minimum": 0},
        ),
    ]
    active_count: Annotated[
        int,
        msgspec.Meta(
            description="|A|, players in the active set", extra_json_schema={"minimum": 0}
        ),
    ]
    mean_mu_active: Annotated[float, msgspec.Meta(description="μ̄_A; finite float64")]
    boundaries: Annotated[
        list[float] | None,
        msgspec.Meta(
            description="B_1..B_{K-1}, non-increasing, finite float64; nil until |A| >= p_min"
        ),
    ]
    labels: Annotated[
        list[
            Annotated[
                str, msgspec.Meta(extra_json_schema={"minLength": 1, "maxLength": MAX_LABEL_BYTES})
            ]
        ],
        msgspec.Meta(
            description=f"the K tier labels, best first, each 1-{MAX_LABEL_BYTES} bytes",
            extra_json_schema={"minItems": 2},
        ),
    ]
    tier_shares: Annotated[
        list[float],
        msgspec.Meta(description="target share of each tier, best first; K values > 0, sum 1"),
    ]


_DECODER: Final = msgspec.msgpack.Decoder(TierBoundaries)
_ENCODER: Final = msgspec.msgpack.Encoder()
_REQUIRED: Final = required_fields(TierBoundaries)


def tier_boundaries(
    *,
    version: int,
    computed_at: int,
    active_count: int,
    mean_mu_active: float,
    boundaries: list[float] | tuple[float, ...] | None,
    labels: list[str] | tuple[str, ...],
    tier_shares: list[float] | tuple[float, ...],
) -> TierBoundaries:
    """A v1 tier-boundaries message (floats coerced to float64)."""
    return TierBoundaries(
        v=VERSION,
        version=version,
        computed_at=computed_at,
        active_count=active_count,
        mean_mu_active=float(mean_mu_active),
        boundaries=None if boundaries is None else [float(b) for b in boundaries],
        labels=list(labels),
        tier_shares=[float(q) for q in tier_shares],
    )


def decode_tier_boundaries(raw: bytes | bytearray | memoryview) -> TierBoundaries:
    """Decode and validate one tier-boundaries message; raise SchemaError otherwise."""
    check_size(raw)
    snap = decode_typed(_DECODER, raw, _REQUIRED, VERSION)
    if snap.version < 1 or snap.active_count < 0:
        raise SchemaError(Reason.BAD_VALUE, "version must be >= 1 and active_count >= 0")
    if snap.computed_at < 0:
        raise SchemaError(Reason.TS_OUT_OF_RANGE, f"computed_at={snap.computed_at} is negative")
    check_finite([("mean_mu_active", snap.mean_mu_active)])
    tiers = len(snap.labels)
    if tiers < 2:
        raise SchemaError(Reason.BAD_VALUE, "labels must name at least 2 tiers")
    if len(set(snap.labels)) != tiers or not all(
        utf8_len_within(label, MAX_LABEL_BYTES) for label in snap.labels
    ):
        raise SchemaError(
            Reason.BAD_VALUE, f"labels must be distinct, each 1-{MAX_LABEL_BYTES} bytes"
        )
    if len(snap.tier_shares) != tiers:
        raise SchemaError(Reason.BAD_VALUE, f"tier_shares must have {tiers} values")
    check_finite(("tier_shares", q) for q in snap.tier_shares)
    if any(q <= 0.0 for q in snap.tier_shares) or (
        abs(math.fsum(snap.tier_shares) - 1.0) > _SHARES_SUM_TOLERANCE
    ):
        raise SchemaError(Reason.BAD_VALUE, "tier_shares must be > 0 and sum to 1")
    if snap.boundaries is not None:
        bounds = snap.boundaries
        if len(bounds) != tiers - 1:
            raise SchemaError(Reason.BAD_VALUE, f"boundaries must have {tiers - 1} values")
        check_finite(("boundaries", b) for b in bounds)
        if any(hi < lo for hi, lo in itertools.pairwise(bounds)):
            raise SchemaError(Reason.BAD_VALUE, "boundaries must be non-increasing")
    return snap


def encode_tier_boundaries(snap: TierBoundaries) -> bytes:
    """Encode a tier-boundaries message as a msgpack map; floats are always float64."""
    return _ENCODER.encode(snap)
