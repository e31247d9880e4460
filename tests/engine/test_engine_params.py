"""Parameters: Table 9 defaults, overrides by the names of docs/algorithm.md, clear errors."""

from __future__ import annotations

from fractions import Fraction

import pytest

from engine import TIER_LABELS, ParamError, Params


def test_defaults_are_table_9() -> None:
    p = Params()
    assert (p.mu0, p.mu_min, p.mu_max, p.sigma0, p.sigma_min, p.sigma_max) == (
        1000.0, 0.0, 4000.0, 350.0, 10.0, 400.0,
    )  # fmt: skip
    assert (p.gamma, p.sigma_peak, p.eta_min, p.eta_max) == (100.0, 200.0, 4.0, 40.0)
    assert (p.rho_s, p.s_max, p.rho_v, p.w_ref, p.gamma_phi, p.lambda_phi) == (
        0.15, 5, 0.3, 20.0, 0.3, 0.2,
    )  # fmt: skip
    assert (p.c_loss, p.t_cooldown, p.theta, p.lambda_sigma) == (0.8, 60.0, 400.0, 0.5)
    assert (p.tau, p.sigma_drift, p.t_return, p.alpha, p.lambda_pool) == (30.0, 5.0, 60.0, 0.7, 0.2)
    assert (p.nu_min, p.nu_max, p.delta_max, p.n_min, p.sigma_place) == (
        -60.0,
        60.0,
        60.0,
        15,
        180.0,
    )
    assert (p.t_active, p.n_active, p.p_min, p.h_req, p.beta, p.window) == (
        7.0,
        5,
        20,
        400.0,
        0.2,
        20,
    )
    assert p.tier_shares == (Fraction(1, 15),) * 15
    assert (p.cooldown_ms, p.active_ms) == (60_000, 7 * 86_400_000)
    assert p.quantile_ps[0] == Fraction(14, 15) and p.quantile_ps[-1] == Fraction(1, 15)
    assert len(p.quantile_ps) == 14
    assert TIER_LABELS[0] == "1H" and TIER_LABELS[-1] == "5L" and len(TIER_LABELS) == 15


def test_overrides_parse_text() -> None:
    p = Params.from_overrides({"theta": "500", "n_min": "10", "t_cooldown": "0.5"})
    assert (p.theta, p.n_min, p.cooldown_ms) == (500.0, 10, 500)
    shares = "0.1,0.1,0.1,0.1,0.1,1/20,1/20,1/20,1/20,1/20,1/20,1/20,1/20,1/20,1/20"
    assert Params.from_overrides({"tier_shares": shares}).tier_shares[0] == Fraction(1, 10)
    assert isinstance(Params(mu0=900).mu0, float)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("thetta", "1", "unknown parameter"),
        ("theta", "abc", "bad value for theta"),
        ("theta", "nan", "finite"),
        ("n_min", "1.5", "bad value for n_min"),
        ("theta", "-1", "theta > 0"),
        ("sigma_min", "0", "sigma_min"),
        ("beta", "1.5", "beta"),
        ("t_cooldown", "0.0001", "whole number of milliseconds"),
        ("tier_shares", "1/2,1/2", "tier_shares"),
        ("tier_shares", "0," + ",".join(["1/14"] * 14), "positive shares"),
        ("nu_min", "5", "nu_min <= 0"),
    ],
)
def test_bad_overrides_are_clear_errors(name: str, value: str, message: str) -> None:
    with pytest.raises(ParamError, match=message):
        Params.from_overrides({name: value})


def test_sigma_unit_exponent_follows_sigma_min() -> None:
    # k = 52 − floor(log2 σ_min): σ_min = 10 → 49; 16 → 48; 0.5 → 53
    assert Params().sigma_k == 49
    assert Params.from_overrides({"sigma_min": "16"}).sigma_k == 48
    assert Params.from_overrides({"sigma_min": "0.5"}).sigma_k == 53


def test_tier_labels_are_the_papers_fifteen_and_round_trip() -> None:
    from engine import tier_label, tier_of_label

    # §6: five tiers, each High / Medium / Low, 1H the best.
    assert [tier_label(k) for k in (1, 2, 3, 13, 15)] == ["1H", "1M", "1L", "5H", "5L"]
    assert tier_label(0) == ""
    assert all(tier_of_label(tier_label(k)) == k for k in range(16))
    import pytest

    with pytest.raises(KeyError):
        tier_of_label("6H")
