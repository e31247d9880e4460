"""Elo with a fixed K and its dynamic-K variants (FIDE, USCF, the MOBA ladder of the seeds).

Each kill is one game: the attacker scores 1, the victim 0; both K factors and the expectation are
taken from the state before the game. Sources: `../shared/seeds/elo-rating-system.txt` (logistic
base-10 expectation, FIDE's K table, USCF's K = 800/(N_e + m)) and
`../shared/seeds/elo-in-moba-games.txt` (Eq. 5-8).

The expectation and the FIDE and USCF K rules are the engine's (engine/_elo.py, the `elo` model
of docs/models.md): one implementation, here on the evaluation's per-player dicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from engine import EloConfig, EloState, elo_expected_score, elo_k_factor, elo_reaches_top

ELO_SCALE = 400.0
ELO_INITIAL = 1500.0


@dataclass
class Elo:
    """Elo, one fixed K for all: R' = R + K·(S − E), E = 1/(1 + 10^((R_b − R_a)/scale))."""

    k: float = 32.0
    scale: float = ELO_SCALE
    initial: float = ELO_INITIAL
    name: str = ""
    ratings: dict[str, float] = field(default_factory=dict)
    games: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"elo-k{self.k:g}"

    def rating(self, player: str) -> float:
        return self.ratings.get(player, self.initial)

    def tier(self, player: str) -> int | None:
        return None

    def predict(self, a: str, b: str, ts: int) -> float:
        return elo_expected_score(self.rating(a), self.rating(b), self.scale)

    def k_factor(self, player: str) -> float:
        """The K this player's next game uses."""
        return self.k

    def update(self, a: str, b: str, ts: int) -> None:
        ra, rb = self.rating(a), self.rating(b)
        ka, kb = self.k_factor(a), self.k_factor(b)
        expected_a = elo_expected_score(ra, rb, self.scale)
        self.ratings[a] = ra + ka * (1.0 - expected_a)
        self.ratings[b] = rb + kb * (0.0 - (1.0 - expected_a))
        self.games[a] = self.games.get(a, 0) + 1
        self.games[b] = self.games.get(b, 0) + 1
        self._after_game(a)
        self._after_game(b)

    def _after_game(self, player: str) -> None:
        """Hook for variants whose K depends on history."""


@dataclass
class FideElo(Elo):
    """FIDE's K: 40 for the first 30 games, 20 while never rated 2400, 10 for good once 2400 is
    reached with at least 30 games (each kill is one game; the junior rule does not apply)."""

    provisional_games: int = 30
    k_new: float = 40.0
    k_regular: float = 20.0
    k_top: float = 10.0
    top_rating: float = 2400.0
    reached_top: set[str] = field(default_factory=set)
    config: EloConfig = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.name:
            self.name = "elo-fide"
        self.config = EloConfig(
            k_rule="fide",
            fide_games=self.provisional_games,
            k_new=self.k_new,
            k_regular=self.k_regular,
            k_top=self.k_top,
            top_rating=self.top_rating,
        )

    def k_factor(self, player: str) -> float:
        games = self.games.get(player, 0)
        state = EloState(self.rating(player), games, None, player in self.reached_top)
        return elo_k_factor(state, self.config)

    def _after_game(self, player: str) -> None:
        # "any published rating of at least 2400 and at least 30 games": every post-game rating
        # is published here; once both hold, K stays 10 for good.
        if elo_reaches_top(self.games.get(player, 0), self.rating(player), self.config):
            self.reached_top.add(player)


@dataclass
class UscfElo(Elo):
    """USCF's K = 800 / (N_e + m): m = 1 (each kill is an event of one game), N_e = games so far,
    capped at `effective_games_cap` (the seed does not give USCF's N_e formula; without a cap K
    falls towards 0 and ratings freeze)."""

    numerator: float = 800.0
    effective_games_cap: int = 50
    config: EloConfig = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.name:
            self.name = "elo-uscf"
        self.config = EloConfig(
            k_rule="uscf", uscf_numerator=self.numerator, uscf_games_cap=self.effective_games_cap
        )

    def k_factor(self, player: str) -> float:
        state = EloState(self.rating(player), self.games.get(player, 0), None, False)
        return elo_k_factor(state, self.config)


@dataclass
class MobaElo(Elo):
    """The MOBA seed's hidden ELO score (Eq. 5, Eq. 7): K = 35 − 5·floor(R/400), update scaled by
    PS/PS_T on a win and PS_T/PS on a loss. In a 1-vs-1 kill the "team" is the player alone, so
    PS = PS_T and the performance weight is exactly 1 (see `moba_performance_weight`)."""

    k_base: float = 35.0
    k_step: float = 5.0
    band: float = 400.0

    def __post_init__(self) -> None:
        if not self.name:
            self.name = "elo-moba"

    def k_factor(self, player: str) -> float:
        # Eq. 5 turns negative above 3200; a negative K would invert learning, so it stops at 0.
        return max(0.0, self.k_base - self.k_step * math.floor(self.rating(player) / self.band))


def moba_performance_weight(ps: float, ps_team: float, won: bool) -> float:
    """Eq. 7's factor: PS/PS_T on a win, PS_T/PS on a loss (1 when the team is the player alone)."""
    return ps / ps_team if won else ps_team / ps


@dataclass
class MobaLadder(Elo):
    """The MOBA seed's proposed ladder (Eq. 8): ±20·(performance weight) per game, independent of
    the expectation. With a weight of 1 in 1-vs-1 it counts 20·(kills − deaths); predictions use the
    Elo logistic on the ladder points, which Eq. 8 itself does not define."""

    step: float = 20.0

    def __post_init__(self) -> None:
        if not self.name:
            self.name = "ladder-moba"

    def update(self, a: str, b: str, ts: int) -> None:
        weight = moba_performance_weight(1.0, 1.0, won=True)
        self.ratings[a] = self.rating(a) + weight * self.step
        self.ratings[b] = self.rating(b) - moba_performance_weight(1.0, 1.0, won=False) * self.step
        self.games[a] = self.games.get(a, 0) + 1
        self.games[b] = self.games.get(b, 0) + 1
