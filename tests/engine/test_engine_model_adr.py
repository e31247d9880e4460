"""The ADR model behind the RatingModel seam (engine/_adr_model.py) is today's engine, bit for
bit: the same states as `rate_kill`'s consumer-style replay over random streams, the same P_ab as
`predict`, and the same hash values as redis_layout/player_codec.py."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import (
    MODELS,
    AdrModel,
    ParamError,
    Params,
    PlayerState,
    RatingModel,
    activity_time,
    initial_snapshot,
    is_active,
    is_duplicate,
    model_named,
    predict,
    take_snapshot,
)
from redis_layout.player_codec import player_values
from tests.engine.test_engine_properties import (
    FAST,
    PARAMS,
    Event,
    exact,
    reference_replay,
    streams,
)

EVERY_MS = 600_000


def model_replay(
    events: list[Event], model: RatingModel[Any], params: Params
) -> tuple[dict[str, Any], list[float], int]:
    """reference_replay's loop, with every rating step through the model's interface; returns
    the states, the P each counted kill used (and predict gave before it), and S."""
    states: dict[str, Any] = {}
    cooldown: dict[tuple[str, str], int] = {}
    snapshot = initial_snapshot(params)
    units = 0
    ps: list[float] = []
    for a, b, ts in events:
        if a == b or is_duplicate(cooldown.get((a, b)), ts, params):
            continue
        if snapshot.taken_at is None or ts - snapshot.taken_at >= EVERY_MS:
            active = [model.display(s) for s in states.values() if is_active(s, ts, params)]
            every = [model.display(s) for s in states.values()]
            snapshot = take_snapshot(ts, active, every, snapshot, params)
        for player in (a, b):
            if player not in states:
                states[player] = model.new_player()
                units += model.units(states[player])
        p = model.predict(states[a], states[b], ts, units, len(states), snapshot)
        out = model.rate(
            states[a], states[b], ts, units, len(states), snapshot, cooldown.get((a, b))
        )
        assert out.p_ab == p  # predict is what rate uses, to the bit
        ps.append(p)
        states[a], states[b] = out.attacker, out.victim
        units += out.sigma_units_delta
        assert units == sum(model.units(s) for s in states.values())
        cooldown[(a, b)] = ts
    return dict(sorted(states.items())), ps, units


@FAST
@given(streams(), PARAMS)
def test_the_adr_model_gives_rate_kills_states_bit_for_bit(
    events: list[Event], params: Params
) -> None:
    expected, _snapshot, expected_units = reference_replay(events, params, EVERY_MS)
    got, _ps, units = model_replay(events, AdrModel(params), params)
    assert exact(got) == exact(expected)
    assert units == expected_units


def test_the_adr_model_predicts_as_engine_predict() -> None:
    params = Params()
    model = AdrModel(params)
    a = model.new_player()
    b = msgspec.structs.replace(a, mu=1200.0, sigma=200.0, n=3, last_ts=0)
    snapshot = initial_snapshot(params)
    units = model.units(a) + model.units(b)
    ts = 5 * 86_400_000
    assert model.predict(a, b, ts, units, 2, snapshot) == predict(
        a, b, ts, units, 2, snapshot, params
    )
    assert model.display(b) == 1200.0 and model.tier(b) == 0
    assert model.activity_time(b) == activity_time(b, params)


_states = st.builds(
    PlayerState,
    mu=st.floats(allow_nan=False),
    sigma=st.floats(allow_nan=False),
    streak=st.integers(0, 2**31),
    phi=st.floats(allow_nan=False),
    pool=st.floats(allow_nan=False),
    n=st.integers(0, 2**53),
    last_ts=st.none() | st.integers(0, 2**53),
    tier=st.integers(0, 15),
    h_up=st.floats(allow_nan=False),
    h_down=st.floats(allow_nan=False),
    window=st.lists(st.floats(allow_nan=False), max_size=20).map(tuple),
    recent=st.lists(st.integers(0, 2**53), max_size=5).map(tuple),
)


@given(_states)
def test_the_adr_codec_round_trips_bit_for_bit_and_is_the_hash_layout(state: PlayerState) -> None:
    model = AdrModel(Params())
    fields = model.to_fields(state)
    assert exact(model.from_fields(fields)) == exact(state)
    # the hash's layout 2: the same window and state bytes as the consumer writes
    assert list(fields[5:]) == player_values(state)[5:]


def test_the_adr_codec_refuses_another_models_packed_state() -> None:
    model = AdrModel(Params())
    fields = model.to_fields(model.new_player())
    with pytest.raises(ValueError):
        model.from_fields((*fields[:6], msgspec.msgpack.encode((1.0, 2.0))))  # type: ignore[arg-type]


def test_the_registry_names_adr_first_and_applies_its_params() -> None:
    assert MODELS[0] == "adr"
    model = model_named("adr", {"sigma0": "300"})
    assert isinstance(model, AdrModel) and model.params == Params(sigma0=300.0)
    base = Params(t_cooldown=30.0)
    assert model_named("adr", params=base).params == base  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "overrides", "message"),
    [
        ("glicko", {}, "unknown model 'glicko'"),
        ("adr", {"nope": 1}, "unknown parameter 'nope'"),
        ("adr", {"sigma0": "x"}, "bad value for sigma0"),
    ],
)
def test_the_registry_refuses_unknown_names_and_bad_values(
    name: str, overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ParamError, match=message):
        model_named(name, overrides)
