"""The synthetic stream: deterministic, time-ordered, and carrying the injections it promises."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest

from evaluation._errors import EvaluationError
from evaluation._stream import DAY_MS, StreamConfig, generate, organic_stream, outcome_probability

SMALL = StreamConfig(seed=7, players=60, events=6_000, days=200)


def test_same_seed_same_stream_other_seed_other_stream() -> None:
    a, b = generate(SMALL), generate(SMALL)
    assert a.events == b.events
    assert a.base_skill == b.base_skill
    c = generate(StreamConfig(seed=8, players=60, events=6_000, days=200))
    assert c.events != a.events


def test_events_are_time_ordered_and_well_formed() -> None:
    s = generate(SMALL)
    assert all(x.ts <= y.ts for x, y in itertools.pairwise(s.events))
    assert all(e.attacker != e.victim for e in s.events)
    assert all(isinstance(e.ts, int) for e in s.events)
    kinds = Counter(e.kind for e in s.events)
    assert kinds["organic"] == SMALL.events
    farm_kills = sum(p.kills for p in SMALL.farm_patterns) * SMALL.farmers_per_pattern
    assert kinds["farm"] == farm_kills
    assert 0 < s.test_start < len(s.events)


def test_absent_players_are_absent_and_then_stronger() -> None:
    s = generate(SMALL)
    start, end = s.absence
    assert end - start == SMALL.absence_days * DAY_MS
    for p in s.returners:
        assert not any(start <= e.ts < end and p in (e.attacker, e.victim) for e in s.events)
        assert any(e.ts >= end and p in (e.attacker, e.victim) for e in s.events)
        assert s.skill(p, end) - s.skill(p, end - 1) == pytest.approx(SMALL.return_boost)


def test_jumpers_jump_once() -> None:
    s = generate(SMALL)
    assert len(s.jumpers) == round(SMALL.players * SMALL.jump_fraction)
    for p in s.jumpers:
        assert s.skill(p, s.jump_ts) - s.skill(p, s.jump_ts - 1) == pytest.approx(SMALL.jump_size)


def test_farm_sessions_follow_their_pattern() -> None:
    s = generate(SMALL)
    for session in s.farm_sessions:
        kills = [e for e in s.events if e.session == session.index]
        pattern = next(p for p in SMALL.farm_patterns if p.name == session.pattern)
        assert len(kills) == pattern.kills
        assert {(e.attacker, e.victim) for e in kills} == {(session.farmer, session.victim)}
        gaps = {y.ts - x.ts for x, y in itertools.pairwise(kills)}
        assert gaps == {pattern.interval_s * 1000}


def test_outcomes_follow_the_hidden_skills() -> None:
    # The first-drawn player's win rate matches the mean model probability (±4 standard errors).
    s = generate(organic_stream(seed=3, players=40, events=20_000, days=30))
    organic = [e for e in s.events if e.kind == "organic"]
    probs = [
        outcome_probability(s.skill(e.first, e.ts) - s.skill(e.second, e.ts), "logistic", 400.0)
        for e in organic
    ]
    wins = sum(e.first_won for e in organic)
    mean = sum(probs)
    sd = math.sqrt(sum(p * (1 - p) for p in probs))
    assert abs(wins - mean) < 4 * sd


def test_outcome_models() -> None:
    assert outcome_probability(0.0, "logistic", 400.0) == 0.5
    assert outcome_probability(400.0, "logistic", 400.0) == pytest.approx(10 / 11)
    assert outcome_probability(400.0, "arctan", 400.0) == pytest.approx(0.75)


def test_too_few_players_or_days_is_refused() -> None:
    with pytest.raises(EvaluationError):
        generate(StreamConfig(players=10))
    with pytest.raises(EvaluationError):
        generate(StreamConfig(days=100))  # the farming sessions are due on day 150


def test_probit_outcome_is_phi_of_the_gap_over_the_pair_noise() -> None:
    assert outcome_probability(0.0, "probit", 400.0, 250.0) == 0.5
    assert outcome_probability(250.0, "probit", 400.0, 250.0) == pytest.approx(0.8413447461)
    assert outcome_probability(-500.0, "probit", 400.0, 250.0) == pytest.approx(0.0227501319)


def test_probit_streams_draw_per_player_noise_and_leave_the_other_models_alone() -> None:
    base = StreamConfig(seed=7, players=60, events=6_000, days=200)
    logistic = generate(base)
    probit = generate(
        StreamConfig(seed=7, players=60, events=6_000, days=200, outcome_model="probit")
    )
    # same players, skills, times and pairs; only who wins may differ
    assert probit.base_skill == logistic.base_skill
    assert [e.ts for e in probit.events] == [e.ts for e in logistic.events]
    assert {frozenset((e.attacker, e.victim)) for e in probit.events} == {
        frozenset((e.attacker, e.victim)) for e in logistic.events
    }
    assert [e.first_won for e in probit.events] != [e.first_won for e in logistic.events]
    noise = list(probit.performance_sd.values())
    assert len(noise) == 60 and len(set(noise)) == 60
    assert all(base.performance_sd_low <= s <= base.performance_sd_high for s in noise)
    with pytest.raises(EvaluationError):
        generate(StreamConfig(outcome_model="cauchy"))
