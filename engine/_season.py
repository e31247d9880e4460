"""The soft reset of a player's state at a new season (issue #32; not in the paper, which has no
seasons: an extension of ours, docs/api.md "Seasons").

At the player's first counted event of a new season, before that event is rated, the state moves
part of the way back toward the pool mean and its uncertainty rises, so last season's standing
carries over in part and the new season's first events move the rating faster:

    μ' = clamp(m + keep·(μ − m), μ_min, μ_max)        m: the pool mean at the season's close
    σ' = clamp(√(σ² + c²), σ_min, σ_max)              c: `sigma_raise`

and the short-term dynamics of the last season end: the kill streak, the trend φ and the tier
hysteresis accumulators (h_up, h_down) restart at 0. The counters and records that are history,
not form (n, last_ts, the tier, the window of |Δμ|, the recent event times, the returning-player
pool), are kept. Each operation is one IEEE-754 operation, correctly rounded (sqrt included), so
the result is the same bits in every replay, compiled or not.

Applying it exactly once per player and season is the caller's (the consumer's) part: the
player's state must record the season it was last reset for.
"""

from __future__ import annotations

import math

import msgspec

from engine._errors import ParamError
from engine._state import PlayerState
from engine.params import Params


class SeasonReset(msgspec.Struct, frozen=True, gc=False):
    """How much of last season a player keeps."""

    keep: float = 0.5
    """The share of the distance from the pool mean μ keeps (1: all, 0: everyone at the mean)."""
    sigma_raise: float = 100.0
    """c: σ' = √(σ² + c²), the uncertainty added (rating points, in quadrature)."""

    def __post_init__(self) -> None:
        if not (0.0 <= self.keep <= 1.0):
            raise ParamError(f"season keep must be in [0, 1], got {self.keep!r}")
        if not (math.isfinite(self.sigma_raise) and self.sigma_raise >= 0.0):
            raise ParamError(
                f"season sigma_raise must be finite and >= 0, got {self.sigma_raise!r}"
            )


def soft_reset(
    state: PlayerState, pool_mean: float, reset: SeasonReset, params: Params
) -> PlayerState:
    """The state a player starts a new season with (module docstring)."""
    mu = pool_mean + reset.keep * (state.mu - pool_mean)
    sigma = math.sqrt(state.sigma * state.sigma + reset.sigma_raise * reset.sigma_raise)
    return msgspec.structs.replace(
        state,
        mu=min(params.mu_max, max(params.mu_min, mu)),
        sigma=min(params.sigma_max, max(params.sigma_min, sigma)),
        streak=0,
        phi=0.0,
        h_up=0.0,
        h_down=0.0,
    )
