"""Glicko-2 (Glickman, "Example of the Glicko-2 system"), each counted kill one rating period.

The attacker's period holds one game won against the victim as the victim was before it, and the
victim's one game lost against the attacker as before it (`rate_period`: Glickman's steps 2–8,
the Illinois iteration for σ' with his ε). P(a kills b) = 1/(1 + e^(−g(√(φ_a² + φ_b²))·(μ_a −
μ_b))), both deviations in one g (Glickman's expected outcome of a game between two rated
players).

Idle time: before a player's kill at ts, each whole `period_ms` since its last counted kill is a
rating period without games (step 6 alone: φ ← √(φ² + σ²)), all k of them at once as
φ ← √(φ² + k·σ²), capped at `rd_max`; `period_ms = 0`: no growth between kills. Then the kill's
own period (whose step 6 grows φ once more before the game's information shrinks it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Final

import msgspec

from engine._elo import EMPTY_WINDOW, in_domain, in_tiers, no_window
from engine._model import HashFields
from engine._model_config import check
from engine._packed_state import GLICKO2_ITEMS, packed_state, season_in_domain
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
from engine.params import MS_PER_DAY

GLICKO2: Final = "glicko2"
SCALE: Final = 173.7178  # Glickman's step 2: μ = (r − 1500)/173.7178, φ = RD/173.7178
CENTER: Final = 1500.0
MAX_ITERATIONS: Final = 1000  # the Illinois iteration stops long before (a handful of steps)


@dataclasses.dataclass(frozen=True, slots=True)
class Glicko2Config:
    """Glicko-2's parameters: Glickman's start (1500, RD 350, σ 0.06), τ, ε, the idle period."""

    initial: float = 1500.0
    rd0: float = 350.0
    volatility0: float = 0.06
    tau: float = 0.5  # the system constant (Glickman: 0.3 to 1.2)
    epsilon: float = 0.000001  # the iteration's convergence tolerance (step 5)
    period_ms: int = MS_PER_DAY  # idle time: one empty rating period per whole period_ms
    rd_max: float = 350.0  # idle growth stops at this RD
    display_k: float = 0.0  # display rating r − display_k·RD
    tier_n_min: int = 15  # placed once n >= this (ADR's N_min)
    tier_h_req: float = 400.0  # §6.4's h_req in the model's rating points

    def __post_init__(self) -> None:
        check(
            [
                (self.rd0 > 0, "rd0 > 0"),
                (self.volatility0 > 0, "volatility0 > 0"),
                (self.tau > 0, "tau > 0"),
                (self.epsilon > 0, "epsilon > 0"),
                (self.period_ms >= 0, "period_ms >= 0"),
                (self.rd_max >= self.rd0, "rd_max >= rd0"),
                (self.display_k >= 0, "display_k >= 0"),
                (self.tier_n_min >= 0, "tier_n_min >= 0"),
                (self.tier_h_req > 0, "tier_h_req > 0"),
            ],
            self,
        )


class Glicko2State(msgspec.Struct, frozen=True, gc=False):
    """A player's Glicko-2 on the Glicko scale: rating r, deviation RD, volatility σ; counted
    kills and the last one's time (the idle rule's start)."""

    rating: float
    rd: float
    volatility: float
    n: int
    last_ts: int | None
    tier: int = 0
    """0 unplaced, 1..15 (§6 on the display rating: engine.display_tier_step)."""
    h_up: float = 0.0
    h_down: float = 0.0
    season: int = 0
    """The season of the player's largest counted event time (engine.seasons_crossed)."""


class Glicko2Outcome(msgspec.Struct, frozen=True, gc=False):
    """`Glicko2Model.rate`'s result (engine.Outcome)."""

    attacker: Glicko2State
    victim: Glicko2State
    p_ab: float
    sigma_units_delta: int


def g(phi: float) -> float:
    """Step 3: g(φ) = 1/√(1 + 3φ²/π²)."""
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def expected(mu: float, mu_j: float, phi_j: float) -> float:
    """Step 3: E(μ, μ_j, φ_j) = 1/(1 + exp(−g(φ_j)(μ − μ_j)))."""
    return 1.0 / (1.0 + math.exp(-g(phi_j) * (mu - mu_j)))


def new_volatility(
    phi: float, sigma: float, v: float, delta: float, tau: float, eps: float
) -> float:
    """Step 5: σ' by the Illinois iteration on f (Glickman's 5.1–5.5)."""
    a = math.log(sigma * sigma)
    phi2 = phi * phi
    tau2 = tau * tau

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta * delta - phi2 - v - ex) / (2.0 * (phi2 + v + ex) ** 2) - (x - a) / tau2

    big_a = a
    if delta * delta > phi2 + v:
        big_b = math.log(delta * delta - phi2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0 and k < MAX_ITERATIONS:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    for _ in range(MAX_ITERATIONS):
        if abs(big_b - big_a) <= eps:
            break
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a = f_a / 2.0
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2.0)


def rate_period(
    rating: float,
    rd: float,
    volatility: float,
    games: Sequence[tuple[float, float, float]],
    tau: float,
    epsilon: float,
) -> tuple[float, float, float]:
    """Glickman's steps 2–8 for one player over one rating period: (r', RD', σ') from r, RD, σ
    and the period's games (opponent's r, opponent's RD, score 0/½/1). No games: step 6 alone."""
    mu = (rating - CENTER) / SCALE
    phi = rd / SCALE
    if not games:
        return rating, math.sqrt(phi * phi + volatility * volatility) * SCALE, volatility
    inv_v = 0.0
    gain = 0.0
    for r_j, rd_j, score in games:
        mu_j = (r_j - CENTER) / SCALE
        phi_j = rd_j / SCALE
        g_j = g(phi_j)
        e_j = expected(mu, mu_j, phi_j)
        inv_v += g_j * g_j * e_j * (1.0 - e_j)
        gain += g_j * (score - e_j)
    v = 1.0 / inv_v
    sigma = new_volatility(phi, volatility, v, v * gain, tau, epsilon)
    phi_star = math.sqrt(phi * phi + sigma * sigma)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    mu_new = mu + phi_new * phi_new * gain
    return SCALE * mu_new + CENTER, SCALE * phi_new, sigma


def idle_rd(state: Glicko2State, ts: int, config: Glicko2Config) -> float:
    """RD at ts: k = whole period_ms since the last kill, each an empty period (step 6),
    φ ← √(φ² + k·σ²), capped at rd_max; unchanged for a new player, k = 0 or period_ms = 0."""
    last = state.last_ts
    period = config.period_ms
    if last is None or period == 0 or ts - last < period:
        return state.rd
    k = (ts - last) // period
    phi = state.rd / SCALE
    grown = math.sqrt(phi * phi + k * state.volatility * state.volatility) * SCALE
    return min(grown, config.rd_max)


def season_reset(
    state: Glicko2State, pool_mean: float, reset: SeasonReset, config: Glicko2Config
) -> Glicko2State:
    """A new season's soft reset (docs/models.md, "Seasons"): r toward the pool mean by `keep`,
    RD raised in quadrature by `sigma_raise` up to rd0 (never lowered), the tier hysteresis
    accumulators at 0. The volatility σ, the counted kills and the last kill's time (the idle
    rule's start) are kept: the volatility is the player's long-run consistency, not form."""
    return Glicko2State(
        toward_mean(state.rating, pool_mean, reset.keep),
        raised_capped(state.rd, reset.sigma_raise, config.rd0),
        state.volatility, state.n, state.last_ts, state.tier, 0.0, 0.0, state.season,
    )  # fmt: skip


def win_probability(r_a: float, rd_a: float, r_b: float, rd_b: float) -> float:
    """P(a beats b) = E((r_a − r_b)/173.7178, 0, √(φ_a² + φ_b²))."""
    phi_a, phi_b = rd_a / SCALE, rd_b / SCALE
    return expected((r_a - r_b) / SCALE, 0.0, math.sqrt(phi_a * phi_a + phi_b * phi_b))


class Glicko2Model:
    """Glicko-2 behind engine.RatingModel."""

    def __init__(self, config: Glicko2Config) -> None:
        self.config = config
        self._new = Glicko2State(
            rating=config.initial, rd=config.rd0, volatility=config.volatility0, n=0, last_ts=None
        )

    @property
    def name(self) -> str:
        return GLICKO2

    def new_player(self) -> Glicko2State:
        return self._new

    def units(self, state: Glicko2State) -> int:
        return 0

    def predict(
        self,
        a: Glicko2State,
        b: Glicko2State,
        ts: int,
        total_units: int,
        count: int,
        snapshot: Snapshot,
    ) -> float:
        config = self.config
        return win_probability(a.rating, idle_rd(a, ts, config), b.rating, idle_rd(b, ts, config))

    def rate(
        self,
        a: Glicko2State,
        b: Glicko2State,
        ts: int,
        total_units: int,
        count: int,
        snapshot: Snapshot,
        pair_last: int | None = None,
    ) -> Glicko2Outcome:
        config = self.config
        rd_a, rd_b = idle_rd(a, ts, config), idle_rd(b, ts, config)
        p = win_probability(a.rating, rd_a, b.rating, rd_b)
        tau, eps = config.tau, config.epsilon
        r_a, new_rd_a, vol_a = rate_period(
            a.rating, rd_a, a.volatility, ((b.rating, rd_b, 1.0),), tau, eps
        )
        r_b, new_rd_b, vol_b = rate_period(
            b.rating, rd_b, b.volatility, ((a.rating, rd_a, 0.0),), tau, eps
        )
        return Glicko2Outcome(
            attacker=self._placed(a, Glicko2State(r_a, new_rd_a, vol_a, a.n + 1, ts), snapshot),
            victim=self._placed(b, Glicko2State(r_b, new_rd_b, vol_b, b.n + 1, ts), snapshot),
            p_ab=p,
            sigma_units_delta=0,
        )

    def _placed(self, old: Glicko2State, new: Glicko2State, snapshot: Snapshot) -> Glicko2State:
        """`new` with its tier (engine.display_tier_step on its display rating)."""
        config = self.config
        tier, h_up, h_down = display_tier_step(
            old.tier, old.h_up, old.h_down, self.display(new), new.n, snapshot.boundaries,
            config.tier_n_min, config.tier_h_req,
        )  # fmt: skip
        return Glicko2State(
            new.rating, new.rd, new.volatility, new.n, new.last_ts, tier, h_up, h_down, old.season
        )

    def season_reset(
        self, state: Glicko2State, pool_mean: float, reset: SeasonReset
    ) -> Glicko2State:
        return season_reset(state, pool_mean, reset, self.config)

    def season_step(self, state: Glicko2State, ts: int, seasons: SeasonSchedule) -> Glicko2State:
        season, crossed = seasons_crossed(seasons, state.season, ts, state.last_ts)
        if season == state.season:
            return state
        if state.n:
            for start in crossed:
                state = season_reset(state, start.pool_mean, start.reset, self.config)
        return msgspec.structs.replace(state, season=season)

    def in_season(self, state: Glicko2State, seasons: SeasonSchedule, season: int) -> bool:
        return stored_season(seasons, state.season, state.last_ts) >= season

    def default_sigma_raise(self) -> float:
        return self.config.rd0 * SIGMA_RAISE_SHARE

    def display(self, state: Glicko2State) -> float:
        return state.rating - self.config.display_k * state.rd

    def tier(self, state: Glicko2State) -> int:
        return state.tier

    def activity_time(self, state: Glicko2State) -> int | None:
        return state.last_ts

    def to_fields(self, state: Glicko2State) -> HashFields:
        """mu: r, sigma: RD, tier, state: [σ (volatility), h_up, h_down, season] (season left
        out while 0)."""
        return (
            state.rating, state.rd, state.n, state.last_ts, state.tier, EMPTY_WINDOW,
            packed_state(state.season, state.volatility, state.h_up, state.h_down),
        )  # fmt: skip

    def from_fields(self, fields: HashFields) -> Glicko2State:
        rating, rd, n, last_ts, tier, window, packed = fields
        no_window(window)
        items = GLICKO2_ITEMS.decode(packed)
        volatility, h_up, h_down = items.volatility, items.h_up, items.h_down
        in_domain("rating", rating)
        in_domain("rd", rd, positive=True)
        in_domain("volatility", volatility, positive=True)
        in_tiers(tier, h_up, h_down)
        season_in_domain(items.season)
        return Glicko2State(rating, rd, volatility, n, last_ts, tier, h_up, h_down, items.season)
