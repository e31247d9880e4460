"""The named settings of the generalization study, and their split.

Tuning settings are the only ones any ADR value is chosen on (with their own seeds, 100–104);
held-out settings are held out whole: no value was chosen by looking at them. Each held-out
setting combines features in a way no tuning setting does (Student-t outcomes, smurfs and the
heavy-tailed play rates appear in no tuning setting at all), so a profile that only fits the
tuning shapes shows it there. docs/evaluation.md ("Streams it was not tuned on") has the results.
"""

from __future__ import annotations

import dataclasses

from evaluation._errors import EvaluationError
from evaluation._generators import Setting

TUNING_SEEDS = (100, 101, 102, 103, 104)
REPORT_SEEDS = tuple(range(1, 11))

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "uniform-logistic",
        "tuning",
        "a fixed population, static skills, uniform pairs, logistic outcomes (the §10 shape)",
    ),
    Setting(
        "lobbies-drift-probit",
        "tuning",
        "lobbies of 8 by matchmaker rating, skills drifting 15 points per √day, probit outcomes",
        matchmaking="lobbies",
        drift=15.0,
        curve="probit",
    ),
    Setting(
        "churn-arctan",
        "tuning",
        "60% on day 0, the rest arriving; Pareto(1.5) lifetimes from 20 days; arctan outcomes",
        initial=0.6,
        lifetime_shape=1.5,
        curve="arctan",
        accounts=200,
    ),
    Setting(
        "learning-lobbies-random",
        "tuning",
        "newcomers 300 points below their skill, closing it over 20 days; lobbies; 10% "
        "coin-flip kills; logistic outcomes",
        initial=0.7,
        learning_gain=300.0,
        matchmaking="lobbies",
        random_share=0.10,
        accounts=180,
    ),
    Setting(
        "newcomer-stream",
        "held-out",
        "the issue's 'new user' stream: churn (40% on day 0, Pareto(1.2) lifetimes), lognormal "
        "play rates (σ 1), learning curves, 8% smurfs, lobbies, 10% coin-flip kills, "
        "Student-t(3) outcomes",
        initial=0.4,
        lifetime_shape=1.2,
        play_sigma=1.0,
        learning_gain=250.0,
        smurf_share=0.08,
        matchmaking="lobbies",
        random_share=0.10,
        curve="student-t",
        accounts=220,
    ),
    Setting(
        "drift-uniform-t",
        "held-out",
        "a fixed population with heavy-tailed play rates (σ 1.2) and drift of 25 per √day; "
        "uniform pairs; 5% coin-flip kills; Student-t(3) outcomes at scale 300",
        play_sigma=1.2,
        drift=25.0,
        random_share=0.05,
        curve="student-t",
        scale=300.0,
    ),
    Setting(
        "smurfs-lobbies-logistic",
        "held-out",
        "half the accounts arriving, 15% of them smurfs, Pareto(2) lifetimes, lobbies of 6, "
        "logistic outcomes at scale 300 (steeper than tuned on)",
        initial=0.5,
        lifetime_shape=2.0,
        smurf_share=0.15,
        matchmaking="lobbies",
        lobby_size=6,
        scale=300.0,
        accounts=200,
    ),
    Setting(
        "learning-probit-random",
        "held-out",
        "learning curves (400 points over 30 days), drift 10 per √day, lognormal play (σ 0.7), "
        "uniform pairs, 20% coin-flip kills, probit outcomes",
        initial=0.6,
        learning_gain=400.0,
        learning_days=30.0,
        drift=10.0,
        play_sigma=0.7,
        random_share=0.20,
        curve="probit",
        accounts=180,
    ),
)
BY_NAME = {s.name: s for s in SETTINGS}
# Three simulated years of the first held-out setting, for the mean's drift and μ_min.
LONG_DAYS = 3 * 365


def setting(name: str) -> Setting:
    """The named setting; EvaluationError for an unknown name."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise EvaluationError(f"unknown setting {name!r} (known: {', '.join(BY_NAME)})") from None


def split(which: str) -> tuple[Setting, ...]:
    """The tuning or the held-out settings."""
    return tuple(s for s in SETTINGS if s.split == which)


def long_setting(base: Setting, days: int = LONG_DAYS) -> Setting:
    """`base` over `days` days, with the same events per day and fewer accounts living longer."""
    return dataclasses.replace(
        base,
        name=f"{base.name}-long",
        days=days,
        events=round(base.events * days / base.days / 3),
        accounts=base.accounts,
        lifetime_min=base.lifetime_min * 4,
    )
