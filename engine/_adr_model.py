"""ADR as a `RatingModel`: today's functions (rate_kill, predict, activity_time, sigma_units),
called unchanged, so the model gives the same states bit for bit (docs/algorithm.md#steps,
steps 5–13).

Compiled with mypyc (runtime/compiled.py): a call adds one method call and nothing else, no
per-call object beyond rate_kill's own KillOutcome.
"""

from __future__ import annotations

from typing import Final

import msgspec
from msgspec.structs import astuple

from engine._kill import KillOutcome, predict, rate_kill
from engine._model import HashFields
from engine._season import SeasonReset, SeasonSchedule, season_start_ms, season_step, soft_reset
from engine._sigma import sigma_units
from engine._snapshot import activity_time
from engine._state import PlayerState, Snapshot, new_player
from engine.params import Params

ADR: Final = "adr"

_ENCODE: Final = msgspec.msgpack.Encoder().encode
_WINDOW: Final = msgspec.msgpack.Decoder(tuple[float, ...])
_PACKED: Final = msgspec.msgpack.Decoder(tuple[int, float, float, float, float, tuple[int, ...]])


class AdrModel:
    """The Adaptive Dynamic Rating (the paper, as docs/algorithm.md states it) with its `Params`."""

    def __init__(self, params: Params) -> None:
        self.params = params
        self._new = new_player(params)

    @property
    def name(self) -> str:
        return ADR

    def new_player(self) -> PlayerState:
        """§2.2: μ0, σ0, no history (one shared immutable state)."""
        return self._new

    def units(self, state: PlayerState) -> int:
        """σ·2**k, its share of S (§3.2)."""
        return sigma_units(state.sigma, self.params)

    def predict(
        self,
        a: PlayerState,
        b: PlayerState,
        ts: int,
        total_units: int,
        count: int,
        snapshot: Snapshot,
    ) -> float:
        """P_ab after both players' decay (§3, §5): engine.predict."""
        return predict(a, b, ts, total_units, count, snapshot, self.params)

    def rate(
        self,
        a: PlayerState,
        b: PlayerState,
        ts: int,
        total_units: int,
        count: int,
        snapshot: Snapshot,
        pair_last: int | None = None,
    ) -> KillOutcome:
        """Steps 5–13: engine.rate_kill."""
        return rate_kill(a, b, ts, total_units, count, snapshot, self.params, pair_last)

    def season_reset(self, state: PlayerState, pool_mean: float, reset: SeasonReset) -> PlayerState:
        """engine.soft_reset (μ, σ clamped to the Params' bounds; streak, φ, h_up, h_down 0)."""
        return soft_reset(state, pool_mean, reset, self.params)

    def season_step(self, state: PlayerState, ts: int, seasons: SeasonSchedule) -> PlayerState:
        """engine.season_step: ADR reads the player's season from `recent` (its newest entry is
        the largest counted time ever), so it stores no season of its own."""
        return season_step(state, ts, seasons, self.params)

    def in_season(self, state: PlayerState, seasons: SeasonSchedule, season: int) -> bool:
        start = season_start_ms(seasons, season)
        return start is None or (bool(state.recent) and state.recent[-1] >= start)

    def default_sigma_raise(self) -> float:
        """SeasonReset's default, 100 (of σ0 = 350)."""
        return SeasonReset().sigma_raise

    def display(self, state: PlayerState) -> float:
        """μ: ranks and tier boundaries are on μ (§6)."""
        return state.mu

    def tier(self, state: PlayerState) -> int:
        """The §6 tier the state carries (placement and hysteresis happen in `rate`)."""
        return state.tier

    def activity_time(self, state: PlayerState) -> int | None:
        """The n_active-th most recent counted time (§2.3)."""
        return activity_time(state, self.params)

    def to_fields(self, state: PlayerState) -> HashFields:
        """mu, sigma, n, last_ts, tier as they are; window as a msgpack array of float64 and the
        rest (streak, phi, pool, h_up, h_down, recent) as one msgpack array: the hash's layout 2
        (redis_layout/player_codec.py)."""
        mu, sigma, streak, phi, pool, n, last_ts, tier, h_up, h_down, window, recent = astuple(
            state
        )
        return (
            mu,
            sigma,
            n,
            last_ts,
            tier,
            _ENCODE(window),
            _ENCODE((streak, phi, pool, h_up, h_down, recent)),
        )

    def from_fields(self, fields: HashFields) -> PlayerState:
        """`to_fields`' inverse (msgspec.DecodeError if window or state is not ADR's)."""
        mu, sigma, n, last_ts, tier, window, packed = fields
        streak, phi, pool, h_up, h_down, recent = _PACKED.decode(packed)
        return PlayerState(
            mu=mu,
            sigma=sigma,
            streak=streak,
            phi=phi,
            pool=pool,
            n=n,
            last_ts=last_ts,
            tier=tier,
            h_up=h_up,
            h_down=h_down,
            window=_WINDOW.decode(window),
            recent=recent,
        )
