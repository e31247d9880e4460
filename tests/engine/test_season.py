"""The season soft reset (engine/_season.py): hand-computed vectors whose every step is exact in
binary (so the expected bits are known without the code), and properties over any state."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import ParamError, Params, PlayerState, SeasonReset, new_player, soft_reset

P = Params()


def _state(mu: float, sigma: float, **more: object) -> PlayerState:
    values = {**{f: getattr(new_player(P), f) for f in PlayerState.__struct_fields__}}
    values.update(mu=mu, sigma=sigma, streak=4, phi=0.25, h_up=1.5, h_down=0.5, n=80,
                  last_ts=1_700, tier=3, window=(1.0, 2.0), recent=(1_500, 1_700))  # fmt: skip
    values.update(more)
    return PlayerState(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mu", "sigma", "mean", "keep", "raise_", "mu_after", "sigma_after"),
    [
        (1400.0, 30.0, 1000.0, 0.5, 40.0, 1200.0, 50.0),  # 3-4-5: √(900 + 1600) = 50
        (600.0, 60.0, 1000.0, 0.25, 80.0, 900.0, 100.0),  # 6-8-10
        (1400.0, 90.0, 1000.0, 0.0, 120.0, 1000.0, 150.0),  # keep 0: everyone at the mean
        (1400.0, 90.0, 1000.0, 1.0, 0.0, 1400.0, 90.0),  # keep all, raise 0: unchanged
        (3900.0, 300.0, 1000.0, 1.0, 400.0, 3900.0, 400.0),  # σ capped at sigma_max (500 > 400)
        (10.0, 5.0, 4000.0, 1.0, 0.0, 10.0, 10.0),  # σ raised to sigma_min
    ],
)
def test_vectors(
    mu: float, sigma: float, mean: float, keep: float, raise_: float, mu_after: float,
    sigma_after: float,
) -> None:  # fmt: skip
    after = soft_reset(_state(mu, sigma), mean, SeasonReset(keep, raise_), P)
    assert (after.mu, after.sigma) == (mu_after, sigma_after)
    assert (after.streak, after.phi, after.h_up, after.h_down) == (0, 0.0, 0.0, 0.0)
    kept = ("n", "last_ts", "tier", "window", "recent", "pool")
    assert {f: getattr(after, f) for f in kept} == {f: getattr(_state(mu, sigma), f) for f in kept}


_MU = st.floats(P.mu_min, P.mu_max)
_SIGMA = st.floats(P.sigma_min, P.sigma_max)


@given(mu=_MU, sigma=_SIGMA, mean=_MU, keep=st.floats(0.0, 1.0), c=st.floats(0.0, 1e4))
def test_toward_the_mean_and_more_uncertain(
    mu: float, sigma: float, mean: float, keep: float, c: float
) -> None:
    after = soft_reset(_state(mu, sigma), mean, SeasonReset(keep, c), P)
    assert min(mu, mean) <= after.mu <= max(mu, mean)
    assert abs(after.mu - mean) <= abs(mu - mean)
    assert sigma <= after.sigma <= P.sigma_max
    # the same bits every time (replay): nothing but IEEE operations on the inputs
    again = soft_reset(_state(mu, sigma), mean, SeasonReset(keep, c), P)
    assert (again.mu, again.sigma) == (after.mu, after.sigma)
    assert after.sigma == min(P.sigma_max, max(P.sigma_min, math.sqrt(sigma * sigma + c * c)))


@pytest.mark.parametrize(("keep", "c"), [(-0.1, 0.0), (1.5, 0.0), (0.5, -1.0), (0.5, math.inf)])
def test_bad_reset_parameters_are_refused(keep: float, c: float) -> None:
    with pytest.raises(ParamError):
        SeasonReset(keep, c)
