"""Hand-checked vectors for every ADR formula, each citing its section of the paper.

Every expected value is worked out in the comment next to it (by hand, rounded) and, where the
engine must agree to the last bit, recomputed here with plain `math` from the paper's formula,
never by calling the engine for the expectation.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from engine import (
    Params,
    PlayerState,
    Snapshot,
    can_place,
    capped_mu,
    decay_mu,
    decay_sigma,
    diffusion,
    eta,
    eta_base,
    eta_streak,
    eta_trend,
    eta_vol,
    evidence_weight,
    gap_days,
    h_down_next,
    h_up_next,
    initial_snapshot,
    is_duplicate,
    is_returning,
    new_player,
    p_ab,
    phi_next,
    pool_regular,
    pool_returning,
    quantile_index,
    rate_kill,
    recent_next,
    sigma_mean,
    sigma_next,
    sigma_units,
    smoothed,
    take_snapshot,
    tier_of,
    tier_step,
    window_mean,
    window_next,
)

P = Params()
DAY = 86_400_000
T0 = 1_700_000_000_000
# B_k = 1500 − 100·k, k = 1..14: 1400, 1300, ..., 100 (non-increasing, §6.3)
BOUNDS = tuple(1500.0 - 100.0 * k for k in range(1, 15))


# -- §3 outcome model ------------------------------------------------------------------------


def test_diffusion_is_theta_plus_lambda_sigma_bar() -> None:
    # §3.2: D = 400 + 0.5·350 = 575
    assert diffusion(350.0, P) == 575.0


def test_p_ab_vector() -> None:
    # §3.1: μa − μb = 200, D = 575: atan(0.347826) = 0.334737 rad; /π = 0.106550; P = 0.606550
    value = p_ab(1200.0, 1000.0, 575.0)
    assert value == pytest.approx(0.606550, abs=1e-6)
    assert value == 0.5 + math.atan(200.0 / 575.0) / math.pi


def test_p_ab_is_even_and_complementary() -> None:
    # §3.1: equal skills give 1/2; P_ab + P_ba = 1 (atan is odd)
    assert p_ab(1000.0, 1000.0, 575.0) == 0.5
    assert p_ab(1300.0, 1000.0, 500.0) + p_ab(1000.0, 1300.0, 500.0) == pytest.approx(1.0)


def test_sigma_units_and_exact_mean() -> None:
    # design.md: k = 52 − floor(log2 10) = 52 − 3 = 49; 350·2**49 is an integer
    assert P.sigma_k == 49
    assert sigma_units(350.0, P) == 350 * 2**49
    # σ̄ of {10, 400, 350} = 760/3 = 253.333…, correctly rounded
    total = sigma_units(10.0, P) + sigma_units(400.0, P) + sigma_units(350.0, P)
    assert sigma_mean(total, 3, P) == 760 / 3


# -- §4.1 / §8.1 learning rate ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("sigma", "expected"),
    [
        (200.0, 40.0),  # σ = σ_peak: shape 1 → η_max = 40
        (350.0, 35.015385),  # 2·350·200/(350² + 200²) = 140000/162500 = 0.861538; 4 + 36·that
        (400.0, 32.8),  # 160000/200000 = 0.8; 4 + 28.8
        (10.0, 7.591022),  # 4000/40100 = 0.0997506; 4 + 3.591022
    ],
)
def test_eta_base_is_peak_shaped(sigma: float, expected: float) -> None:
    # §8.1: η_base = η_min + (η_max − η_min)·2σσ_peak/(σ² + σ_peak²)
    assert eta_base(sigma, P) == pytest.approx(expected, abs=1e-6)


def test_eta_streak_is_capped() -> None:
    # §4.1: 1 + 0.15·min(s, 5): s = 3 → 1.45; s = 9 → 1.75
    assert eta_streak(3, P) == pytest.approx(1.45)
    assert eta_streak(9, P) == pytest.approx(1.75)
    assert eta_streak(0, P) == 1.0


def test_eta_vol_damps() -> None:
    # §4.1: 1/(1 + 0.3·20/20) = 1/1.3 = 0.769231; empty window → 1
    assert eta_vol(20.0, P) == pytest.approx(0.769231, abs=1e-6)
    assert eta_vol(0.0, P) == 1.0


def test_eta_trend_only_positive() -> None:
    # §4.1: 1 + 0.3·max(0, φ): φ = 0.5 → 1.15; φ = −0.5 → 1
    assert eta_trend(0.5, P) == pytest.approx(1.15)
    assert eta_trend(-0.5, P) == 1.0


def test_window_mean_and_eta_product() -> None:
    # §2.2: w̄ of (1, 2, 3, 6) = 12/4 = 3; empty → 0
    assert window_mean((1.0, 2.0, 3.0, 6.0)) == 3.0
    assert window_mean(()) == 0.0
    # §4.1: σ=200, s=3, w̄=20, φ=0.5: 40·1.45·(1/1.3)·1.15 = 51.3077
    assert eta(200.0, 3, window_mean((20.0,) * 4), 0.5, P) == pytest.approx(51.307692, abs=1e-6)


# -- §8.2–§8.4 safeguards --------------------------------------------------------------------


def test_evidence_weight() -> None:
    # §8.2: r = 350/(400 + 350) = 0.466667; at σ = 0 it would be 1
    assert evidence_weight(400.0, P) == pytest.approx(0.466667, abs=1e-6)


def test_pool_on_a_returning_event() -> None:
    # §8.2–8.3 (draining reading): raw = 10, σ = 400 → eff = 10·0.466667 = 4.666667
    # ν' = 0.8·10 + 0.7·4.666667 = 8 + 3.266667 = 11.266667
    # target = μ + 0.3·4.666667 + 0.2·10 = 1000 + 1.4 + 2 = 1003.4
    nu, target = pool_returning(1000.0, 10.0, 10.0, 400.0, P)
    assert nu == pytest.approx(11.266667, abs=1e-6)
    assert target == pytest.approx(1003.4, abs=1e-9)


def test_pool_is_clipped_to_its_bounds() -> None:
    # §8.3: ν' = clip(0.8·60 + 0.7·(100·0.466667), −60, 60) = clip(48 + 32.67) = 60
    nu, _ = pool_returning(1000.0, 60.0, 100.0, 400.0, P)
    assert nu == 60.0
    nu, _ = pool_returning(1000.0, -60.0, -100.0, 400.0, P)
    assert nu == -60.0


def test_pool_regular_drains() -> None:
    # step 9 (docs/algorithm.md#s8-3): ν' = 0.8·10 = 8; target = 1000 + 5 + 0.2·10 = 1007
    nu, target = pool_regular(1000.0, 10.0, 5.0, P)
    assert nu == pytest.approx(8.0)
    assert target == pytest.approx(1007.0)


@pytest.mark.parametrize(
    ("mu", "target", "expected"),
    [
        (1000.0, 1100.0, 1060.0),  # §8.4: change 100 capped to +60
        (1000.0, 900.0, 940.0),  # change −100 capped to −60
        (1000.0, 1012.5, 1012.5),  # under the cap: unchanged
        (3990.0, 4050.0, 4000.0),  # §4.2: capped to +60 then clipped to μ_max
        (30.0, -50.0, 0.0),  # capped to −60 → −30, clipped to μ_min
    ],
)
def test_cap_then_bounds(mu: float, target: float, expected: float) -> None:
    assert capped_mu(mu, target, P) == expected


# -- §4.3 uncertainty ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sigma", "delta_mu", "expected"),
    [
        (350.0, 0.0, 96.152395),  # (1/122500 + 1/10000)^−½ = (1.081633e−4)^−½
        (100.0, 0.0, 70.710678),  # (2/10000)^−½ = 100/√2
        (30.0, 40.0, 44.721360),  # σ_mid² = 900 + 1600 = 2500; (1/2500 + 1/10000)^−½ = √2000
        (10.0, 0.0, 10.0),  # (0.01 + 0.0001)^−½ = 9.95 → clipped up to σ_min
    ],
)
def test_sigma_two_stage_update(sigma: float, delta_mu: float, expected: float) -> None:
    assert sigma_next(sigma, delta_mu, P) == pytest.approx(expected, abs=1e-6)


# -- §4.4 / §4.5 trend, streak, window --------------------------------------------------------


def test_trend_ema_and_clip() -> None:
    # §4.4: 0.8·0.5 + 0.2·0.4 = 0.48; 0.8·(−1) + 0.2·(−1) = −1 (stays at the bound)
    assert phi_next(0.5, 0.4, P) == pytest.approx(0.48)
    assert phi_next(-1.0, -1.0, P) == -1.0


def test_window_keeps_the_newest_l() -> None:
    # §4.5: |Δμ| appended, oldest dropped past L = 20
    full = tuple(float(i) for i in range(20))
    assert window_next(full, -7.5, P) == (*full[1:], 7.5)
    assert window_next((), 3.0, P) == (3.0,)


def test_recent_keeps_the_latest_n_active_sorted() -> None:
    # §2.3: the N_active = 5 latest counted times, ascending even if one arrives out of order
    assert recent_next((1, 2, 3, 4, 5), 6, P) == (2, 3, 4, 5, 6)
    assert recent_next((1, 2, 4, 5, 6), 3, P) == (2, 3, 4, 5, 6)


# -- §5 decay and §8.2 returning ---------------------------------------------------------------


def test_gap_days_is_int_over_int() -> None:
    # design.md: 129_600_000 ms / 86_400_000 = 1.5 days; negative gaps count as 0
    assert gap_days(T0 + 129_600_000, T0) == 1.5
    assert gap_days(T0 - 5, T0) == 0.0
    assert gap_days(T0, None) == 0.0


def test_decay_vector() -> None:
    # §5: μ̄ = 1000, μ = 1500, d = 30 = τ: 1000 + 500·e^−1 = 1000 + 183.939721 = 1183.939721
    assert decay_mu(1500.0, 30.0, 1000.0, P) == pytest.approx(1183.939721, abs=1e-6)
    # σ = 100 + 5·30 = 250; after 90 days 100 + 450 = 550 → capped at σ_max = 400
    assert decay_sigma(100.0, 30.0, P) == 250.0
    assert decay_sigma(100.0, 90.0, P) == 400.0
    # no gap, no decay
    assert decay_mu(1500.0, 0.0, 1000.0, P) == 1500.0


def test_returning_is_strict() -> None:
    # §8.2: more than T_return = 60 days, strictly
    assert not is_returning(60.0, P)
    assert is_returning(60.000001, P)


# -- §2.1 cooldown ---------------------------------------------------------------------------


def test_cooldown_boundary() -> None:
    # §2.1: duplicate iff |t − t'| < 60 000 ms
    assert is_duplicate(T0, T0 + 59_999, P)
    assert is_duplicate(T0, T0 - 59_999, P)
    assert not is_duplicate(T0, T0 + 60_000, P)
    assert not is_duplicate(None, T0, P)


# -- §6 tiers --------------------------------------------------------------------------------


def test_quantile_index_vectors() -> None:
    # §6.3: ceil(p·|A|) − 1 with exact p. |A| = 30, p = 14/15: 28 − 1 = 27; p = 1/15: 2 − 1 = 1
    assert quantile_index(Fraction(14, 15), 30) == 27
    assert quantile_index(Fraction(1, 15), 30) == 1
    # |A| = 15, k = 5: p = 1 − 5/15 = 2/3, p·15 = 10 exactly → index 9 (float 1−Σ(1/15) gives 10)
    assert quantile_index(Fraction(2, 3), 15) == 9
    # clamped: |A| = 7, p = 1/15: ceil(0.467) − 1 = 0
    assert quantile_index(Fraction(1, 15), 7) == 0


def test_boundaries_from_a_uniform_sample() -> None:
    # §6.3: 30 active players μ = 0, 100, ..., 2900 (sorted). B_k = sample[ceil((1 − k/15)·30) − 1]
    # = sample[30 − 2k − 1]: B_1 = sample[27] = 2700, B_14 = sample[1] = 100.
    mus = [100.0 * i for i in range(30)]
    snap = take_snapshot(T0, list(reversed(mus)), [], None, P)
    assert snap.boundaries == tuple(100.0 * (29 - 2 * k) for k in range(1, 15))
    assert snap.mean_mu_active == 1450.0  # fsum(0..2900 step 100)/30 = 43500/30
    assert snap.active_count == 30


def test_boundaries_are_smoothed() -> None:
    # §6.3: B = 0.8·B_old + 0.2·B_target in this form; old all 1000, targets as above
    old = Snapshot(taken_at=T0, mean_mu_active=1000.0, boundaries=(1000.0,) * 14, active_count=30)
    mus = [100.0 * i for i in range(30)]
    snap = take_snapshot(T0 + 1, mus, [], old, P)
    expected = tuple((1 - 0.2) * 1000.0 + 0.2 * (100.0 * (29 - 2 * k)) for k in range(1, 15))
    assert snap.boundaries == expected
    assert smoothed(1000.0, 2700.0, 0.2) == pytest.approx(1340.0)  # 800 + 540


def test_small_population_keeps_boundaries_and_falls_back() -> None:
    # §6.3: |A| < p_min = 20 → boundaries unchanged; §2.3: A empty → A = P for μ̄
    snap = take_snapshot(T0, [], [900.0, 1100.0, 1300.0], initial_snapshot(P), P)
    assert snap.boundaries is None
    assert snap.mean_mu_active == 1100.0
    assert take_snapshot(T0, [], [], None, P).mean_mu_active == P.mu0  # §5: P empty → μ0


def test_tier_of() -> None:
    # §6.3: B_k ≤ μ < B_{k−1}: 1250 lies in [B_3, B_2) = [1200, 1300) → 3
    assert tier_of(1250.0, BOUNDS) == 3
    assert tier_of(1300.0, BOUNDS) == 2  # B_2 itself belongs to tier 2
    assert tier_of(5000.0, BOUNDS) == 1
    assert tier_of(99.0, BOUNDS) == 15


def test_placement_condition() -> None:
    # §6.1: n ≥ 15 and σ ≤ 180
    assert can_place(15, 180.0, P)
    assert not can_place(14, 100.0, P)
    assert not can_place(40, 180.0001, P)


def test_promotion_after_accumulating() -> None:
    # §6.4: tier 3, μ = 1320 ≥ B_2 = 1300: h↑ = 390 + 20 = 410 ≥ 400 → tier 2, both reset
    assert h_up_next(390.0, 1320.0, 3, BOUNDS) == 410.0
    assert tier_step(3, 390.0, 0.0, 1320.0, 50.0, 40, BOUNDS, P) == (2, 0.0, 0.0)
    # one step short: 370 + 20 = 390 < 400 stays; h↓ resets because μ ≥ B_3
    assert tier_step(3, 370.0, 30.0, 1320.0, 50.0, 40, BOUNDS, P) == (3, 390.0, 0.0)


def test_demotion_after_accumulating() -> None:
    # §6.4: tier 3, μ = 1150 < B_3 = 1200: h↓ = 350 + 50 = 400 ≥ 400 → tier 4; h↑ resets
    assert h_down_next(350.0, 1150.0, 3, BOUNDS) == 400.0
    assert tier_step(3, 100.0, 350.0, 1150.0, 50.0, 40, BOUNDS, P) == (4, 0.0, 0.0)


def test_top_and_bottom_tiers_do_not_accumulate_outward() -> None:
    # §6.4 sentinels B_0 = +∞, B_15 = −∞: no promotion from 1, no demotion from 15
    assert h_up_next(399.0, 9000.0, 1, BOUNDS) == 0.0
    assert h_down_next(399.0, -1.0, 15, BOUNDS) == 0.0


def test_placement_is_direct_and_needs_boundaries() -> None:
    # §6.1/§6.3: unplaced, n = 15, σ = 150, μ = 1250 → placed in 3 with fresh accumulators
    assert tier_step(0, 0.0, 0.0, 1250.0, 150.0, 15, BOUNDS, P) == (3, 0.0, 0.0)
    assert tier_step(0, 0.0, 0.0, 1250.0, 150.0, 15, None, P) == (0, 0.0, 0.0)


# -- steps 5–13 together ---------------------------------------------------------------------


def test_first_kill_between_new_players() -> None:
    # Two fresh players (σ0 = 350, P = 2): σ̄ = 350, D = 575, μa = μb → P_ab = 1/2.
    # η = η_base(350) = 4 + 36·(140000/162500) = 35.015385 (s = 0, w̄ = 0, φ = 0).
    # a: raw = 35.015385·0.5 = 17.507692 → μa = 1017.507692
    # b: raw = −0.8·35.015385·0.5 = −14.006154 → μb = 985.993846
    # σa = (1/(350² + 17.507692²) + 1/100²)^−½ = (1/122806.519 + 1e−4)^−½ = 96.161
    a, b = new_player(P), new_player(P)
    total = 2 * (350 * 2**49)
    out = rate_kill(a, b, T0, total, 2, initial_snapshot(P), P)
    base = 4.0 + 36.0 * ((2.0 * 350.0 * 200.0) / (350.0 * 350.0 + 200.0 * 200.0))
    assert out.p_ab == 0.5
    assert out.attacker.mu == 1000.0 + base * 0.5
    assert out.victim.mu == 1000.0 + -(0.8 * base * 0.5)
    assert out.attacker.mu == pytest.approx(1017.507692, abs=1e-6)
    assert out.victim.mu == pytest.approx(985.993846, abs=1e-6)
    d_a = out.attacker.mu - 1000.0
    sigma_a = 1.0 / math.sqrt(1.0 / (350.0**2 + d_a * d_a) + 1.0 / 100.0**2)
    assert out.attacker.sigma == sigma_a
    assert out.attacker.sigma == pytest.approx(96.161, abs=1e-3)
    assert (out.attacker.streak, out.victim.streak) == (1, 0)
    assert out.attacker.phi == pytest.approx(0.1)  # 0.2·(1 − 0.5)
    assert out.victim.phi == pytest.approx(-0.1)  # 0.2·(0.5 − 1)
    assert (out.attacker.n, out.attacker.last_ts, out.attacker.recent) == (1, T0, (T0,))
    assert out.attacker.window == (abs(d_a),)
    assert out.attacker.pool == 0.0 and out.attacker.tier == 0
    units = round(out.attacker.sigma * 2**49) + round(out.victim.sigma * 2**49)
    assert out.sigma_units_delta == units - total


def test_returning_kill_uses_decay_pool_and_cap() -> None:
    # A player last seen 90 days ago (> T_return = 60) with μ = 1600, σ = 50, empty pool, kills a
    # fresh player. μ̄_A = 1000. Decay: μ = 1000 + 600·e^−3 = 1029.872; σ = min(400, 50 + 450) = 400.
    # σ̄ over {400, 350} = 375; D = 587.5; atan(29.872/587.5) = 0.050803; P_ab = 0.516171.
    # η_a = η_base(400) = 32.8; raw = 32.8·0.483829 = 15.8696; r = 350/750; eff = 7.4058
    # target = μ + 0.3·7.4058 + 0.2·0 = μ + 2.2217; ν' = 0.7·7.4058 = 5.1841
    last = T0 - 90 * DAY
    a = PlayerState(1600.0, 50.0, 0, 0.0, 0.0, 30, last, 0, 0.0, 0.0, (), (last,))
    b = new_player(P)
    total = sigma_units(50.0, P) + sigma_units(350.0, P)
    out = rate_kill(a, b, T0, total, 2, initial_snapshot(P), P)
    mu_decayed = 1000.0 + 600.0 * math.exp(-3.0)
    assert out.p_ab == pytest.approx(0.5 + math.atan((mu_decayed - 1000.0) / 587.5) / math.pi)
    assert out.p_ab == pytest.approx(0.516171, abs=1e-6)
    assert out.attacker.mu - mu_decayed == pytest.approx(2.2217, abs=1e-4)
    assert out.attacker.pool == pytest.approx(5.1841, abs=1e-4)


def test_cap_binds_on_a_huge_learning_rate() -> None:
    # §8.4: with η_max = 1000 the raw change 1000·(σ-shape)·½ far exceeds Δ_max = 60
    params = Params.from_overrides({"eta_max": "1000"})
    total = 2 * sigma_units(350.0, params)
    out = rate_kill(
        new_player(params), new_player(params), T0, total, 2, initial_snapshot(params), params
    )
    assert out.attacker.mu == 1060.0
    assert out.victim.mu == 940.0


def test_rate_kill_reads_a_state_by_its_declaration_order() -> None:
    """engine._kill.fields unpacks msgspec.structs.astuple by position (StateFields)."""
    from engine._kill import _scalars, fields, scalars

    state = PlayerState(
        mu=1.5, sigma=2.5, streak=3, phi=0.25, pool=-0.5, n=7, last_ts=11, tier=2,
        h_up=0.125, h_down=0.375, window=(1.0, 2.0), recent=(5, 11),
    )  # fmt: skip
    assert PlayerState.__struct_fields__ == (
        "mu", "sigma", "streak", "phi", "pool", "n", "last_ts", "tier", "h_up", "h_down",
        "window", "recent",
    )  # fmt: skip
    assert fields(state) == tuple(getattr(state, f) for f in PlayerState.__struct_fields__)
    assert scalars(state) == _scalars(fields(state)) == (1.5, 2.5, 7, 11, 3, 0.25, -0.5, 2,
                                                         0.125, 0.375)  # fmt: skip
