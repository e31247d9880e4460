"""Elo (the seed article on the Elo rating system): each counted kill is one game the attacker
wins.

E_A = 1/(1 + 10^((R_B − R_A)/400)) (the seed's logistic, base 10); R_A' = R_A + K_A·(1 − E_A),
R_B' = R_B + K_B·(0 − (1 − E_A)), both from the ratings before the game. K is fixed, or one of the
seed's dynamic rules: FIDE (40 for the first 30 games, 20 while never rated 2400, then 10 for
good once a rating of at least 2400 was published after 30 games or more) or USCF
(K = 800/(N_e + m): m = 1, the kill is an event of one game; N_e = games so far, capped, since the
seed does not give USCF's N_e formula and an uncapped N_e freezes ratings). No idle-time rule:
Elo has no uncertainty to grow.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Final

import msgspec

from engine._model import HashFields
from engine._model_config import check
from engine._packed_state import ELO_ITEMS, packed_state, season_in_domain
from engine._season import (
    SeasonReset,
    SeasonSchedule,
    seasons_crossed,
    stored_season,
    toward_mean,
)
from engine._state import Snapshot
from engine._tiers import display_tier_step
from engine.params import TIER_COUNT

ELO: Final = "elo"
K_RULES: Final = ("fixed", "fide", "uscf")
EMPTY_WINDOW: Final = msgspec.msgpack.encode(())
"""The `window` hash value of a model without one: an empty msgpack array."""


_MAX_EXPONENT: Final = 300.0  # 10**300 is near the float limit: E is 0.0 beyond it


@dataclasses.dataclass(frozen=True, slots=True)
class EloConfig:
    """Elo's parameters: the seed's scale 400 and start 1500, and the K rule with its numbers."""

    initial: float = 1500.0
    scale: float = 400.0
    k_rule: str = "fixed"  # fixed | fide | uscf
    k: float = 32.0  # fixed: every game
    fide_games: int = 30  # fide: games with k_new
    k_new: float = 40.0
    k_regular: float = 20.0
    k_top: float = 10.0
    top_rating: float = 2400.0
    uscf_numerator: float = 800.0  # uscf: K = numerator / (min(games, cap) + 1)
    uscf_games_cap: int = 50
    tier_n_min: int = 15  # placed once n >= this (ADR's N_min)
    tier_h_req: float = 400.0  # §6.4's h_req in the model's rating points

    def __post_init__(self) -> None:
        check(
            [
                (self.scale > 0, "scale > 0"),
                (self.k_rule in K_RULES, f"k_rule is one of {', '.join(K_RULES)}"),
                (self.k >= 0, "k >= 0"),
                (self.fide_games >= 0, "fide_games >= 0"),
                (min(self.k_new, self.k_regular, self.k_top) >= 0, "FIDE's K values >= 0"),
                (self.uscf_numerator >= 0, "uscf_numerator >= 0"),
                (self.uscf_games_cap >= 0, "uscf_games_cap >= 0"),
                (self.tier_n_min >= 0, "tier_n_min >= 0"),
                (self.tier_h_req > 0, "tier_h_req > 0"),
            ],
            self,
        )


class EloState(msgspec.Struct, frozen=True, gc=False):
    """A player's Elo: rating, games (counted kills), last kill's time, and whether FIDE's
    permanent K of 10 applies (a rating >= top_rating published after fide_games games)."""

    rating: float
    n: int
    last_ts: int | None
    top: bool
    tier: int = 0
    """0 unplaced, 1..15 (§6 on the display rating: engine.display_tier_step)."""
    h_up: float = 0.0
    h_down: float = 0.0
    season: int = 0
    """The season of the player's largest counted event time (engine.seasons_crossed)."""


class EloOutcome(msgspec.Struct, frozen=True, gc=False):
    """`EloModel.rate`'s result (engine.Outcome)."""

    attacker: EloState
    victim: EloState
    p_ab: float
    sigma_units_delta: int


def expected_score(r_a: float, r_b: float, scale: float) -> float:
    """E_A = 1/(1 + 10^((R_B − R_A)/scale)), the seed's logistic (0.0 where 10^x overflows)."""
    exponent = (r_b - r_a) / scale
    if exponent > _MAX_EXPONENT:
        return 0.0
    return 1.0 / (1.0 + math.pow(10.0, exponent))


def k_factor(state: EloState, config: EloConfig) -> float:
    """The K of `state`'s next game under the config's rule."""
    rule = config.k_rule
    if rule == "fide":
        if state.n < config.fide_games:
            return config.k_new
        return config.k_top if state.top else config.k_regular
    if rule == "uscf":
        return config.uscf_numerator / (min(state.n, config.uscf_games_cap) + 1)
    return config.k


def reaches_top(games: int, rating: float, config: EloConfig) -> bool:
    """FIDE: a rating of at least top_rating published after fide_games games or more (every
    post-game rating is published here); from then on K is k_top for good."""
    return games >= config.fide_games and rating >= config.top_rating


def _after(
    state: EloState, rating: float, ts: int, config: EloConfig, snapshot: Snapshot
) -> EloState:
    n = state.n + 1
    top = state.top or reaches_top(n, rating, config)
    tier, h_up, h_down = display_tier_step(
        state.tier, state.h_up, state.h_down, rating, n, snapshot.boundaries,
        config.tier_n_min, config.tier_h_req,
    )  # fmt: skip
    return EloState(rating, n, ts, top, tier, h_up, h_down, state.season)


def season_reset(state: EloState, pool_mean: float, reset: SeasonReset) -> EloState:
    """A new season's soft reset (docs/models.md, "Seasons"): the rating toward the pool mean by
    `keep`; the tier hysteresis accumulators restart at 0. Elo has no uncertainty to raise, and
    `sigma_raise` is not used: the K rules read the games played (n) and FIDE's top flag, which
    are the player's history, not last season's form, so they are kept (a reset that lowered n
    would also unplace players and rewrite the counted kills readers show)."""
    return EloState(
        toward_mean(state.rating, pool_mean, reset.keep), state.n, state.last_ts, state.top,
        state.tier, 0.0, 0.0, state.season,
    )  # fmt: skip


class EloModel:
    """Elo behind engine.RatingModel; P(a kills b) = E_A."""

    def __init__(self, config: EloConfig) -> None:
        self.config = config
        self._new = EloState(rating=config.initial, n=0, last_ts=None, top=False)

    @property
    def name(self) -> str:
        return ELO

    def new_player(self) -> EloState:
        return self._new

    def units(self, state: EloState) -> int:
        return 0

    def predict(
        self, a: EloState, b: EloState, ts: int, total_units: int, count: int, snapshot: Snapshot
    ) -> float:
        return expected_score(a.rating, b.rating, self.config.scale)

    def rate(
        self,
        a: EloState,
        b: EloState,
        ts: int,
        total_units: int,
        count: int,
        snapshot: Snapshot,
        pair_last: int | None = None,
    ) -> EloOutcome:
        config = self.config
        e_a = expected_score(a.rating, b.rating, config.scale)
        k_a, k_b = k_factor(a, config), k_factor(b, config)
        rating_a = a.rating + k_a * (1.0 - e_a)
        rating_b = b.rating + k_b * (0.0 - (1.0 - e_a))
        return EloOutcome(
            attacker=_after(a, rating_a, ts, config, snapshot),
            victim=_after(b, rating_b, ts, config, snapshot),
            p_ab=e_a,
            sigma_units_delta=0,
        )

    def season_reset(self, state: EloState, pool_mean: float, reset: SeasonReset) -> EloState:
        return season_reset(state, pool_mean, reset)

    def season_step(self, state: EloState, ts: int, seasons: SeasonSchedule) -> EloState:
        season, crossed = seasons_crossed(seasons, state.season, ts, state.last_ts)
        if season == state.season:
            return state
        if state.n:
            for start in crossed:
                state = season_reset(state, start.pool_mean, start.reset)
        return msgspec.structs.replace(state, season=season)

    def in_season(self, state: EloState, seasons: SeasonSchedule, season: int) -> bool:
        return stored_season(seasons, state.season, state.last_ts) >= season

    def default_sigma_raise(self) -> float:
        return 0.0

    def display(self, state: EloState) -> float:
        return state.rating

    def tier(self, state: EloState) -> int:
        return state.tier

    def activity_time(self, state: EloState) -> int | None:
        return state.last_ts

    def to_fields(self, state: EloState) -> HashFields:
        """mu: the rating, sigma: 0 (Elo has none), tier, state: [top, h_up, h_down, season]
        (season left out while 0)."""
        return (
            state.rating, 0.0, state.n, state.last_ts, state.tier, EMPTY_WINDOW,
            packed_state(state.season, state.top, state.h_up, state.h_down),
        )  # fmt: skip

    def from_fields(self, fields: HashFields) -> EloState:
        rating, _sigma, n, last_ts, tier, window, packed = fields
        no_window(window)
        in_domain("rating", rating)
        flags = ELO_ITEMS.decode(packed)
        in_tiers(tier, flags.h_up, flags.h_down)
        season_in_domain(flags.season)
        return EloState(rating, n, last_ts, flags.top, tier, flags.h_up, flags.h_down, flags.season)


def no_window(window: bytes) -> None:
    """A model without ADR's window writes an empty one; anything else is another model's hash."""
    if window != EMPTY_WINDOW:
        raise ValueError("a window field in a hash of a model that keeps none")


def in_tiers(tier: int, h_up: float, h_down: float) -> None:
    """ValueError unless tier is 0..TIER_COUNT and the accumulators finite and >= 0."""
    if not 0 <= tier <= TIER_COUNT:
        raise ValueError(f"tier out of its domain: {tier!r}")
    for name, value in (("h_up", h_up), ("h_down", h_down)):
        if not (math.isfinite(value) and value >= 0.0):
            raise ValueError(f"{name} out of its domain: {value!r}")


def in_domain(name: str, value: float, positive: bool = False) -> None:
    """ValueError unless `value` is finite (and > 0 if `positive`): what a model never writes,
    refused at the codec before the formulas could raise something other than an
    ArithmeticError (math.log of 0, a square root of a negative number)."""
    if not math.isfinite(value) or (positive and not value > 0.0):
        raise ValueError(f"{name} out of its domain: {value!r}")
