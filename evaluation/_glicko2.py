"""Glicko-2 (Glickman, "Example of the Glicko-2 system", 2012), each kill one rating period.

`rate_period` is Glickman's steps 1-8 verbatim (Illinois iteration for the volatility). The
`Glicko2` system rates each kill as a rating period of one game for its two players, both rated
from the other's pre-game values. Idle time counts too: a player away for k whole days has k empty
periods applied first (φ ← sqrt(φ² + k·σ²), Glickman's step 6 for a period without games), capped
at the initial RD. Without that, Glicko-2 would be blind to absences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from evaluation._errors import EvaluationError

GLICKO_SCALE = 173.7178
DAY_MS = 86_400_000


@dataclass(frozen=True)
class GlickoRating:
    """A player on the Glicko scale: rating r, deviation RD, volatility σ."""

    r: float = 1500.0
    rd: float = 350.0
    vol: float = 0.06


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _expect(mu: float, mu_j: float, phi_j: float) -> float:
    return 1.0 / (1.0 + math.exp(-_g(phi_j) * (mu - mu_j)))


def _new_volatility(
    phi: float, vol: float, v: float, delta: float, tau: float, epsilon: float
) -> float:
    """Step 5: the Illinois algorithm for σ'."""
    a = math.log(vol * vol)

    def f(x: float) -> float:
        ex = math.exp(x)
        num = ex * (delta * delta - phi * phi - v - ex)
        den = 2.0 * (phi * phi + v + ex) ** 2
        return num / den - (x - a) / (tau * tau)

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    for _ in range(200):
        if abs(big_b - big_a) <= epsilon:
            break
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0
        big_b, f_b = big_c, f_c
    else:  # pragma: no cover - the iteration converges in a handful of steps
        raise EvaluationError("Glicko-2 volatility iteration did not converge")
    return math.exp(big_a / 2.0)


def rate_period(
    player: GlickoRating,
    results: list[tuple[GlickoRating, float]],
    tau: float = 0.5,
    epsilon: float = 1e-6,
) -> GlickoRating:
    """One rating period (Glickman 2012, steps 2-8); `results` holds (opponent, score 0/½/1)."""
    mu = (player.r - 1500.0) / GLICKO_SCALE
    phi = player.rd / GLICKO_SCALE
    if not results:
        idle_rd = math.sqrt(phi * phi + player.vol**2) * GLICKO_SCALE
        return GlickoRating(player.r, idle_rd, player.vol)
    inv_v = 0.0
    gain = 0.0
    for opponent, score in results:
        mu_j = (opponent.r - 1500.0) / GLICKO_SCALE
        phi_j = opponent.rd / GLICKO_SCALE
        g_j = _g(phi_j)
        e_j = _expect(mu, mu_j, phi_j)
        inv_v += g_j * g_j * e_j * (1.0 - e_j)
        gain += g_j * (score - e_j)
    v = 1.0 / inv_v
    vol = _new_volatility(phi, player.vol, v, v * gain, tau, epsilon)
    phi_star = math.sqrt(phi * phi + vol * vol)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    mu_new = mu + phi_new * phi_new * gain
    return GlickoRating(GLICKO_SCALE * mu_new + 1500.0, GLICKO_SCALE * phi_new, vol)


def win_probability(a: GlickoRating, b: GlickoRating) -> float:
    """P(a beats b) with both deviations: 1/(1 + exp(−g(sqrt(φa² + φb²))·(μa − μb)))."""
    phi = math.hypot(a.rd, b.rd) / GLICKO_SCALE
    return _expect((a.r - b.r) / GLICKO_SCALE, 0.0, phi)


@dataclass
class Glicko2:
    """Glicko-2 with τ = 0.5 by default. `period_days = 0`: each kill is its own rating period for
    its two players, idle whole days as empty periods. `period_days > 0`: kills are collected in
    periods of that length (from the first event) and every player with games is rated at the
    period's end against the opponents' pre-period ratings (Glickman's batch form); idle whole
    periods are empty periods. Predictions and visible ratings use the last completed period."""

    tau: float = 0.5
    period_days: float = 0.0
    initial: GlickoRating = field(default_factory=GlickoRating)
    name: str = "glicko2"
    players: dict[str, GlickoRating] = field(default_factory=dict)
    last_ts: dict[str, int] = field(default_factory=dict)
    _pending: dict[str, list[tuple[GlickoRating, float]]] = field(default_factory=dict)
    _origin: int | None = None
    _period: int = 0

    @property
    def _idle_unit_ms(self) -> int:
        return round(self.period_days * DAY_MS) if self.period_days > 0 else DAY_MS

    def _current(self, player: str, ts: int) -> GlickoRating:
        """The player's rating with the empty periods of its idle whole days/periods applied."""
        state = self.players.get(player, self.initial)
        last = self.last_ts.get(player)
        if last is None or ts <= last:
            return state
        idle = (ts - last) // self._idle_unit_ms
        if idle == 0:
            return state
        phi = state.rd / GLICKO_SCALE
        phi_idle = math.sqrt(phi * phi + idle * state.vol * state.vol)
        return GlickoRating(state.r, min(phi_idle * GLICKO_SCALE, self.initial.rd), state.vol)

    def rating(self, player: str) -> float:
        return self.players.get(player, self.initial).r

    def tier(self, player: str) -> int | None:
        return None

    def predict(self, a: str, b: str, ts: int) -> float:
        self._close_periods(ts)
        return win_probability(self._current(a, ts), self._current(b, ts))

    def update(self, a: str, b: str, ts: int) -> None:
        if self.period_days <= 0:
            ra, rb = self._current(a, ts), self._current(b, ts)
            self.players[a] = rate_period(ra, [(rb, 1.0)], self.tau)
            self.players[b] = rate_period(rb, [(ra, 0.0)], self.tau)
            self.last_ts[a] = ts
            self.last_ts[b] = ts
            return
        self._close_periods(ts)
        ra, rb = self._current(a, ts), self._current(b, ts)
        self._pending.setdefault(a, []).append((rb, 1.0))
        self._pending.setdefault(b, []).append((ra, 0.0))

    def _close_periods(self, ts: int) -> None:
        """Rate everyone with games in the current period once ts lies past its end."""
        if self.period_days <= 0:
            return
        if self._origin is None:
            self._origin = ts
        period = (ts - self._origin) // self._idle_unit_ms
        if period <= self._period:
            return
        end = self._origin + (self._period + 1) * self._idle_unit_ms
        for player, results in self._pending.items():
            self.players[player] = rate_period(self._current(player, end - 1), results, self.tau)
            self.last_ts[player] = end - 1
        self._pending = {}
        self._period = period
