"""Every baseline pinned to published vectors (the seeds, Glickman's example, TrueSkill's docs)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation._elo import Elo, FideElo, MobaElo, MobaLadder, UscfElo
from evaluation._glicko2 import Glicko2, GlickoRating, rate_period, win_probability
from evaluation._systems import RatingSystem
from evaluation._trueskill_system import TrueSkill, make_environment

DAY = 86_400_000


def test_elo_seed_example_2100_vs_2000_k10() -> None:
    # Song, MOBA Elo paper: R_A = 2100, R_B = 2000, K = 10, B wins -> 2094 / 2006.
    elo = Elo(k=10.0)
    elo.ratings.update({"A": 2100.0, "B": 2000.0})
    assert elo.predict("A", "B", 0) == pytest.approx(0.64, abs=0.005)
    elo.update("B", "A", 0)
    assert round(elo.rating("A")) == 2094
    assert round(elo.rating("B")) == 2006
    # zero-sum with equal K: B took exactly what A lost
    assert elo.rating("A") + elo.rating("B") == pytest.approx(4100.0)


def test_elo_seed_five_round_tournament_1613_to_1601() -> None:
    # Elo (Wikipedia): 1613 loses to 1609, draws 1477, beats 1388 and 1586, loses to 1720;
    # expected 0.51 + 0.69 + 0.79 + 0.54 + 0.35 = 2.88 (each rounded to 2 places); K = 32 -> 1601,
    # and 1617 had the loss to 1609 been a draw instead (score 3).
    opponents = [1609.0, 1477.0, 1388.0, 1586.0, 1720.0]
    expected = [elo_expect(1613.0, r) for r in opponents]
    assert [round(e, 2) for e in expected] == [0.51, 0.69, 0.79, 0.54, 0.35]
    assert sum(round(e, 2) for e in expected) == pytest.approx(2.88)
    assert round(1613.0 + 32.0 * (2.5 - sum(expected))) == 1601
    assert round(1613.0 + 32.0 * (3.0 - sum(expected))) == 1617


def elo_expect(ra: float, rb: float) -> float:
    elo = Elo()
    elo.ratings.update({"a": ra, "b": rb})
    return elo.predict("a", "b", 0)


def test_elo_seed_example_1400_vs_1800_k32() -> None:
    # Elo (Wikipedia): A 1400, B 1800, K = 32: B expected 0.91; B wins -> 1397 / 1803;
    # A wins -> 1429 / 1771.
    elo = Elo(k=32.0)
    elo.ratings.update({"A": 1400.0, "B": 1800.0})
    assert elo.predict("B", "A", 0) == pytest.approx(0.91, abs=0.005)
    elo.update("B", "A", 0)
    assert (round(elo.rating("A")), round(elo.rating("B"))) == (1397, 1803)
    elo = Elo(k=32.0)
    elo.ratings.update({"A": 1400.0, "B": 1800.0})
    elo.update("A", "B", 0)
    assert (round(elo.rating("A")), round(elo.rating("B"))) == (1429, 1771)


def test_fide_k_schedule() -> None:
    # Elo (Wikipedia): K = 40 until 30 games, 20 while always under 2400, 10 for good once a
    # published rating reached 2400 with at least 30 games.
    fide = FideElo()
    for i in range(29):
        fide.update("p", f"o{i}", i)
    assert fide.k_factor("p") == 40.0
    fide.update(f"o{30}", "p", 30)  # game 30, rating well under 2400
    assert fide.k_factor("p") == 20.0
    fide.ratings["p"] = 2395.0
    fide.ratings["q"] = 2395.0
    fide.update("p", "q", 31)  # +10 (K 20, E 0.5): published 2405
    assert fide.rating("p") == pytest.approx(2405.0)
    assert fide.k_factor("p") == 10.0
    fide.update("q", "p", 32)  # back under 2400 ...
    assert fide.rating("p") < 2400.0
    assert fide.k_factor("p") == 10.0  # ... K stays 10 for good
    young = FideElo()
    young.ratings["y"] = 2450.0
    young.update("y", "z", 0)  # 2400 reached, but with fewer than 30 games
    assert young.k_factor("y") == 40.0


def test_fide_first_game_uses_k40() -> None:
    fide = FideElo()
    fide.update("a", "b", 0)
    assert fide.rating("a") == pytest.approx(1500.0 + 40.0 * 0.5)
    assert fide.rating("b") == pytest.approx(1500.0 - 40.0 * 0.5)


def test_uscf_k_is_800_over_effective_games_plus_one() -> None:
    # Elo (Wikipedia): K = 800 / (N_e + m); each kill is one game (m = 1).
    uscf = UscfElo()
    assert uscf.k_factor("new") == 800.0
    uscf.update("new", "other", 0)
    assert uscf.rating("new") == pytest.approx(1500.0 + 800.0 * 0.5)
    assert uscf.k_factor("new") == 400.0
    for i in range(100):
        uscf.games["veteran"] = i
    assert uscf.k_factor("veteran") == pytest.approx(800.0 / 51.0)  # N_e capped at 50


def test_moba_k_bands_and_seed_example() -> None:
    # Song, MOBA Elo paper, Eq. 5: K = 35 − 5·floor(ELO/400); the seed's 2100-rated player has
    # K = 10; losing to a 1700 (E_A = 0.9) gives 2100 + 10·(0 − 0.9) = 2091.
    moba = MobaElo()
    moba.ratings.update({"A": 2100.0, "B": 1700.0})
    assert moba.k_factor("A") == 10.0
    assert moba.k_factor("B") == 15.0
    assert moba.predict("A", "B", 0) == pytest.approx(0.9, abs=0.01)
    moba.update("B", "A", 0)
    assert round(moba.rating("A")) == 2091
    assert MobaElo().k_factor("new") == 20.0  # 1500 -> 35 − 5·3
    moba.ratings["huge"] = 3300.0
    assert moba.k_factor("huge") == 0.0  # Eq. 5 would give −5: stopped at 0


def test_moba_ladder_plus_minus_20() -> None:
    # Eq. 8 with PS = PS_T (1-vs-1): ±20 whatever the expectation.
    ladder = MobaLadder()
    ladder.ratings.update({"strong": 2500.0, "weak": 500.0})
    ladder.update("strong", "weak", 0)
    assert (ladder.rating("strong"), ladder.rating("weak")) == (2520.0, 480.0)


def test_glicko2_glickman_example() -> None:
    # Glickman (2012), "Example of the Glicko-2 system": 1500/200/0.06 beats 1400/30, loses to
    # 1550/100 and to 1700/300 with τ = 0.5 -> r' = 1464.06, RD' = 151.52, σ' = 0.05999.
    player = GlickoRating(1500.0, 200.0, 0.06)
    results = [
        (GlickoRating(1400.0, 30.0), 1.0),
        (GlickoRating(1550.0, 100.0), 0.0),
        (GlickoRating(1700.0, 300.0), 0.0),
    ]
    new = rate_period(player, results, tau=0.5)
    assert new.r == pytest.approx(1464.05, abs=0.015)
    assert new.rd == pytest.approx(151.52, abs=0.005)
    assert new.vol == pytest.approx(0.05999, abs=1e-5)  # 0.059996, printed truncated


def test_glicko2_daily_periods_reproduce_glickmans_example() -> None:
    # The same three games inside one daily rating period, rated when the next day's first
    # event arrives: Glickman's batch result, not three one-game periods.
    glicko = Glicko2(tau=0.5, period_days=1.0)
    glicko.players.update(
        p=GlickoRating(1500.0, 200.0, 0.06),
        a=GlickoRating(1400.0, 30.0),
        b=GlickoRating(1550.0, 100.0),
        c=GlickoRating(1700.0, 300.0),
    )
    glicko.update("p", "a", 0)
    glicko.update("b", "p", 1_000)
    glicko.update("c", "p", 2_000)
    assert glicko.rating("p") == 1500.0  # nothing moves inside the period
    glicko.predict("p", "a", DAY)
    assert glicko.rating("p") == pytest.approx(1464.05, abs=0.015)
    assert glicko.players["p"].rd == pytest.approx(151.52, abs=0.005)
    # per kill, the same games give a different (sequential) answer
    sequential = Glicko2(tau=0.5)
    sequential.players.update(glicko.players)
    sequential.players["p"] = GlickoRating(1500.0, 200.0, 0.06)
    sequential.update("p", "a", 0)
    assert sequential.rating("p") != 1500.0


def test_glicko2_empty_period_and_idle_days() -> None:
    # Glickman step 6 for a player without games: φ' = sqrt(φ² + σ²).
    idle = rate_period(GlickoRating(1500.0, 50.0, 0.06), [])
    phi = 50.0 / 173.7178
    assert idle.rd == pytest.approx(math.sqrt(phi**2 + 0.06**2) * 173.7178)
    glicko = Glicko2()
    glicko.players["p"] = GlickoRating(1500.0, 50.0, 0.06)
    glicko.last_ts["p"] = 0
    assert glicko._current("p", DAY - 1).rd == 50.0
    assert glicko._current("p", 3 * DAY).rd == pytest.approx(
        math.sqrt(phi**2 + 3 * 0.06**2) * 173.7178
    )
    assert glicko._current("p", 10_000 * DAY).rd == 350.0


def test_glicko2_prediction_is_symmetric_and_centred() -> None:
    a, b = GlickoRating(1600.0, 80.0), GlickoRating(1500.0, 120.0)
    assert win_probability(a, b) + win_probability(b, a) == pytest.approx(1.0)
    assert win_probability(a, a) == pytest.approx(0.5)
    assert win_probability(a, b) > 0.5


def test_trueskill_package_documented_1v1() -> None:
    # trueskill.org: rate_1vs1(Rating(), Rating()) with the default environment (draw 10%) ->
    # (29.396, 7.171) and (20.604, 7.171).
    system = TrueSkill(env=make_environment(draw_probability=0.10))
    system.update("w", "l", 0)
    assert (round(system.rating("w"), 3), round(system.sigma("w"), 3)) == (29.396, 7.171)
    assert (round(system.rating("l"), 3), round(system.sigma("l"), 3)) == (20.604, 7.171)


@pytest.mark.parametrize(
    ("beta", "tau"), [(25.0 / 6, 25.0 / 300), (25.0 / 3, 25.0 / 300), (25.0 / 12, 25.0 / 75)]
)
def test_trueskill_no_draw_matches_herbrich_closed_form(beta: float, tau: float) -> None:
    # Herbrich, Minka, Graepel (2006), two-player win without draws: c² = 2β² + σw² + σl² (σ² incl.
    # τ²), t = (μw − μl)/c, v = φ(t)/Φ(t), w = v·(v + t); μw += σw²/c·v, σw² *= 1 − σw²/c²·w.
    # The tuned TrueSkill's β and τ reach the package: the same closed form at every grid corner.
    mu, sigma = 25.0, 25.0 / 3
    s2 = sigma**2 + tau**2
    c = math.sqrt(2 * beta**2 + 2 * s2)
    t = 0.0
    pdf = math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    v = pdf / (0.5 * (1 + math.erf(t / math.sqrt(2))))
    w = v * (v + t)
    system = TrueSkill(beta=beta, tau=tau)
    assert system.predict("w", "l", 0) == pytest.approx(0.5)
    system.update("w", "l", 0)
    assert system.rating("w") == pytest.approx(mu + s2 / c * v, abs=1e-6)
    assert system.rating("l") == pytest.approx(mu - s2 / c * v, abs=1e-6)
    assert system.sigma("w") == pytest.approx(math.sqrt(s2 * (1 - s2 / c**2 * w)), abs=1e-6)
    if (beta, tau) == (25.0 / 6, 25.0 / 300):
        # 29.205 / 7.195 (package defaults, draw 0) agrees with the closed form above
        assert round(system.rating("w"), 3) == 29.205


@pytest.mark.parametrize(
    "system", [Elo(), FideElo(), UscfElo(), MobaElo(), MobaLadder(), Glicko2(), TrueSkill()]
)
def test_every_baseline_speaks_the_interface(system: RatingSystem) -> None:
    assert isinstance(system, RatingSystem)
    assert system.predict("a", "b", 0) == pytest.approx(0.5)
    system.update("a", "b", 0)
    assert system.rating("a") > system.rating("b")
    p = system.predict("a", "b", 1)
    assert 0.5 < p < 1.0
    assert system.predict("b", "a", 1) == pytest.approx(1.0 - p)
    assert system.tier("a") is None


@given(
    st.floats(0.0, 3000.0),
    st.floats(0.0, 3000.0),
    st.sampled_from([10.0, 16.0, 32.0]),
)
def test_elo_fixed_k_is_zero_sum_and_rewards_the_winner(ra: float, rb: float, k: float) -> None:
    elo = Elo(k=k)
    elo.ratings.update({"a": ra, "b": rb})
    elo.update("a", "b", 0)
    assert elo.rating("a") + elo.rating("b") == pytest.approx(ra + rb)
    assert elo.rating("a") >= ra
    assert elo.rating("a") - ra <= k


@given(st.floats(1000.0, 2000.0), st.floats(1000.0, 2000.0), st.floats(30.0, 350.0))
def test_glicko2_winner_up_loser_down_and_the_game_informs(ra: float, rb: float, rd: float) -> None:
    # Glickman steps 6-7: φ' = 1/sqrt(1/φ*² + 1/v) < φ* = sqrt(φ² + σ'²); φ' may exceed φ itself
    # when φ is small (the volatility inflation outweighs one game's information).
    glicko = Glicko2()
    glicko.players.update({"a": GlickoRating(ra, rd), "b": GlickoRating(rb, rd)})
    glicko.update("a", "b", 0)
    assert glicko.rating("a") > ra
    assert glicko.rating("b") < rb
    for p in ("a", "b"):
        new = glicko.players[p]
        assert new.rd < math.hypot(rd, new.vol * 173.7178)
