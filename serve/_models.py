"""The API's answers (JSON; their schemas are in the OpenAPI document at /schema/openapi.json).
Evolution: fields are added, never renamed or re-typed, within /v1 (docs/api.md)."""

from __future__ import annotations

from typing import Literal

import msgspec

TiesName = Literal["unique", "shared"]
MetaValue = str | int | float | bool | None


class Row(msgspec.Struct, frozen=True):
    rank: int | None
    """1-based, by the answer's tie policy; null while the player is unplaced."""
    player: str
    mu: float
    tier: str | None
    meta: dict[str, MetaValue] | None = None
    """The studio's metadata of the player (`adr meta`; display_name, country, ...); null when
    it has none (docs/api.md, "Per-player metadata")."""


class TopPage(msgspec.Struct, frozen=True):
    ties: TiesName
    rows: list[Row]
    next_cursor: str | None
    """Pass as ?cursor= for the rows after this page; null when nothing followed it."""


class Rows(msgspec.Struct, frozen=True):
    ties: TiesName
    rows: list[Row]


class Point(msgspec.Struct, frozen=True):
    """One rating change: its order key (epoch, seq), event time and the state after it."""

    epoch: int
    seq: int
    ts: int
    mu: float
    sigma: float
    tier: str | None


class PlayerProfile(msgspec.Struct, frozen=True):
    ties: TiesName
    player: str
    rank: int | None
    mu: float
    sigma: float | None
    tier: str | None
    events: int
    last_seen_ms: int | None
    version: int
    history: list[Point]
    """The newest rating changes, oldest first (at most the server's history_points)."""
    meta: dict[str, MetaValue] | None = None
    """As in a Row."""


class TierRow(msgspec.Struct, frozen=True):
    tier: str
    players: int
    share: float
    target_share: float
    lower_bound: float | None
    """The tier's lowest μ (B_k); null for the last tier and before the first calibration."""


class Tiers(msgspec.Struct, frozen=True):
    placed: int
    tracked: int
    calibration_version: int
    computed_at_ms: int
    rows: list[TierRow]


class Problem(msgspec.Struct, frozen=True):
    """Every error answer: the status and why."""

    status_code: int
    detail: str


class Season(msgspec.Struct, frozen=True):
    id: str
    closed_at_ms: int
    players: int
    """Placed players archived."""


class CurrentSeason(msgspec.Struct, frozen=True):
    id: str
    started_at_ms: int


class Seasons(msgspec.Struct, frozen=True):
    current: CurrentSeason | None
    """Null until the first `adr season close`."""
    closed: list[Season]
    """Oldest first."""
