"""Baselines tuned within their published ranges, and the factories of every evaluated system.

Each tuned family has a grid; every grid point runs the protocol on a tuning stream (its own seed,
never one of the report's seeds) and the point with the lowest held-out log loss is chosen, per
outcome model. Ranges: Elo K from FIDE's 10 to its 40 (Wikipedia, "Elo rating system");
Glicko-2 τ over Glickman's "reasonable choices between 0.3 and 1.2" and the rating period as one
kill or one day; TrueSkill β and τ around the package defaults (β = σ0/2, τ = σ0/100; the
TrueSkill paper gives no range) from β = σ0/4 to σ0 and τ = σ0/100 or σ0/25.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine import Params, profile_overrides
from evaluation._adr_system import AdrSystem
from evaluation._elo import Elo, FideElo, MobaElo, MobaLadder, UscfElo
from evaluation._glicko2 import Glicko2
from evaluation._systems import RatingSystem
from evaluation._trueskill_system import TS_SIGMA, TrueSkill

GRIDS: dict[str, list[dict[str, float]]] = {
    "elo": [{"k": k} for k in (10.0, 16.0, 24.0, 32.0, 40.0)],
    "glicko2": [
        {"tau": tau, "period_days": period} for tau in (0.3, 0.6, 0.9, 1.2) for period in (0.0, 1.0)
    ],
    "trueskill": [
        {"beta": beta, "tau": tau}
        for beta in (TS_SIGMA / 4.0, TS_SIGMA / 2.0, TS_SIGMA)
        for tau in (TS_SIGMA / 100.0, TS_SIGMA / 25.0)
    ],
}
# tuned system name -> the family whose chosen grid point it uses
TUNED = {"elo-tuned": "elo", "glicko2-tuned": "glicko2", "trueskill-tuned": "trueskill"}


def family_system(family: str, values: dict[str, float], name: str = "") -> RatingSystem:
    """One grid point of a tuned family as a rating system."""
    if family == "elo":
        return Elo(k=values["k"], name=name or f"elo-k{values['k']:g}")
    if family == "glicko2":
        return Glicko2(tau=values["tau"], period_days=values["period_days"], name=name or "g2")
    if family == "trueskill":
        return TrueSkill(beta=values["beta"], tau=values["tau"], name=name or "ts")
    raise KeyError(family)


def describe(family: str, values: dict[str, float]) -> str:
    """A grid point in words, for the report."""
    if family == "elo":
        return f"K = {values['k']:g}"
    if family == "glicko2":
        period = "one kill" if values["period_days"] == 0 else f"{values['period_days']:g} day"
        return f"τ = {values['tau']:g}, rating period {period}"
    return f"β = {values['beta']:.3g}, τ = {values['tau']:.3g} (σ0 = {TS_SIGMA:.3g})"


# name -> (what it is, factory taking the ADR parameters)
SYSTEMS: dict[str, tuple[str, Callable[[Params], RatingSystem]]] = {
    "adr": ("ADR, engine.RatingBook (cooldown 60 s, calibration hourly)", lambda p: AdrSystem(p)),
    "adr-no-cooldown": (
        "ADR with t_cooldown = 0 (ablation: what the cooldown does)",
        lambda p: AdrSystem(p.with_overrides({"t_cooldown": 0}), name="adr-no-cooldown"),
    ),
    "adr-no-decay": (
        "ADR with τ = 10⁶ days (ablation: decay toward μ̄_A on every gap > 0)",
        lambda p: AdrSystem(p.with_overrides({"tau": 1_000_000}), name="adr-no-decay"),
    ),
    "elo-k32": ("Elo, K = 32, logistic base 10, scale 400, start 1500", lambda p: Elo(k=32.0)),
    "elo-k16": ("Elo, K = 16", lambda p: Elo(k=16.0)),
    "elo-fide": ("dynamic K, FIDE: 40 / 20 / 10 (2400 reached)", lambda p: FideElo()),
    "elo-uscf": ("dynamic K, USCF: 800/(N_e + 1), N_e = games, capped at 50", lambda p: UscfElo()),
    "elo-uscf-nocap": (
        "dynamic K, USCF without the cap (N_e = all games: K → 0, the alternative reading)",
        lambda p: UscfElo(effective_games_cap=10**9, name="elo-uscf-nocap"),
    ),
    "elo-moba": ("MOBA seed Eq. 5/7: K = 35 − 5·floor(R/400), weight 1", lambda p: MobaElo()),
    "ladder-moba": ("MOBA seed Eq. 8: ±20 per kill (weight 1)", lambda p: MobaLadder()),
    "glicko2": ("Glicko-2, τ = 0.5, one kill per period, idle days", lambda p: Glicko2()),
    "trueskill": ("TrueSkill package, 1-vs-1, no draws, default β, τ", lambda p: TrueSkill()),
}
# Opt-in extensions beyond the paper (engine.Params switches, default off): run only when asked
# for with --systems, so the default report stays the paper's.
EXTENSIONS: dict[str, tuple[str, dict[str, str]]] = {
    "adr-bounded-return": (
        "ADR + bound_return_decay = 1 (the decay at a return moves μ by at most Δmax)",
        {"bound_return_decay": "1"},
    ),
    "adr-zero-sum": (
        "ADR + zero_sum_update = 1 (the victim loses what the attacker gains)",
        {"zero_sum_update": "1"},
    ),
    "adr-soft-floor": (
        "ADR + floor_margin = 120 (a fall at d < 120 above μ_min is scaled by d/120)",
        {"floor_margin": "120"},
    ),
    "adr-repeat-window": (
        "ADR + repeat_window = 600 s (a pair's repeat kill moves μ by min(1, gap/600 s))",
        {"repeat_window": "600"},
    ),
    "adr-decay-grace": (
        "ADR + decay_grace = 7 days (the §5 decay acts on max(0, gap − 7 days))",
        {"decay_grace": "7"},
    ),
    "adr-logistic-link": (
        "ADR + logistic_link = 1 (P_ab = 1/(1 + e^−z), z = (4/π)(μ_a − μ_b)/D: the arctangent's "
        "slope at 1/2, light tails)",
        {"logistic_link": "1"},
    ),
    "adr-recommended": (
        "ADR, --profile recommended: bound_return_decay, zero_sum_update, floor_margin = 120, "
        "repeat_window = 600 s, decay_grace = 7 days, logistic_link and θ = 150",
        profile_overrides("recommended"),
    ),
    "adr-recommended-arctan": (
        "the recommended profile with the paper's arctangent link at θ = 100 (the profile "
        "before logistic_link: what the link adds)",
        {**profile_overrides("recommended"), "logistic_link": "0", "theta": "100"},
    ),
    "adr-recommended-theta400": (
        "the recommended profile with the paper's θ = 400 (what θ = 100 adds)",
        {**profile_overrides("recommended"), "theta": "400"},
    ),
}


def _extension(name: str, switches: dict[str, str]) -> Callable[[Params], RatingSystem]:
    return lambda p: AdrSystem(p.with_overrides(switches), name=name)


for _name, (_what, _switches) in EXTENSIONS.items():
    SYSTEMS[_name] = (_what, _extension(_name, _switches))

TUNED_DESCRIPTIONS = {
    "elo-tuned": "Elo, K tuned over 10–40 (chosen value below)",
    "glicko2-tuned": "Glicko-2, τ over 0.3–1.2 and period one kill / one day, tuned",
    "trueskill-tuned": "TrueSkill, β over σ0/4–σ0 and τ σ0/100 or σ0/25, tuned",
}
ALL_SYSTEMS = [*SYSTEMS, *TUNED]
DEFAULT_SYSTEMS = [s for s in ALL_SYSTEMS if s not in EXTENSIONS]


def make_system(name: str, params: Params, tuned: dict[str, dict[str, float]]) -> RatingSystem:
    """The named system; a tuned one takes its family's chosen grid point from `tuned`."""
    if name in TUNED:
        return family_system(TUNED[name], tuned[TUNED[name]], name=name)
    return SYSTEMS[name][1](params)


def description(name: str, tuned: dict[str, dict[str, float]] | None = None) -> str:
    if name in TUNED:
        chosen = (tuned or {}).get(TUNED[name])
        base = TUNED_DESCRIPTIONS[name]
        return base if chosen is None else f"{base}: {describe(TUNED[name], chosen)}"
    return SYSTEMS[name][0]


def jsonable_grid() -> dict[str, Any]:
    return {family: grid for family, grid in GRIDS.items()}
