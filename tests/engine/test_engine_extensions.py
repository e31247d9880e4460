"""Opt-in extensions beyond the paper: off by default (the paper, bit for bit), exact when on."""

from __future__ import annotations

import math

import pytest

from engine import (
    ParamError,
    Params,
    RatingBook,
    bounded_return_decay,
    decay_mu,
    initial_snapshot,
    new_player,
    rate_kill,
    sigma_units,
    victim_raw,
)
from engine._kill import decayed

DAY = 86_400_000
ON = Params.from_overrides({"bound_return_decay": "1"})


def test_off_by_default_and_only_0_or_1() -> None:
    assert Params().bound_return_decay == 0.0
    with pytest.raises(ParamError):
        Params.from_overrides({"bound_return_decay": "0.5"})
    # off: whatever the gap, the decay is the paper's
    assert bounded_return_decay(1500.0, 1065.4, True, Params()) == 1065.4


@pytest.mark.parametrize(
    ("mu", "days", "expected"),
    [
        (1500.0, 61, 1440.0),  # a return, the paper's decay would move it ≈ 434.6: capped at 60
        (800.0, 61, 860.0),  # upward too
        (1020.0, 61, 1000.0 + 20.0 * math.exp(-61 / 30)),  # within Δmax: the paper's value
        (1500.0, 60, 1000.0 + 500.0 * math.exp(-60 / 30)),  # exactly 60 days is no return
        (1500.0, 30, 1000.0 + 500.0 * math.exp(-30 / 30)),  # nor is a short gap
    ],
)
def test_decay_at_a_return_moves_mu_by_at_most_delta_max(
    mu: float, days: int, expected: float
) -> None:
    got, sigma, returning = decayed(mu, 100.0, 50, 0, days * DAY, 1000.0, ON)
    assert got == expected
    assert returning == (days > 60)
    paper = decayed(mu, 100.0, 50, 0, days * DAY, 1000.0, Params())
    assert sigma == paper[1] and returning == paper[2]
    if abs(paper[0] - mu) <= ON.delta_max or days <= 60:
        assert got == paper[0] == decay_mu(mu, days, 1000.0, Params())


def test_first_kill_back_moves_at_most_two_delta_max_in_rate_kill_and_the_book() -> None:
    # A 1600 player back after 90 days beats a 1000: decay bounded to 60, update capped at 60.
    for params, bounded in ((ON, True), (Params(), False)):
        a = new_player(params)
        a = type(a)(**{**{f: getattr(a, f) for f in a.__struct_fields__}, "mu": 1600.0,
                       "sigma": 100.0, "n": 50, "last_ts": 0})  # fmt: skip
        b = new_player(params)
        b = type(b)(**{**{f: getattr(b, f) for f in b.__struct_fields__}, "n": 50,
                       "last_ts": 90 * DAY - 1000})  # fmt: skip
        units = sigma_units(a.sigma, params) + sigma_units(b.sigma, params)
        out = rate_kill(a, b, 90 * DAY, units, 2, initial_snapshot(params), params)
        moved = abs(out.attacker.mu - a.mu)
        assert (moved <= 2 * params.delta_max) == bounded, moved
    book = RatingBook(ON)
    book.apply("", "x", "y", 0)
    before = book.player("x")
    assert before is not None
    book.apply("", "x", "z", 90 * DAY)
    after = book.player("x")
    assert after is not None and abs(after.mu - before.mu) <= 2 * ON.delta_max


def test_victim_raw_is_the_paper_unless_zero_sum() -> None:
    zero = Params.from_overrides({"zero_sum_update": "1"})
    assert Params().zero_sum_update == 0.0
    assert victim_raw(7.5, 20.0, 0.9, Params()) == -(20.0 * 0.9)
    assert victim_raw(7.5, 20.0, 0.9, zero) == -7.5
    with pytest.raises(ParamError):
        Params.from_overrides({"zero_sum_update": "2"})


@pytest.mark.parametrize("zero_sum", [0, 1])
def test_zero_sum_update_conserves_mu_in_rate_kill_and_the_book(zero_sum: int) -> None:
    params = Params.from_overrides({"zero_sum_update": str(zero_sum)})
    book = RatingBook(params)
    ts = 0
    for k in range(200):  # a strong player farming weaker ones 2 min apart: the paper drains μ
        book.apply("", "strong", f"weak{k % 5}", ts)
        ts += 120_000
    total = sum(s.mu for s in book.players().values())
    if zero_sum:
        # what is left is the §5 decay toward the snapshot's μ̄_A, not the update
        assert abs(total - 6 * params.mu0) < 1.0
    else:
        assert total < 6 * params.mu0 - 100.0
    # one event between new players (no decay, no pool, under the cap): exactly opposite
    a, b = new_player(params), new_player(params)
    units = 2 * sigma_units(params.sigma0, params)
    out = rate_kill(a, b, 0, units, 2, initial_snapshot(params), params)
    gain, loss = out.attacker.mu - a.mu, out.victim.mu - b.mu
    assert (gain == -loss) == bool(zero_sum), (gain, loss)
