"""Generate the rating models' reference vectors from outside the code under test.

    .venv/bin/pip install -e '.[vectors]'   # trueskill, openskill, mpmath (not runtime deps)
    .venv/bin/python tests/engine/vectors/generate.py

Writes, next to this file (committed; tests/engine/test_engine_models_vectors.py reads them):
  trueskill.json  the `trueskill` package's rate_1vs1 (draw_probability 0) with its mpmath
                  backend, and its builtin backend beside it (the package's own float spread);
  weng_lin.json   openskill's PlackettLuce.rate / BradleyTerryFull.rate on [[winner], [loser]];
  glicko2.json    Glickman's worked example ("Example of the Glicko-2 system"), as printed;
  elo.json        the Elo seed article's examples (Wikipedia's "Elo rating system"), as
                  printed (rounded as the article rounds them).
Cases are single games from a fixed grid plus seeded chains of games among a few players (each
chain's states come from the reference only). Floats are written with repr: exact.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import trueskill
from openskill.models import BradleyTerryFull, PlackettLuce

HERE = Path(__file__).resolve().parent
GRID_MU = (25.0, 0.0, 10.0, 33.3, 40.0, -5.0, 60.0)
GRID_SIGMA = (25.0 / 3.0, 1.0, 4.0, 0.5, 12.0)
SEED = 20261205


Pair = tuple[float, float]


def _pairs() -> list[tuple[float, float, float, float]]:
    rng = random.Random(SEED)
    pairs = [(25.0, 25.0 / 3.0, 25.0, 25.0 / 3.0)]
    for mu_a in GRID_MU:
        for mu_b in GRID_MU[:4]:
            pairs.append((mu_a, rng.choice(GRID_SIGMA), mu_b, rng.choice(GRID_SIGMA)))
    for _ in range(40):
        pairs.append(
            (rng.uniform(-10, 60), rng.uniform(0.3, 12), rng.uniform(-10, 60), rng.uniform(0.3, 12))
        )
    return pairs


def _chains(
    rate: Callable[[tuple[float, float], tuple[float, float]], tuple[tuple[float, float], ...]],
    start: tuple[float, float],
) -> list[dict[str, Any]]:
    """Seeded sequences of kills among 4 players, every state from `rate` (the reference)."""
    rng = random.Random(SEED + 1)
    chains = []
    for _ in range(5):
        states = {p: start for p in "abcd"}
        kills = []
        for _ in range(60):
            a, b = rng.sample(sorted(states), 2)
            new_a, new_b = rate(states[a], states[b])
            states[a], states[b] = new_a, new_b
            kills.append({"attacker": a, "victim": b, "after": [list(new_a), list(new_b)]})
        chains.append({"kills": kills})
    return chains


def trueskill_vectors() -> dict[str, Any]:
    exact = trueskill.TrueSkill(draw_probability=0.0, backend="mpmath")
    builtin = trueskill.TrueSkill(draw_probability=0.0)

    def rate(
        env: Any, a: tuple[float, float], b: tuple[float, float]
    ) -> tuple[tuple[float, float], ...]:
        ra, rb = env.rate_1vs1(env.create_rating(*a), env.create_rating(*b))
        return (float(ra.mu), float(ra.sigma)), (float(rb.mu), float(rb.sigma))

    def p(env: Any, a: tuple[float, float], b: tuple[float, float]) -> float:
        # the package documentation's win probability (its FAQ recipe), 1-vs-1
        denom = (2 * env.beta**2 + a[1] ** 2 + b[1] ** 2) ** 0.5
        return float(env.cdf((a[0] - b[0]) / denom))

    cases = []
    for mu_a, sigma_a, mu_b, sigma_b in _pairs():
        a, b = (mu_a, sigma_a), (mu_b, sigma_b)
        cases.append(
            {
                "before": [[mu_a, sigma_a], [mu_b, sigma_b]],
                "after": [list(s) for s in rate(exact, a, b)],
                "after_builtin": [list(s) for s in rate(builtin, a, b)],
                "p": p(exact, a, b),
            }
        )
    return {
        "reference": f"trueskill {version('trueskill')} (mpmath {version('mpmath')} backend)",
        "config": {"mu": exact.mu, "sigma": exact.sigma, "beta": exact.beta, "tau": exact.tau},
        "cases": cases,
        "chains": _chains(lambda a, b: rate(exact, a, b), (exact.mu, exact.sigma)),
    }


def weng_lin_vectors() -> dict[str, Any]:
    pl, bt = PlackettLuce(), BradleyTerryFull()

    def rate(
        model: Any, a: tuple[float, float], b: tuple[float, float]
    ) -> tuple[tuple[float, float], ...]:
        [[ra], [rb]] = model.rate([[model.rating(*a)], [model.rating(*b)]])
        return (ra.mu, ra.sigma), (rb.mu, rb.sigma)

    def p(a: tuple[float, float], b: tuple[float, float]) -> float:
        # PlackettLuce's own probability of the order [a, b], from its _c and _sum_q (with the
        # σ grown by τ, as rate computes it)
        tau2 = pl.tau * pl.tau
        ra = pl.rating(a[0], (a[1] * a[1] + tau2) ** 0.5)
        rb = pl.rating(b[0], (b[1] * b[1] + tau2) ** 0.5)
        teams = pl._calculate_team_ratings([[ra], [rb]])
        c = pl._c(teams)
        sum_q = pl._sum_q(teams, c)
        import math

        return math.exp(teams[0].mu / c) / sum_q[0]

    cases = []
    for mu_a, sigma_a, mu_b, sigma_b in _pairs():
        a, b = (mu_a, sigma_a), (mu_b, sigma_b)
        cases.append(
            {
                "before": [[mu_a, sigma_a], [mu_b, sigma_b]],
                "after": [list(s) for s in rate(pl, a, b)],
                "after_bradley_terry": [list(s) for s in rate(bt, a, b)],
                "p": p(a, b),
                "ordinal": [pl.rating(*a).ordinal(), pl.rating(*b).ordinal()],
            }
        )
    return {
        "reference": f"openskill {version('openskill')} (PlackettLuce, BradleyTerryFull)",
        "config": {
            "mu": pl.mu,
            "sigma": pl.sigma,
            "beta": pl.beta,
            "kappa": pl.kappa,
            "tau": pl.tau,
        },
        "cases": cases,
        "chains": _chains(lambda a, b: rate(pl, a, b), (pl.mu, pl.sigma)),
    }


def glicko2_vectors() -> dict[str, Any]:
    """Glickman's example: a 1500/200 (σ 0.06, τ 0.5) player beats 1400/30, loses to 1550/100
    and to 1700/300 in one rating period; his printed intermediate and final values."""
    return {
        "reference": "Glickman, Example of the Glicko-2 system (worked example, printed values)",
        "tau": 0.5,
        "player": {"rating": 1500.0, "rd": 200.0, "volatility": 0.06},
        "games": [[1400.0, 30.0, 1.0], [1550.0, 100.0, 0.0], [1700.0, 300.0, 0.0]],
        "printed": {
            "mu": 0.0, "phi": 1.1513, "v": 1.7785, "delta": -0.4834,
            "volatility": 0.05999, "phi_star": 1.152862, "phi_new": 0.8722, "mu_new": -0.2069,
            "rating": 1464.06, "rd": 151.52,
        },
        "printed_g_e": [[0.9955, 0.639], [0.9531, 0.432], [0.7242, 0.303]],
    }  # fmt: skip


def elo_vectors() -> dict[str, Any]:
    """The seed article's numbers, each with the precision it is printed to."""
    return {
        "reference": "elo-rating-system.txt (the seed article), values as printed",
        "expected_by_difference": [[100.0, 0.64, 0.005], [200.0, 0.76, 0.005]],
        "tournament": {
            "player": 1613.0, "k": 32.0, "score": 2.5,
            "opponents": [
                [1609.0, 0.0], [1477.0, 0.5], [1388.0, 1.0], [1586.0, 1.0], [1720.0, 0.0],
            ],
            "expected_printed": [0.51, 0.69, 0.79, 0.54, 0.35], "expected_tolerance": 0.005,
            "expected_sum_printed": 2.88, "new_rating_printed": 1601.0, "rating_tolerance": 0.5,
        },
        "upset": {
            "a": 1400.0, "b": 1800.0, "k": 32.0,
            "p_b_printed": 0.91, "p_a_printed": 0.09, "p_tolerance": 0.005,
            "b_wins": [1397.0, 1803.0], "a_wins": [1429.0, 1771.0], "rating_tolerance": 0.5,
        },
        "k_rules": {
            "fide": {"k_new": 40.0, "games": 30, "k_regular": 20.0, "k_top": 10.0, "top": 2400.0},
            "uscf": {"numerator": 800.0, "m": 1},
        },
    }  # fmt: skip


def main() -> None:
    for name, build in (
        ("trueskill", trueskill_vectors),
        ("weng_lin", weng_lin_vectors),
        ("glicko2", glicko2_vectors),
        ("elo", elo_vectors),
    ):
        path = HERE / f"{name}.json"
        path.write_text(json.dumps(build(), indent=1) + "\n")
        print(f"wrote {path.relative_to(HERE.parents[2])}")


if __name__ == "__main__":
    main()
