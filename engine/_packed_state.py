"""The `state` field of the models other than ADR (a msgpack array, redis_layout/player_codec.py
layout 2): each model's items, then the player's season when it is not 0 (engine/_season.py's
`seasons_crossed`), so a hash written before seasons existed, or of a pool without them, keeps
its bytes and decodes as season 0.

Kept out of the compiled modules (runtime/compiled.py) on purpose: mypyc drops a class's keyword
arguments, and these Structs need `array_like=True` (a trailing field with a default may be
absent from the array); compiled, they decoded as maps and every stored player was refused.
"""

from __future__ import annotations

from typing import Final

import msgspec

_ENCODE: Final = msgspec.msgpack.Encoder().encode


class EloItems(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """Elo's `state`: [top, h_up, h_down(, season)]."""

    top: bool
    h_up: float
    h_down: float
    season: int = 0


class Glicko2Items(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """Glicko-2's `state`: [σ (volatility), h_up, h_down(, season)]."""

    volatility: float
    h_up: float
    h_down: float
    season: int = 0


class GaussianItems(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """TrueSkill's and Weng–Lin's `state`: [h_up, h_down(, season)]."""

    h_up: float
    h_down: float
    season: int = 0


ELO_ITEMS: Final = msgspec.msgpack.Decoder(EloItems)
GLICKO2_ITEMS: Final = msgspec.msgpack.Decoder(Glicko2Items)
GAUSSIAN_ITEMS: Final = msgspec.msgpack.Decoder(GaussianItems)


def packed_state(season: int, *items: bool | float) -> bytes:
    """A model's `state` field: its items and, when not 0, the season."""
    return _ENCODE((*items, season) if season else items)


def season_in_domain(season: int) -> None:
    """ValueError unless the stored season number is >= 0."""
    if season < 0:
        raise ValueError(f"season out of its domain: {season!r}")
