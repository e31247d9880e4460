"""The rating model seam: what a pool's rating algorithm owns, behind one typed Protocol.

ADR is one model (engine/_adr_model.py); the others (Elo, Glicko-2, TrueSkill, Weng–Lin) each
live in a file of their own, as openskill.py keeps one model per module. A model owns:

- its per-player state (a frozen msgspec Struct, `S`) and a new player's (`new_player`);
- the prediction P(a kills b) for an event at ts (`predict`) and the update for one counted kill
  (`rate`), both given the pool's aggregates, which the caller keeps and passes as plain
  arguments (no per-call object: the consumer's hot path is compiled): S (`total_units`, the exact
  σ-sum in units, including a and b), P (`count`, tracked players, including a and b) and the
  snapshot in force (μ̄_A, the boundaries). A model that does not need them ignores them;
- each player's share of S (`units`): the caller keeps S as the sum of it over tracked players
  and adds `Outcome.sigma_units_delta` after each kill (0 for models without a pool aggregate);
- the display rating that ranks and tiers use (`display`), its tier (`tier`, 0 unplaced) and the
  activity time the active set reads (`activity_time`, §2.3 for ADR);
- the codec of its state to and from the player hash's values (`to_fields`, `from_fields`):
  `HashFields`, what redis_layout/player_codec.py writes as text and msgpack.

Everything is exact and deterministic: integer ms times, pure float math in a fixed order, so
replay and consumer, pure and compiled builds give bit-identical states.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from engine._season import SeasonReset, SeasonSchedule
from engine._state import Snapshot

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)

HashFields = tuple[float, float, int, int | None, int, bytes, bytes]
"""A player's hash values before their text form (layout 2 of redis_layout/player_codec.py):
mu, sigma, n, last_ts, tier, window (msgpack), state (msgpack). `mu`, `sigma`, `n`, `last_ts` and
`tier` are what readers use (the model's rating and uncertainty, its counted kills and the last
one's time, its tier); `window` and `state` hold the rest of the model's state, packed."""


class Outcome(Protocol[S_co]):
    """What `RatingModel.rate` returns: both new states, the P(a kills b) the update used, and the
    change of S (the pool's exact σ-sum in units; 0 for models without one)."""

    @property
    def attacker(self) -> S_co: ...

    @property
    def victim(self) -> S_co: ...

    @property
    def p_ab(self) -> float: ...

    @property
    def sigma_units_delta(self) -> int: ...


class RatingModel(Protocol[S]):
    """A rating model over kill events "a kills b at ts" (ts: int ms), one model per pool."""

    @property
    def name(self) -> str:
        """The registry name (`adr`, `elo`, `glicko2`, `trueskill`, `weng-lin`)."""
        ...

    def new_player(self) -> S:
        """The state of a player the pool has not tracked yet."""
        ...

    def units(self, state: S) -> int:
        """The player's share of S, the pool's exact σ-sum in units (0: the model keeps none)."""
        ...

    def predict(
        self, a: S, b: S, ts: int, total_units: int, count: int, snapshot: Snapshot
    ) -> float:
        """P(a kills b) as a counted event at ts would use it; S and P include a and b."""
        ...

    def rate(
        self,
        a: S,
        b: S,
        ts: int,
        total_units: int,
        count: int,
        snapshot: Snapshot,
        pair_last: int | None = None,
    ) -> Outcome[S]:
        """Apply one counted kill "a kills b at ts"; S and P include a and b at their stored
        state. `pair_last`: the pair's last counted a→b time (ADR's opt-in repeat_window)."""
        ...

    def season_reset(self, state: S, pool_mean: float, reset: SeasonReset) -> S:
        """A new season's soft reset in the model's own scale (docs/models.md, "Seasons"): the
        rating toward `pool_mean` by `reset.keep`, the uncertainty raised in quadrature by
        `reset.sigma_raise` up to the model's initial one, the tier hysteresis at 0."""
        ...

    def season_step(self, state: S, ts: int, seasons: SeasonSchedule) -> S:
        """`state` as a counted event at ts rates it: after the soft reset of every season start
        it crosses, exactly once per player and season whatever the order of the events (late
        ones included), or `state` itself (the same object) when it crosses none."""
        ...

    def in_season(self, state: S, seasons: SeasonSchedule, season: int) -> bool:
        """Whether the player's largest counted event time is in season `season` or a later one
        (the live board of season `season` ranks it)."""
        ...

    def default_sigma_raise(self) -> float:
        """`sigma_raise` when the operator names none: the same share of the initial
        uncertainty as ADR's 100 of 350 (0 for Elo, which has none)."""
        ...

    def display(self, state: S) -> float:
        """The rating ranks and tiers use (higher is better)."""
        ...

    def tier(self, state: S) -> int:
        """The player's tier: 0 unplaced, 1..15 = TIER_LABELS[tier - 1]."""
        ...

    def activity_time(self, state: S) -> int | None:
        """The time (ms) the player's activity counts from for the active set, None: inactive."""
        ...

    def to_fields(self, state: S) -> HashFields:
        """The player's hash values (before their text form), `from_fields`' inverse."""
        ...

    def from_fields(self, fields: HashFields) -> S:
        """The state `to_fields` wrote, bit for bit; ValueError (or msgspec.DecodeError, a
        ValueError) if the packed fields are not this model's."""
        ...
