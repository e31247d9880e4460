"""Properties of every rating model behind engine.RatingModel (hypothesis): deterministic, P in
(0, 1) on the states real streams give (in [0, 1] and finite on any state in range), symmetric
where the model is, `predict` what `rate` uses to the bit, the codec bit for bit, parameters
validated."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import (
    MODELS,
    EloConfig,
    EloModel,
    EloState,
    Glicko2Config,
    Glicko2Model,
    Glicko2State,
    ParamError,
    Params,
    RatingModel,
    TrueSkillState,
    WengLinState,
    initial_snapshot,
    model_named,
)
from engine._glicko2 import idle_rd
from tests.engine.test_engine_model_adr import model_replay
from tests.engine.test_engine_properties import FAST, Event, exact, streams

PARAMS = Params()
SNAPSHOT = initial_snapshot(PARAMS)
DAY = 86_400_000
OTHERS = [name for name in MODELS if name != "adr"]
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("elo", {}),
    ("elo", {"k_rule": "fide"}),
    ("elo", {"k_rule": "uscf"}),
    ("glicko2", {}),
    ("glicko2", {"period_ms": 3_600_000, "tau": 1.2}),
    ("glicko2", {"period_ms": 0}),
    ("trueskill", {}),
    ("trueskill", {"tau": 0, "beta": 10}),
    ("weng-lin", {}),
    ("weng-lin", {"kappa": 0.01, "tau": 1}),
]
VARIANT = st.sampled_from(VARIANTS)

_finite = st.floats(allow_nan=False, allow_infinity=False)
_positive = st.floats(min_value=0.0, exclude_min=True, allow_infinity=False)
_ts = st.none() | st.integers(0, 2**53)
_n = st.integers(0, 2**40)
STATES: dict[str, st.SearchStrategy[Any]] = {
    "elo": st.builds(EloState, rating=_finite, n=_n, last_ts=_ts, top=st.booleans()),
    "glicko2": st.builds(
        Glicko2State, rating=_finite, rd=_positive, volatility=_positive, n=_n, last_ts=_ts
    ),
    "trueskill": st.builds(TrueSkillState, mu=_finite, sigma=_positive, n=_n, last_ts=_ts),
    "weng-lin": st.builds(WengLinState, mu=_finite, sigma=_positive, n=_n, last_ts=_ts),
}
IN_RANGE: dict[str, st.SearchStrategy[Any]] = {
    "elo": st.builds(EloState, rating=st.floats(-1000, 5000), n=st.integers(0, 200),
                     last_ts=st.just(0), top=st.booleans()),
    "glicko2": st.builds(Glicko2State, rating=st.floats(0, 3500), rd=st.floats(10, 350),
                         volatility=st.floats(0.01, 0.2), n=st.integers(0, 200),
                         last_ts=st.just(0)),
    "trueskill": st.builds(TrueSkillState, mu=st.floats(-50, 100), sigma=st.floats(0.1, 20),
                           n=st.integers(0, 200), last_ts=st.just(0)),
    "weng-lin": st.builds(WengLinState, mu=st.floats(-50, 100), sigma=st.floats(0.1, 20),
                          n=st.integers(0, 200), last_ts=st.just(0)),
}  # fmt: skip


@FAST
@given(streams(), VARIANT)
def test_every_model_is_deterministic_and_p_is_in_the_open_unit_interval(
    events: list[Event], variant: tuple[str, dict[str, Any]]
) -> None:
    name, overrides = variant
    first = model_replay(events, model_named(name, overrides), PARAMS)
    again = model_replay(events, model_named(name, overrides), PARAMS)
    assert exact(first) == exact(again)
    states, ps, units = first
    assert all(0.0 < p < 1.0 for p in ps)
    assert units == 0  # no model but ADR keeps a pool aggregate
    model = model_named(name, overrides)
    for state in states.values():
        assert math.isfinite(model.display(state))
        assert exact(model.from_fields(model.to_fields(state))) == exact(state)


@pytest.mark.parametrize("name", OTHERS)
@settings(deadline=None)  # a loaded shared machine took 364 ms for one example
@given(data=st.data())
def test_the_codec_round_trips_any_state_bit_for_bit(name: str, data: st.DataObject) -> None:
    model = model_named(name)
    state = data.draw(STATES[name])
    fields = model.to_fields(state)
    assert exact(model.from_fields(fields)) == exact(state)
    assert fields[2:5] == (state.n, state.last_ts, state.tier)  # n, last_ts, tier: for readers


@pytest.mark.parametrize(
    ("name", "index", "value"),
    [
        ("elo", 0, math.inf),
        ("glicko2", 0, math.nan),
        ("glicko2", 1, 0.0),
        ("trueskill", 0, -math.inf),
        ("trueskill", 1, -1.0),
        ("weng-lin", 1, 0.0),
        ("weng-lin", 1, math.nan),
    ],
)
def test_a_value_out_of_the_models_domain_is_refused(name: str, index: int, value: float) -> None:
    """What a model never writes (a non-finite float, σ or RD <= 0) fails at the codec, with a
    ValueError the shell reports as a corrupt value, not later inside the formulas."""
    model = model_named(name)
    fields = list(model.to_fields(model.new_player()))
    fields[index] = value
    with pytest.raises(ValueError, match="out of its domain"):
        model.from_fields(tuple(fields))  # type: ignore[arg-type]


def test_a_glicko2_volatility_of_zero_is_refused() -> None:
    model = model_named("glicko2")
    fields = model.to_fields(model.new_player())
    with pytest.raises(ValueError, match="volatility out of its domain"):
        model.from_fields((*fields[:6], msgspec.msgpack.encode((0.0, 0.0, 0.0))))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", OTHERS)
def test_a_hash_of_another_model_is_refused(name: str) -> None:
    model = model_named(name)
    adr = model_named("adr")
    adr_fields = adr.to_fields(adr.new_player())
    with pytest.raises(ValueError):
        model.from_fields(adr_fields)


@pytest.mark.parametrize("name", OTHERS)
@given(data=st.data())
def test_p_is_a_probability_symmetric_and_what_rate_uses(name: str, data: st.DataObject) -> None:
    model: RatingModel[Any] = model_named(name)
    a, b = data.draw(IN_RANGE[name]), data.draw(IN_RANGE[name])
    ts = data.draw(st.integers(0, 400 * DAY))
    p = model.predict(a, b, ts, 0, 2, SNAPSHOT)
    q = model.predict(b, a, ts, 0, 2, SNAPSHOT)
    assert 0.0 <= p <= 1.0 and 0.0 <= q <= 1.0
    assert abs(p + q - 1.0) <= 1e-12  # P(a kills b) + P(b kills a) = 1
    out = model.rate(a, b, ts, 0, 2, SNAPSHOT)
    assert out.p_ab == p and out.sigma_units_delta == 0
    assert out.attacker.n == a.n + 1 and out.victim.n == b.n + 1
    assert out.attacker.last_ts == ts == out.victim.last_ts
    for state in (out.attacker, out.victim):  # a valid state: the codec takes it back
        fields = model.to_fields(state)
        assert all(math.isfinite(x) for x in fields[:2])
        assert exact(model.from_fields(fields)) == exact(state)
    # the rating (the hash's mu: Elo's R, Glicko's r, μ) of the winner rises, the loser's falls
    # (not the display μ − kσ: a loss that shrinks σ can raise it)
    assert model.to_fields(out.attacker)[0] >= model.to_fields(a)[0]
    assert model.to_fields(out.victim)[0] <= model.to_fields(b)[0]


@pytest.mark.parametrize("name", ["trueskill", "weng-lin", "glicko2", "elo"])
@given(data=st.data())
def test_equal_players_move_by_mirrored_amounts(name: str, data: st.DataObject) -> None:
    model: RatingModel[Any] = model_named(name)
    a = data.draw(IN_RANGE[name])
    if name == "glicko2":
        a = msgspec.structs.replace(a, last_ts=None)
    out = model.rate(a, a, 0, 0, 2, SNAPSHOT)
    gain = model.display(out.attacker) - model.display(a)
    loss = model.display(a) - model.display(out.victim)
    if name in ("trueskill", "weng-lin"):  # μ moves by ±the same, σ shrinks alike
        gain = out.attacker.mu - a.mu
        loss = a.mu - out.victim.mu
        assert math.isclose(out.attacker.sigma, out.victim.sigma, rel_tol=1e-12)
    assert math.isclose(gain, loss, rel_tol=1e-6, abs_tol=1e-9)


def test_elo_with_one_k_is_zero_sum() -> None:
    model = EloModel(EloConfig(k=24))
    a = EloState(1712.5, 3, 0, False)
    b = EloState(1490.25, 8, 0, False)
    out = model.rate(a, b, 1, 0, 2, SNAPSHOT)
    assert math.isclose(out.attacker.rating - a.rating, b.rating - out.victim.rating)
    assert math.isclose(out.attacker.rating - a.rating, 24 * (1.0 - out.p_ab))


def test_glicko2_rd_grows_with_whole_idle_periods_up_to_rd_max() -> None:
    config = Glicko2Config()
    state = Glicko2State(rating=1600.0, rd=60.0, volatility=0.06, n=10, last_ts=0)
    assert idle_rd(state, DAY - 1, config) == 60.0  # not a whole period yet
    assert idle_rd(state, -5, config) == 60.0  # an event older than the last: no growth
    one = idle_rd(state, DAY, config)
    phi = 60.0 / 173.7178
    assert one == math.sqrt(phi * phi + 0.06 * 0.06) * 173.7178
    assert idle_rd(state, 2 * DAY - 1, config) == one
    assert 60.0 < one < idle_rd(state, 10 * DAY, config) < idle_rd(state, 100 * DAY, config)
    assert idle_rd(state, 10**6 * DAY, config) == config.rd_max
    never = Glicko2Config(period_ms=0)
    assert idle_rd(state, 10**6 * DAY, never) == 60.0
    model = Glicko2Model(config)
    fresh = model.rate(state, model.new_player(), 0, 0, 2, SNAPSHOT).attacker
    idle = model.rate(state, model.new_player(), 30 * DAY, 0, 2, SNAPSHOT).attacker
    assert idle.rd > fresh.rd  # the uncertainty an absence adds shows after the next kill too


@pytest.mark.parametrize(
    ("name", "overrides", "message"),
    [
        ("elo", {"k_rule": "ecf"}, "k_rule is one of fixed, fide, uscf"),
        ("elo", {"k": "-1"}, "k >= 0"),
        ("elo", {"fide_games": "2.5"}, "bad value for fide_games"),
        ("elo", {"scale": "nan"}, "scale must be finite"),
        ("elo", {"kk": 1}, "unknown parameter 'kk'"),
        ("glicko2", {"tau": 0}, "tau > 0"),
        ("glicko2", {"period_ms": -1}, "period_ms >= 0"),
        ("glicko2", {"rd_max": 100}, "rd_max >= rd0"),
        ("trueskill", {"beta": "x"}, "bad value for beta"),
        ("trueskill", {"sigma": 0}, "sigma > 0"),
        ("trueskill", {"display_k": True}, "bad value for display_k"),
        ("weng-lin", {"kappa": 0}, "0 < kappa <= 1"),
        ("weng-lin", {"mu": "inf"}, "mu must be finite"),
        ("openskill", {}, "unknown model 'openskill'"),
    ],
)
def test_bad_parameters_are_refused_with_the_rule(
    name: str, overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ParamError, match=message):
        model_named(name, overrides)


def test_parameters_given_as_text_are_typed() -> None:
    model = model_named("elo", {"k": "16", "fide_games": "20", "k_rule": "fide"})
    assert model.config == EloConfig(k=16.0, fide_games=20, k_rule="fide")  # type: ignore[attr-defined]
    assert isinstance(model.config.k, float)  # type: ignore[attr-defined]
    assert model_named("glicko2", {"period_ms": 3600000}).config.period_ms == 3_600_000  # type: ignore[attr-defined]


def test_a_pools_stamp_takes_no_text_for_a_number_and_no_number_past_floats_range() -> None:
    """typed (a pool's {ns}:model stamp, read by `adr leaderboard` and the tier job): each value
    of its JSON type, as the Go and TypeScript readers read it; an int past float's range (JSON
    allows it) is refused, not an OverflowError."""
    with pytest.raises(ParamError, match="bad value for tau"):
        model_named("glicko2", {"tau": "0.5"}, typed=True)
    with pytest.raises(ParamError, match="not a name"):
        model_named("elo", {"k_rule": 1}, typed=True)
    assert model_named("elo", {"k_rule": "fide", "fide_games": 20.0}, typed=True)
    for name, field in (("trueskill", "beta"), ("glicko2", "period_ms")):
        for typed in (False, True):
            with pytest.raises(ParamError, match=field):
                model_named(name, {field: 10**400}, typed=typed)


def test_trueskill_takes_the_limit_where_the_package_raises() -> None:
    """An upset so large that Φ(t) underflows: V = −t and W = 1 (their limits; the package
    raises a FloatingPointError there), and the states stay valid."""
    from engine._gaussian import cdf, v_win, w_win

    assert cdf(-40.0) == 0.0 and v_win(-40.0) == 40.0 and w_win(-40.0) == 1.0
    assert w_win(40.0) == 0.0 or 0.0 < w_win(40.0) < 1e-300
    model = model_named("trueskill")
    weak = TrueSkillState(mu=-200.0, sigma=0.5, n=5, last_ts=0)
    strong = TrueSkillState(mu=200.0, sigma=0.5, n=5, last_ts=0)
    out = model.rate(weak, strong, 1, 0, 2, SNAPSHOT)
    assert out.p_ab == 0.0  # Φ underflows: no finite-precision chance
    assert out.attacker.mu > weak.mu and out.victim.mu < strong.mu
    for state in (out.attacker, out.victim):
        assert exact(model.from_fields(model.to_fields(state))) == exact(state)
