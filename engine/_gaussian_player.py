"""What TrueSkill and Weng–Lin share: a player believed to be N(μ, σ²), shown as μ − k·σ.

The two models keep the same per-player state (μ, σ, counted kills, the last one's time, the tier
and §6.4's accumulators on the display rating), the same display rating (the conservative
μ − k·σ), the same tier placement (engine.display_tier_step), activity time and hash codec; they
differ only in P(a kills b) and in the update. So both models derive from `GaussianModel` and
implement `predict` and `rate` only; each keeps its own state and outcome types (TrueSkillState,
WengLinState, ...: the public names), subclasses of the ones here without fields of their own.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

from engine._elo import EMPTY_WINDOW, in_domain, in_tiers, no_window
from engine._model import HashFields
from engine._packed_state import GAUSSIAN_ITEMS, packed_state, season_in_domain
from engine._season import (
    SIGMA_RAISE_SHARE,
    SeasonReset,
    SeasonSchedule,
    raised_capped,
    seasons_crossed,
    stored_season,
    toward_mean,
)
from engine._state import Snapshot
from engine._tiers import display_tier_step


class GaussianState(msgspec.Struct, frozen=True, gc=False):
    """A player's belief N(μ, σ²), counted kills and the last one's time."""

    mu: float
    sigma: float
    n: int
    last_ts: int | None
    tier: int = 0
    """0 unplaced, 1..15 (§6 on the display rating: engine.display_tier_step)."""
    h_up: float = 0.0
    h_down: float = 0.0
    season: int = 0
    """The season of the player's largest counted event time (engine.seasons_crossed)."""


G = TypeVar("G", bound=GaussianState)


class GaussianModel(Generic[G]):
    """The shared half of a Gaussian model behind engine.RatingModel: new players, the display
    rating and tiers, the activity time and the codec. A subclass adds `name`, `predict` and
    `rate`, and builds its players' next states with `placed`."""

    def __init__(
        self,
        state_type: type[G],
        mu: float,
        sigma: float,
        display_k: float,
        tier_n_min: int,
        tier_h_req: float,
    ) -> None:
        self._state_type = state_type
        self._display_k = display_k
        self._tier_n_min = tier_n_min
        self._tier_h_req = tier_h_req
        self._sigma0 = sigma
        self._new = state_type(mu=mu, sigma=sigma, n=0, last_ts=None)

    def new_player(self) -> G:
        return self._new

    def units(self, state: G) -> int:
        return 0

    def display(self, state: G) -> float:
        """μ − k·σ (OpenSkill's `ordinal`, the trueskill package's `expose`, with z = k)."""
        return state.mu - self._display_k * state.sigma

    def tier(self, state: G) -> int:
        return state.tier

    def activity_time(self, state: G) -> int | None:
        return state.last_ts

    def placed(self, old: G, mu: float, sigma: float, ts: int, snapshot: Snapshot) -> G:
        """The state after one more counted kill at ts with belief N(mu, sigma²), with its tier
        (engine.display_tier_step on its display rating)."""
        n = old.n + 1
        tier, h_up, h_down = display_tier_step(
            old.tier, old.h_up, old.h_down, mu - self._display_k * sigma, n, snapshot.boundaries,
            self._tier_n_min, self._tier_h_req,
        )  # fmt: skip
        return self._state_type(mu, sigma, n, ts, tier, h_up, h_down, old.season)

    def season_reset(self, state: G, pool_mean: float, reset: SeasonReset) -> G:
        return season_reset(state, pool_mean, reset, self._sigma0)

    def season_step(self, state: G, ts: int, seasons: SeasonSchedule) -> G:
        season, crossed = seasons_crossed(seasons, state.season, ts, state.last_ts)
        if season == state.season:
            return state
        if state.n:
            for start in crossed:
                state = season_reset(state, start.pool_mean, start.reset, self._sigma0)
        return msgspec.structs.replace(state, season=season)

    def in_season(self, state: G, seasons: SeasonSchedule, season: int) -> bool:
        return stored_season(seasons, state.season, state.last_ts) >= season

    def default_sigma_raise(self) -> float:
        return self._sigma0 * SIGMA_RAISE_SHARE

    def to_fields(self, state: G) -> HashFields:
        """mu: μ, sigma: σ, tier; window: empty; state: [h_up, h_down, season] (season left out
        while 0)."""
        return (
            state.mu, state.sigma, state.n, state.last_ts, state.tier, EMPTY_WINDOW,
            packed_state(state.season, state.h_up, state.h_down),
        )  # fmt: skip

    def from_fields(self, fields: HashFields) -> G:
        mu, sigma, n, last_ts, tier, window, packed = fields
        no_window(window)
        items = GAUSSIAN_ITEMS.decode(packed)
        h_up, h_down = items.h_up, items.h_down
        in_domain("mu", mu)
        in_domain("sigma", sigma, positive=True)
        in_tiers(tier, h_up, h_down)
        season_in_domain(items.season)
        return self._state_type(mu, sigma, n, last_ts, tier, h_up, h_down, items.season)


def season_reset(state: G, pool_mean: float, reset: SeasonReset, sigma0: float) -> G:
    """TrueSkill's and Weng–Lin's soft reset at a new season (docs/models.md, "Seasons"): μ toward
    the pool mean by `keep`, σ raised in quadrature by `sigma_raise` up to the initial σ0 (never
    lowered), the tier hysteresis accumulators at 0; counted kills, last time and tier kept."""
    return type(state)(
        toward_mean(state.mu, pool_mean, reset.keep),
        raised_capped(state.sigma, reset.sigma_raise, sigma0),
        state.n, state.last_ts, state.tier, 0.0, 0.0, state.season,
    )  # fmt: skip


class GaussianOutcome(msgspec.Struct, Generic[G], frozen=True, gc=False):
    """A Gaussian model's `rate` result (engine.Outcome)."""

    attacker: G
    victim: G
    p_ab: float
    sigma_units_delta: int
