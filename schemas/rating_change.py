"""Rating change v1: emitted by the consumer to `rating-changes` (key = player).

See rating_change.md.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from schemas._checks import (
    check_finite,
    check_ids,
    check_size,
    decode_typed,
    required_fields,
    utf8_len_within,
)
from schemas._errors import Reason, SchemaError
from schemas._limits import MAX_ID_BYTES, MAX_LABEL_BYTES

VERSION: Final = 1

Role = Literal["attacker", "victim"]
ROLES: Final[tuple[Role, ...]] = ("attacker", "victim")

NO_SIGMA_MODEL: Final = "elo"
"""The one model that keeps no uncertainty: its changes carry sigma_after 0 (every other's > 0)."""

MAX_RATING_CHANGE_ID_BYTES: Final = MAX_ID_BYTES + 1 + max(len(r) for r in ROLES)
"""`<source_id>:<role>` is at most 64 + 1 + 8 = 73 bytes."""


def _id(description: str, max_bytes: int = MAX_ID_BYTES) -> msgspec.Meta:
    return msgspec.Meta(
        description=f"{description}; 1-{max_bytes} bytes of UTF-8",
        extra_json_schema={"minLength": 1, "maxLength": max_bytes},
    )


def _float(description: str) -> msgspec.Meta:
    return msgspec.Meta(description=f"{description}; finite float64")


_TIER = msgspec.Meta(
    description=f"tier label (1-{MAX_LABEL_BYTES} bytes of UTF-8, e.g. '1H'), nil = unplaced",
    extra_json_schema={"minLength": 1, "maxLength": MAX_LABEL_BYTES},
)


# gc=False: only strings and numbers, never part of a reference cycle (see KillEvent).
# omit_defaults: a change without a sequence (`seq` 0), epoch (`epoch` 0) or model (None: ADR)
# encodes exactly as before those fields existed.
class AdrRatingChange(msgspec.Struct, kw_only=True, frozen=True, gc=False, omit_defaults=True):
    """`RatingChange` without its last field, `model`: what a consumer of an ADR pool builds
    and encodes. Its bytes are RatingChange's with `model` at its default (omitted on the wire),
    and its construction does not pay for a field ADR never sets (consumer/_batch.py's hot
    path). Readers decode every change as RatingChange."""

    v: Annotated[Literal[1], msgspec.Meta(description="format version")]
    id: Annotated[
        str,
        _id("'<source_id>:<role>', stable across re-emission", MAX_RATING_CHANGE_ID_BYTES),
    ]
    player: Annotated[str, _id("player id; also the Kafka key")]
    role: Annotated[Role, msgspec.Meta(description="the player's role in the source event")]
    arena: Annotated[str, _id("arena of the source event")]
    source_id: Annotated[str, _id("id of the source kill event")]
    ts: Annotated[
        int,
        msgspec.Meta(
            description="source event time, ms since the Unix epoch",
            extra_json_schema={"minimum": 0},
        ),
    ]
    mu_before: Annotated[float, _float("stored μ before the event (pre-decay)")]
    mu_after: Annotated[float, _float("μ after the event")]
    sigma_after: Annotated[float, _float("σ after the event")]
    tier_before: Annotated[str | None, _TIER]
    tier_after: Annotated[str | None, _TIER]
    seq: Annotated[
        int,
        msgspec.Meta(
            description="the player's version after this change: per player 1, 2, 3, ... in the "
            "order the changes were applied; 0 = not known (a producer before seq)",
            extra_json_schema={"minimum": 0},
        ),
    ] = 0
    epoch: Annotated[
        int,
        msgspec.Meta(
            description="the rating pool's epoch when this change was written: raised (to at "
            "least the wall clock in ms) each time the consumer finds Redis holding less than it "
            "wrote and applies events again; readers order a player's changes by (epoch, seq); "
            "0 = no rewind yet (or a producer before epoch)",
            extra_json_schema={"minimum": 0},
        ),
    ] = 0


class RatingChange(AdrRatingChange, kw_only=True, frozen=True, gc=False, omit_defaults=True):
    """How one counted kill event changed one player's rating."""

    model: Annotated[
        str | None,
        msgspec.Meta(
            description="the rating pool's model when it is not ADR (elo, glicko2, trueskill, "
            "weng-lin; docs/models.md): mu_* and sigma_after are then that model's rating and "
            "uncertainty as its player hash holds them; nil/omitted = adr",
            extra_json_schema={"minLength": 1, "maxLength": MAX_LABEL_BYTES},
        ),
    ] = None


def change_order(change: RatingChange) -> tuple[int, int]:
    """How readers order one player's changes: (epoch, seq), the higher the newer
    (rating_change.md). A change at or below the last one applied is a duplicate or stale."""
    return (change.epoch, change.seq)


_DECODER: Final = msgspec.msgpack.Decoder(RatingChange)
_ENCODER: Final = msgspec.msgpack.Encoder()
_REQUIRED: Final = required_fields(RatingChange)


def rating_change_id(source_id: str, role: Role) -> str:
    """The stable id of the change a source event made to the player in `role`."""
    return f"{source_id}:{role}"


def rating_change(
    *,
    player: str,
    role: Role,
    arena: str,
    source_id: str,
    ts: int,
    mu_before: float,
    mu_after: float,
    sigma_after: float,
    tier_before: str | None,
    tier_after: str | None,
    seq: int = 0,
    epoch: int = 0,
    model: str | None = None,
) -> RatingChange:
    """A v1 rating change with its derived id (floats coerced to float64)."""
    return RatingChange(
        v=VERSION,
        id=rating_change_id(source_id, role),
        player=player,
        role=role,
        arena=arena,
        source_id=source_id,
        ts=ts,
        mu_before=float(mu_before),
        mu_after=float(mu_after),
        sigma_after=float(sigma_after),
        tier_before=tier_before,
        tier_after=tier_after,
        seq=seq,
        epoch=epoch,
        model=model,
    )


def decode_rating_change(raw: bytes | bytearray | memoryview) -> RatingChange:
    """Decode and validate one rating change; raise SchemaError with the reason otherwise."""
    check_size(raw)
    change = decode_typed(_DECODER, raw, _REQUIRED, VERSION)
    check_ids(
        (("player", change.player), ("arena", change.arena), ("source_id", change.source_id)),
        MAX_ID_BYTES,
    )
    if change.id != rating_change_id(change.source_id, change.role):
        raise SchemaError(Reason.BAD_ID, "id must be '<source_id>:<role>'")
    if change.ts < 0:
        raise SchemaError(Reason.TS_OUT_OF_RANGE, f"ts={change.ts} is negative")
    if change.seq < 0:
        raise SchemaError(Reason.BAD_VALUE, f"seq={change.seq} is negative")
    if change.epoch < 0:
        raise SchemaError(Reason.BAD_VALUE, f"epoch={change.epoch} is negative")
    check_finite(
        (
            ("mu_before", change.mu_before),
            ("mu_after", change.mu_after),
            ("sigma_after", change.sigma_after),
        )
    )
    model = change.model
    if model is not None and not utf8_len_within(model, MAX_LABEL_BYTES):
        raise SchemaError(Reason.BAD_VALUE, f"model must be 1-{MAX_LABEL_BYTES} bytes")
    if change.sigma_after < 0.0 or (change.sigma_after == 0.0 and model != NO_SIGMA_MODEL):
        raise SchemaError(
            Reason.BAD_VALUE, f"sigma_after must be > 0 (0 only for model {NO_SIGMA_MODEL!r})"
        )
    for name, tier in (("tier_before", change.tier_before), ("tier_after", change.tier_after)):
        if tier is not None and not utf8_len_within(tier, MAX_LABEL_BYTES):
            raise SchemaError(Reason.BAD_VALUE, f"{name} must be 1-{MAX_LABEL_BYTES} bytes")
    return change


def encode_rating_change(change: RatingChange) -> bytes:
    """Encode a rating change as a msgpack map; floats are always float64."""
    return _ENCODER.encode(change)
