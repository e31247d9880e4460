"""Opt-in extensions beyond the paper: off by default (the paper, bit for bit), exact when on."""

from __future__ import annotations

import math

import pytest

from engine import (
    ParamError,
    Params,
    PlayerState,
    RatingBook,
    bounded_return_decay,
    capped_mu,
    decay_mu,
    idle_days,
    initial_snapshot,
    new_player,
    rate_kill,
    repeat_weight,
    sigma_units,
    soft_floor,
    victim_raw,
)
from engine._kill import decayed, raw_changes

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


# -- floor_margin: the soft floor at μ_min ------------------------------------------------------

FLOOR = Params.from_overrides({"floor_margin": "120"})


@pytest.mark.parametrize(
    ("mu", "step", "expected"),
    [
        (30.0, -60.0, -15.0),  # d = 30 < 120: −60·30/120
        (90.0, -40.0, -30.0),  # −40·90/120
        (119.0, -12.0, -11.9),  # −12·119/120
        (120.0, -60.0, -60.0),  # d = m: unchanged
        (500.0, -60.0, -60.0),  # far from the floor: the paper
        (30.0, 10.0, 10.0),  # a rise is never scaled
        (0.0, -5.0, 0.0),  # at the floor: no fall at all
    ],
)
def test_soft_floor_scales_a_fall_by_the_distance_to_the_floor(
    mu: float, step: float, expected: float
) -> None:
    assert soft_floor(mu, step, FLOOR) == expected
    assert capped_mu(mu, mu + step, FLOOR) == mu + expected


def test_soft_floor_is_off_by_default_and_must_exceed_delta_max() -> None:
    assert Params().floor_margin == 0.0
    assert capped_mu(30.0, -100.0, Params()) == 0.0  # the paper's hard clip
    assert capped_mu(30.0, -100.0, FLOOR) == 15.0  # the step capped at −60, then ·30/120
    with pytest.raises(ParamError):
        Params.from_overrides({"floor_margin": "60"})  # = Δmax: a loss could reach the floor
    with pytest.raises(ParamError):
        Params.from_overrides({"floor_margin": "-1"})


def test_repeated_falls_approach_the_floor_geometrically_and_never_reach_it() -> None:
    mu, paper = 30.0, 30.0
    for k in range(1, 40):
        mu = capped_mu(mu, mu - 60.0, FLOOR)
        paper = capped_mu(paper, paper - 60.0, Params())
        assert mu == 30.0 * 0.5**k > 0.0  # d·(1 − 60/120) each time, exact in binary
        assert paper == 0.0


def _player(params: Params, **fields: float) -> PlayerState:
    base = new_player(params)
    values = {f: getattr(base, f) for f in base.__struct_fields__}
    return PlayerState(**{**values, **fields})


def test_soft_floor_in_rate_kill_and_the_book() -> None:
    # Two players at μ = 100, σ = σ0, no history: P = 1/2; the victim's paper loss is
    # c_loss·η_b·P with η_b = η_min + (η_max − η_min)·2σ0σ_peak/(σ0² + σ_peak²).
    eta_b = 4.0 + 36.0 * (2 * 350.0 * 200.0) / (350.0**2 + 200.0**2)
    loss = 0.8 * eta_b * 0.5
    for params, expected in ((Params(), 100.0 - loss), (FLOOR, 100.0 - loss * 100.0 / 120.0)):
        a, b = _player(params, mu=100.0), _player(params, mu=100.0)
        units = 2 * sigma_units(params.sigma0, params)
        out = rate_kill(a, b, 0, units, 2, initial_snapshot(params), params)
        assert out.p_ab == 0.5
        assert out.victim.mu == pytest.approx(expected, rel=1e-13, abs=0.0)
    # A weak player killed over and over: the paper parks it on μ_min, the soft floor never.
    for params in (Params.from_overrides({"mu_min": "900"}), FLOOR.with_overrides({"mu_min": 900})):
        book = RatingBook(params)
        for k in range(300):
            book.apply("", f"s{k % 7}", "weak", k * 61_000)
        weak = book.player("weak")
        assert weak is not None
        assert (weak.mu == 900.0) == (params.floor_margin == 0), weak.mu


# -- repeat_window: kills paced just outside the cooldown ---------------------------------------

REPEAT = Params.from_overrides({"repeat_window": "600"})


@pytest.mark.parametrize(
    ("t_prev", "ts", "expected"),
    [
        (None, 65_000, 1.0),  # no counted a→b kill in memory
        (0, 65_000, 65 / 600),  # paced 65 s: 65/600 of a kill
        (0, 60_000, 60 / 600),  # right at the cooldown
        (0, 300_000, 0.5),
        (0, 600_000, 1.0),  # a whole window later: a full kill
        (0, 3_600_000, 1.0),
        (200_000, 80_000, 120 / 600),  # a late event: the distance counts, as for the cooldown
    ],
)
def test_repeat_weight_is_the_gap_over_the_window(
    t_prev: int | None, ts: int, expected: float
) -> None:
    assert repeat_weight(t_prev, ts, REPEAT) == expected
    assert repeat_weight(t_prev, ts, Params()) == 1.0  # off: the paper


def test_repeat_window_is_off_by_default_and_a_whole_number_of_ms() -> None:
    assert Params().repeat_window == 0.0 and Params().pair_memory_ms == Params().cooldown_ms
    assert REPEAT.repeat_window_ms == 600_000 and REPEAT.pair_memory_ms == 600_000
    with pytest.raises(ParamError):
        Params.from_overrides({"repeat_window": "0.0001"})
    with pytest.raises(ParamError):
        Params.from_overrides({"repeat_window": "-5"})


def test_raw_changes_are_scaled_by_the_weight() -> None:
    # η_a(1 − P) and −c_loss·η_b·P, then both times the weight
    assert raw_changes(0.75, 20.0, 10.0, Params(), 0.5) == (2.5, -3.0)
    assert raw_changes(0.75, 20.0, 10.0, Params()) == (5.0, -6.0)


def test_a_paced_repeat_moves_mu_by_the_weight_in_rate_kill_and_the_book() -> None:
    # The same two kills 65 s apart under both settings: the first is identical (no t'), the
    # second's update moves each player by 65/600 of the paper's (no pool, far below the cap).
    moves = {}
    for params in (Params(), REPEAT):
        a, b = new_player(params), new_player(params)
        units = 2 * sigma_units(params.sigma0, params)
        snap = initial_snapshot(params)
        first = rate_kill(a, b, 0, units, 2, snap, params)
        units += first.sigma_units_delta
        second = rate_kill(first.attacker, first.victim, 65_000, units, 2, snap, params, 0)
        # the §5 decay over the 65 s (toward μ̄_A = μ0) is not weighted: take it out
        decay_a = decay_mu(first.attacker.mu, 65_000 / DAY, 1000.0, params) - first.attacker.mu
        decay_b = decay_mu(first.victim.mu, 65_000 / DAY, 1000.0, params) - first.victim.mu
        moves[params.repeat_window] = (
            second.attacker.mu - first.attacker.mu - decay_a,
            second.victim.mu - first.victim.mu - decay_b,
        )
        book = RatingBook(params, fixed_snapshot=snap)
        book.apply("", "a", "b", 0)
        book.apply("", "a", "b", 65_000)
        assert book.player("a") == second.attacker and book.player("b") == second.victim
    (paper_a, paper_b), (ext_a, ext_b) = moves[0.0], moves[600.0]
    assert ext_a == pytest.approx(paper_a * 65 / 600, rel=1e-9)
    assert ext_b == pytest.approx(paper_b * 65 / 600, rel=1e-9)


def test_a_farmer_pacing_kills_past_the_cooldown_gains_little() -> None:
    gains = {}
    for params in (Params(), Params.from_overrides({"repeat_window": "3600"})):
        book = RatingBook(params)
        for k in range(20):  # an even population first
            book.apply("", f"p{k}", f"p{(k + 1) % 20}", k * 1000)
        before = book.player("p0")
        assert before is not None
        for k in range(30):  # 30 kills of the same victim, 65 s apart
            book.apply("", "p0", "p1", 100_000 + k * 65_000)
        after = book.player("p0")
        assert after is not None
        gains[params.repeat_window] = after.mu - before.mu
    # kills 2..30 weigh 65/3600 each: the farm earns about (1 + 29·0.018)/30 of the paper's
    assert 0.0 < gains[3600.0] < 0.2 * gains[0.0], gains


# -- decay_grace: no §5 decay for short gaps ----------------------------------------------------

GRACE = Params.from_overrides({"decay_grace": "7"})


@pytest.mark.parametrize(
    ("gap", "expected"),
    [(0.0, 0.0), (0.75, 0.0), (7.0, 0.0), (7.5, 0.5), (61.0, 54.0), (100.0, 93.0)],
)
def test_idle_days_are_the_gap_beyond_the_grace(gap: float, expected: float) -> None:
    assert idle_days(gap, GRACE) == expected
    assert idle_days(gap, Params()) == gap  # off: the paper decays on every gap


@pytest.mark.parametrize(
    ("days", "expected_mu"),
    [
        (1, 1500.0),  # within the grace: no decay
        (7, 1500.0),
        (10, 1000.0 + 500.0 * math.exp(-3 / 30)),  # decays over the 3 days beyond it
        (61, 1000.0 + 500.0 * math.exp(-54 / 30)),
    ],
)
def test_decay_grace_in_decayed(days: int, expected_mu: float) -> None:
    mu, sigma, returning = decayed(1500.0, 100.0, 50, 0, days * DAY, 1000.0, GRACE)
    assert mu == expected_mu
    assert sigma == min(400.0, 100.0 + 5.0 * days)  # σ drift keeps the whole gap
    assert returning == (days > 60)  # and so does the return test
    with pytest.raises(ParamError):
        Params.from_overrides({"decay_grace": "-1"})


def test_decay_grace_in_rate_kill_and_the_book() -> None:
    # A 1500 player two days after its last kill: the paper pulls it toward μ̄_A, the grace not.
    for params in (Params(), GRACE):
        book = RatingBook(params, fixed_snapshot=initial_snapshot(params))
        book.apply("", "a", "b", 0)
        a = book.player("a")
        assert a is not None
        p = book.predict("a", "b", 2 * DAY)
        b = book.player("b")
        assert b is not None
        units = book.total_sigma_units
        out = rate_kill(a, b, 2 * DAY, units, 2, initial_snapshot(params), params, 0)
        book.apply("", "a", "b", 2 * DAY)
        assert out.p_ab == p and book.player("a") == out.attacker
        if params.decay_grace:
            mu_a, _, _ = decayed(a.mu, a.sigma, a.n, a.last_ts, 2 * DAY, 1000.0, params)
            assert mu_a == a.mu
