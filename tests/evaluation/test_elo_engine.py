"""The evaluation's Elo baselines run the engine's Elo formulas (one implementation): over the
same kills, Elo, FideElo and UscfElo give the `elo` model's ratings and predictions bit for bit."""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine import EloState, initial_snapshot, model_named
from evaluation._elo import Elo, FideElo, UscfElo

SNAPSHOT = initial_snapshot(model_named("adr").params)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("baseline", "overrides"),
    [
        (Elo(k=24.0), {"k": 24.0}),
        (FideElo(), {"k_rule": "fide"}),
        (UscfElo(), {"k_rule": "uscf"}),
        (UscfElo(effective_games_cap=10**9), {"k_rule": "uscf", "uscf_games_cap": 10**9}),
    ],
    ids=["fixed", "fide", "uscf", "uscf-uncapped"],
)
def test_the_evaluation_elo_is_the_engine_elo(baseline: Elo, overrides: dict[str, Any]) -> None:
    model = model_named("elo", overrides)
    states: dict[str, EloState] = {}
    rng = random.Random(11)
    for ts in range(20_000):
        a, b = (f"p{i}" for i in rng.sample(range(40), 2))
        if (a < b) != (rng.random() < 0.995):  # a skill order, so that some reach 2400
            a, b = b, a
        sa = states.get(a, model.new_player())
        sb = states.get(b, model.new_player())
        assert baseline.predict(a, b, ts) == model.predict(sa, sb, ts, 0, 2, SNAPSHOT)
        baseline.update(a, b, ts)
        out = model.rate(sa, sb, ts, 0, 2, SNAPSHOT)
        states[a], states[b] = out.attacker, out.victim
    assert {p: s.rating for p, s in states.items()} == baseline.ratings
    if isinstance(baseline, FideElo):
        assert baseline.reached_top == {p for p, s in states.items() if s.top} != set()
