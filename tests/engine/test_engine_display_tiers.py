"""The tiers of the models other than ADR: §6's rule on their display rating
(engine.display_tier_step), the rule ADR's tier_step applies to μ, without ADR's σ condition."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from engine import Params, model_named
from engine._tiers import display_tier_step, tier_step

RATING = st.floats(-5000.0, 5000.0, allow_nan=False)
BOUNDS = st.lists(RATING, min_size=14, max_size=14).map(lambda b: tuple(sorted(b, reverse=True)))


@given(
    tier=st.integers(0, 15),
    h_up=st.floats(0.0, 1000.0),
    h_down=st.floats(0.0, 1000.0),
    display=RATING,
    n=st.integers(0, 50),
    bounds=st.none() | BOUNDS,
    n_min=st.integers(0, 30),
    h_req=st.floats(0.5, 800.0),
)
def test_the_rule_is_adrs_on_the_display_rating(
    tier: int, h_up: float, h_down: float, display: float, n: int, bounds, n_min: int, h_req: float
) -> None:
    """Equal to ADR's tier_step given the display rating as μ, a σ that always places and the
    model's n_min and h_req as ADR's: the same boundaries and hysteresis, by construction."""
    params = dataclasses.replace(Params(), n_min=n_min, h_req=h_req)
    got = display_tier_step(tier, h_up, h_down, display, n, bounds, n_min, h_req)
    assert got == tier_step(tier, h_up, h_down, display, 0.0, n, bounds, params)
    assert abs(got[0] - tier) <= 1 or tier == 0  # placed once, then one tier at a time


def test_each_model_places_its_players_and_keeps_its_tier_through_its_codec() -> None:
    from engine import Snapshot

    for name in ("elo", "glicko2", "trueskill", "weng-lin"):
        model = model_named(name, {"tier_n_min": "3"})
        new = model.new_player()
        center = model.display(new)
        bounds = tuple(center + 1000.0 - 100.0 * k for k in range(14))  # all below: tier 1 ... 15
        snapshot = Snapshot(taken_at=None, mean_mu_active=center, boundaries=bounds, active_count=0)
        a, b = new, new
        for ts in range(1, 4):
            out = model.rate(a, b, ts * 60_000, 0, 2, snapshot)
            a, b = out.attacker, out.victim
            if ts < 3:
                assert model.tier(a) == model.tier(b) == 0, name  # n < tier_n_min: unplaced
        assert model.tier(a) != 0 and model.tier(b) != 0, name
        assert model.tier(a) <= model.tier(b), name  # the winner ranks at least as high
        for state in (a, b):
            fields = model.to_fields(state)
            assert fields[4] == model.tier(state)
            assert model.from_fields(fields) == state
