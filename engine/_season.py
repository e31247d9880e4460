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

When (`SeasonSchedule`, `season_step`): season k + 1 starts at an event time T (`adr season
close`). A player takes the reset of season k + 1 at their first counted event with ts >= T, before
that event is rated; a player whose latest counted event time (the newest of `recent`, which keeps
the n_active largest counted times, so it is the largest ever counted) is below T and whose event
is at T or later crosses the start. That needs no field of its own: once that event is counted
the newest counted time is >= T for good, so the reset applies exactly once per player and
season, and a redo of the same event on the same stored state applies it again to the same
bits. A player crossing several starts at once (absent for a whole season) takes each reset in
order. A player with no counted event yet (new) takes none: it starts at the initial state. An
event with ts < T (late, within the lateness) takes none and is rated on the state as it is.
"""

from __future__ import annotations

import math
from typing import Final

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


class SeasonStart(msgspec.Struct, frozen=True, gc=False):
    """One season's start: from event time `start_ms` on, a player's first counted event takes
    `reset` toward `pool_mean` (m, fixed when the previous season was closed)."""

    id: str
    start_ms: int
    pool_mean: float
    reset: SeasonReset = SeasonReset()


class SeasonSchedule(msgspec.Struct, frozen=True, gc=False):
    """The seasons started after the pool's first one, by start time (the pool's `{ns}:seasons`
    record, `adr replay --seasons FILE`). `version` counts the closes that wrote it."""

    starts: tuple[SeasonStart, ...] = ()
    version: int = 0

    def __post_init__(self) -> None:
        previous: int | None = None
        for start in self.starts:
            if type(start.start_ms) is not int or not 0 <= start.start_ms < 2**53:
                raise ParamError(f"season {start.id!r}: start_ms must be an int in [0, 2**53)")
            if not math.isfinite(start.pool_mean):
                raise ParamError(f"season {start.id!r}: pool_mean must be finite")
            if previous is not None and start.start_ms <= previous:
                raise ParamError(f"season {start.id!r} must start after the season before it")
            previous = start.start_ms
        if self.version < 0:
            raise ParamError("a season schedule's version is >= 0")


NO_SEASONS: Final = SeasonSchedule()

SIGMA_RAISE_SHARE: Final = 2.0 / 7.0
"""The default `sigma_raise` of the models with an uncertainty, as a share of their initial one:
ADR's default, 100 of σ0 = 350 (SeasonReset), so each model's season raises it alike."""


def ladder_of(schedule: SeasonSchedule, ts: int) -> int:
    """The season an event at `ts` falls in: how many starts lie at or before `ts` (0: the
    pool's first season)."""
    k = 0
    for start in schedule.starts:
        if start.start_ms > ts:
            break
        k += 1
    return k


def season_start_ms(schedule: SeasonSchedule, ladder: int) -> int | None:
    """The event time season `ladder` started at (None for the first season: it has none)."""
    return None if ladder == 0 else schedule.starts[ladder - 1].start_ms


def season_step(
    state: PlayerState, ts: int, schedule: SeasonSchedule, params: Params
) -> PlayerState:
    """`state` as a counted event at `ts` rates it: after the soft reset of every season start
    it crosses (module docstring), or `state` itself (the same object) when it crosses none."""
    recent = state.recent
    if not recent:
        return state  # no counted event yet: starts fresh, no reset
    newest = recent[-1]
    for start in schedule.starts:
        if start.start_ms > ts:
            break
        if newest < start.start_ms:
            state = soft_reset(state, start.pool_mean, start.reset, params)
    return state


def toward_mean(mu: float, pool_mean: float, keep: float) -> float:
    """m + keep·(μ − m), in every model's own rating scale: one correctly rounded operation at a
    time, then kept between μ and m (exact min/max)."""
    moved = pool_mean + keep * (mu - pool_mean)
    # Rounding can carry m + keep·(μ − m) past μ (μ = 2e-115, m = 1, keep = 1 gives 0.0): keep it
    # between the two, so the reset never moves a rating away from the mean.
    return min(max(moved, min(mu, pool_mean)), max(mu, pool_mean))


def raised(sigma: float, sigma_raise: float) -> float:
    """√(σ² + c²): the uncertainty raised in quadrature (sqrt is correctly rounded)."""
    return math.sqrt(sigma * sigma + sigma_raise * sigma_raise)


def raised_capped(sigma: float, sigma_raise: float, cap: float) -> float:
    """The models' σ' = max(σ, min(√(σ² + c²), cap)): raised, at most to the model's initial
    uncertainty `cap`, and never lowered (a σ already above the cap, which Glicko-2's idle
    growth up to rd_max > rd0 can leave, stays as it is)."""
    return max(sigma, min(raised(sigma, sigma_raise), cap))


def reset_scalars(
    mu: float, sigma: float, pool_mean: float, reset: SeasonReset, params: Params
) -> tuple[float, float]:
    """(μ', σ') of the soft reset (module docstring), each one correctly rounded operation."""
    # toward_mean and raised, written out: ADR's reset runs on the consumer's compiled path
    moved = pool_mean + reset.keep * (mu - pool_mean)
    mu = min(max(moved, min(mu, pool_mean)), max(mu, pool_mean))
    sigma = math.sqrt(sigma * sigma + reset.sigma_raise * reset.sigma_raise)
    return (
        min(params.mu_max, max(params.mu_min, mu)),
        min(params.sigma_max, max(params.sigma_min, sigma)),
    )


def soft_reset(
    state: PlayerState, pool_mean: float, reset: SeasonReset, params: Params
) -> PlayerState:
    """The state a player starts a new season with (module docstring)."""
    mu, sigma = reset_scalars(state.mu, state.sigma, pool_mean, reset, params)
    return msgspec.structs.replace(
        state,
        mu=mu,
        sigma=sigma,
        streak=0,
        phi=0.0,
        h_up=0.0,
        h_down=0.0,
    )


def stored_season(schedule: SeasonSchedule, season: int, last_ts: int | None) -> int:
    """The season a model's player is in, read against `schedule`: the stored `season`, unless it
    lies past the schedule's last season (len(starts)), then the season of `last_ts`, its last
    counted kill's time (0 with none).

    Past the schedule: a stored number the schedule does not have (the schedule deleted or
    restored older than the players, a corrupt number). It is neither refused nor taken as is.
    Refused as corrupt state, every event of every player with a season would be dead-lettered
    after an operator deletes `{ns}:season_schedule` (the pool stops rating its veterans, where
    an ADR pool, which reads the season from the player's times, goes on). Taken as is, the
    player takes no reset until the schedule grows past the number: the seasons closed after the
    schedule was deleted restart at 1 and the player skips their resets. Read from `last_ts`
    (ADR's rule on the times the model keeps: the last counted time, not the largest, so a late
    event at a season's start can put it one season low), the player takes the resets of the
    starts after its last kill, as an ADR player does. A number within the schedule is taken as
    stored: nothing tells a stale one from a true one there."""
    if season <= len(schedule.starts):
        return season
    return 0 if last_ts is None else ladder_of(schedule, last_ts)


def seasons_crossed(
    schedule: SeasonSchedule, season: int, ts: int, last_ts: int | None
) -> tuple[int, tuple[SeasonStart, ...]]:
    """The rule of the models other than ADR, which store the season a player is in (the season
    of its largest counted event time, 0 by default) instead of reading it from `recent`: an
    event at `ts` in a later season than the player's (`stored_season` of `season` and
    `last_ts`) moves the player to it, through the starts it crosses (their resets, in order,
    for a player with a counted event); an event of the same or an earlier season (late, within
    the lateness) moves nothing and keeps the stored number, even one past the schedule (so a
    schedule restored later resets nobody twice). Returns (the season after the event, the
    starts crossed)."""
    current = stored_season(schedule, season, last_ts)
    target = ladder_of(schedule, ts)
    if target <= current:
        return season, ()
    return target, schedule.starts[current:target]
