"""The opt-in logistic outcome link: off by default (the paper's arctangent, bit for bit), exact
when on, and the same P_ab in rate_kill, RatingBook.predict and RatingBook.apply."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import (
    ParamError,
    Params,
    PlayerState,
    RatingBook,
    initial_snapshot,
    new_player,
    outcome_probability,
    p_ab,
    p_ab_logistic,
    rate_kill,
    sigma_units,
)
from engine._kill import kill_probability

LINK = Params.from_overrides({"logistic_link": "1"})


def _formula(mu_a: float, mu_b: float, d: float) -> float:
    """The switch's definition, as docs/evaluation.md writes it: 1/(1 + e^−z), z = (4/π)·Δμ/D."""
    return 1.0 / (1.0 + math.exp(-(4.0 / math.pi) * ((mu_a - mu_b) / d)))


@pytest.mark.parametrize(
    ("mu_a", "mu_b", "d", "expected"),
    [
        # 50-digit references (decimal module): z = 4·Δμ/(π·D), P = 1/(1 + e^−z)
        (1200.0, 1000.0, 575.0, 0.60894171188559773203811153717847422),  # z = 0.442865928603…
        (1000.0, 1200.0, 575.0, 0.39105828811440226796188846282152578),
        (1000.0, 1000.0, 575.0, 0.5),
        (1150.0, 1000.0, 100.0, 0.87100334203796949759491979450009244),  # z = 1.909859317102…
        (0.0, 4000.0, 100.0, 7.6131373179278840614676168595139516e-23),  # z = −50.9295817894…
        (4000.0, 0.0, 100.0, 1.0),  # 1 − 7.6e−23 rounds to 1
    ],
)
def test_logistic_p_ab_vectors(mu_a: float, mu_b: float, d: float, expected: float) -> None:
    got = p_ab_logistic(mu_a, mu_b, d)
    # e^z carries z's rounding as a relative error of about |z|·2^−53: allow a few ulps times |z|
    z = 4.0 * abs(mu_a - mu_b) / (math.pi * d)
    assert got == pytest.approx(expected, rel=4e-16 * max(1.0, z), abs=0.0)
    if mu_a >= mu_b:  # where e^−z cannot overflow the code evaluates the formula as written
        assert got == _formula(mu_a, mu_b, d)


def test_same_slope_as_the_arctangent_at_one_half_and_lighter_tails() -> None:
    d, h = 300.0, 1e-3
    slope = (p_ab_logistic(1000.0 + h, 1000.0, d) - p_ab_logistic(1000.0 - h, 1000.0, d)) / (2 * h)
    assert slope == pytest.approx(1.0 / (math.pi * d), rel=1e-8)
    # 1200 points ahead with D = 300: the arctangent leaves 1 − P = 0.078, the logistic 0.0059
    assert 1.0 - p_ab(2200.0, 1000.0, d) == pytest.approx(0.5 - math.atan(4.0) / math.pi)
    assert 1.0 - p_ab_logistic(2200.0, 1000.0, d) == pytest.approx(1 / (1 + math.exp(16 / math.pi)))


@given(
    st.floats(min_value=-1e6, max_value=1e6),
    st.floats(min_value=-1e6, max_value=1e6),
    st.floats(min_value=1e-3, max_value=1e6),
)
def test_logistic_p_ab_is_a_probability_complementary_and_never_overflows(
    mu_a: float, mu_b: float, d: float
) -> None:
    p, q = p_ab_logistic(mu_a, mu_b, d), p_ab_logistic(mu_b, mu_a, d)
    assert 0.0 <= p <= 1.0
    assert p + q == pytest.approx(1.0, abs=5e-16)  # a few ulps of 1: exp, +, / and the sum
    assert p >= 0.5 if mu_a >= mu_b else p <= 0.5  # monotone: the better player is favoured


def test_off_by_default_only_0_or_1_and_dispatched_by_the_switch() -> None:
    assert Params().logistic_link == 0.0
    with pytest.raises(ParamError):
        Params.from_overrides({"logistic_link": "0.5"})
    assert outcome_probability(1200.0, 1000.0, 575.0, Params()) == p_ab(1200.0, 1000.0, 575.0)
    assert outcome_probability(1200.0, 1000.0, 575.0, LINK) == p_ab_logistic(1200.0, 1000.0, 575.0)


def test_kill_probability_uses_the_link_with_the_papers_d() -> None:
    # a at 1200 (σ 100), b at 1000 (σ 300), one more player at σ 200: σ̄ = 200, D = 400 + 0.5·200
    for params, link in ((Params(), p_ab), (LINK, p_ab_logistic)):
        units = [sigma_units(s, params) for s in (100.0, 300.0, 200.0)]
        got = kill_probability(1200.0, 100.0, units[0], 1000.0, 300.0, units[1], sum(units), 3,
                               params)  # fmt: skip
        assert got == link(1200.0, 1000.0, 500.0)


def _player(params: Params, mu: float, sigma: float, ts: int) -> PlayerState:
    fresh = new_player(params)
    fields = {f: getattr(fresh, f) for f in fresh.__struct_fields__}
    return PlayerState(**{**fields, "mu": mu, "sigma": sigma, "n": 50, "last_ts": ts})


@pytest.mark.parametrize("params", [Params(), LINK], ids=["paper", "logistic_link"])
def test_rate_kill_predicts_and_updates_with_the_link(params: Params) -> None:
    # gap 0 (no decay), σ̄ = (100 + 300)/2 = 200: D = 400 + 0.5·200 = 500
    ts = 5 * 86_400_000
    a, b = _player(params, 1200.0, 100.0, ts), _player(params, 1000.0, 300.0, ts)
    units = sigma_units(100.0, params) + sigma_units(300.0, params)
    out = rate_kill(a, b, ts, units, 2, initial_snapshot(params), params)
    link = p_ab_logistic if params.logistic_link else p_ab
    assert out.p_ab == link(1200.0, 1000.0, 500.0)
    assert out.p_ab == (_formula(1200.0, 1000.0, 500.0) if params.logistic_link else
                        0.5 + math.atan(200.0 / 500.0) / math.pi)  # fmt: skip


@pytest.mark.parametrize("params", [Params(), LINK], ids=["paper", "logistic_link"])
def test_the_book_predicts_and_applies_what_rate_kill_does(params: Params) -> None:
    book = RatingBook(params, fixed_snapshot=initial_snapshot(params))
    for k in range(30):  # a beats b 30 times, 2 min apart: μ_a − μ_b grows
        book.apply("", "a", "b", k * 120_000)
    a, b = book.player("a"), book.player("b")
    assert a is not None and b is not None
    ts = 30 * 120_000
    predicted = book.predict("a", "b", ts)
    out = rate_kill(a, b, ts, book.total_sigma_units, 2, initial_snapshot(params), params, 0)
    book.apply("", "a", "b", ts)
    assert out.p_ab == predicted
    assert book.player("a") == out.attacker and book.player("b") == out.victim
    paper = RatingBook(Params(), fixed_snapshot=initial_snapshot(Params()))
    for k in range(30):
        paper.apply("", "a", "b", k * 120_000)
    # the first event (equal ratings, P = 1/2) is the same; after it the links part
    assert (paper.predict("a", "b", ts) == predicted) == (not params.logistic_link)
