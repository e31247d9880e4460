"""The settings family: deterministic, with the split declared, and each stream carrying the
shape its setting promises (churn, smurfs, lobbies, coin-flip kills, curves, paced farming)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter

import pytest

from evaluation._errors import EvaluationError
from evaluation._generators import (
    CURVES,
    EPOCH_MS,
    Setting,
    curve_probability,
    generate_setting,
)
from evaluation._settings import SETTINGS, TUNING_SEEDS, long_setting, setting, split
from evaluation._stream import DAY_MS

SMALL = {"events": 2_000}


def small(name: str, **changes: object) -> Setting:
    return dataclasses.replace(setting(name), **{**SMALL, **changes})


def test_the_split_is_declared_and_held_out_settings_are_whole() -> None:
    tuning, held = split("tuning"), split("held-out")
    assert tuning and held and len(tuning) + len(held) == len(SETTINGS)
    assert {s.name for s in tuning}.isdisjoint({s.name for s in held})
    # held-out settings carry shapes no tuning setting has
    assert {s.curve for s in held} - {s.curve for s in tuning} == {"student-t"}
    assert all(s.smurf_share == 0 and s.play_sigma == 0 for s in tuning)
    assert any(s.smurf_share > 0 for s in held) and any(s.play_sigma > 0 for s in held)
    assert not set(TUNING_SEEDS) & set(range(1, 11))
    with pytest.raises(EvaluationError):
        setting("no-such-setting")


@pytest.mark.parametrize("name", [s.name for s in SETTINGS])
def test_same_seed_same_stream_other_seed_other_stream(name: str) -> None:
    a, b = generate_setting(small(name), 3), generate_setting(small(name), 3)
    assert a.events == b.events and a.base_skill == b.base_skill
    assert generate_setting(small(name), 4).events != a.events


@pytest.mark.parametrize("name", [s.name for s in SETTINGS])
def test_streams_are_time_ordered_and_farm_at_every_pace(name: str) -> None:
    cfg = small(name)
    s = generate_setting(cfg, 1)
    assert all(x.ts <= y.ts for x, y in itertools.pairwise(s.events))
    assert all(e.attacker != e.victim and isinstance(e.ts, int) for e in s.events)
    kinds = Counter(e.kind for e in s.events)
    assert kinds["organic"] == cfg.events
    assert len(s.farm_sessions) == 2 * len(cfg.farm_paces_s)
    for session in s.farm_sessions:
        kills = [e for e in s.events if e.session == session.index]
        assert len(kills) == cfg.farm_kills
        assert {(e.attacker, e.victim) for e in kills} == {(session.farmer, session.victim)}
        pace = int(session.pattern.split("-")[1].removesuffix("s"))
        assert {y.ts - x.ts for x, y in itertools.pairwise(kills)} == {pace * 1000}
        # the farmer and the victim play no organic kill while the session runs
        assert not any(
            e.kind == "organic"
            and session.start_ts <= e.ts <= session.end_ts
            and {session.farmer, session.victim} & {e.attacker, e.victim}
            for e in s.events
        )
        if session.pattern.startswith("alt"):
            # a fresh account: never seen before its session nor after it
            assert all(
                e.session == session.index
                for e in s.events
                if session.victim in (e.attacker, e.victim)
            )


def test_churn_accounts_play_only_while_present_and_smurfs_are_strong() -> None:
    cfg = small("newcomer-stream", events=4_000)
    s = generate_setting(cfg, 2)
    first = {}
    for e in s.events:
        for p in (e.attacker, e.victim):
            first.setdefault(p, e.ts)
    late = [p for p, day in s.arrival_day.items() if day > 0]
    assert late and all(
        first.get(p, math.inf) >= EPOCH_MS + s.arrival_day[p] * DAY_MS for p in late
    )
    # smurfs: arrivals whose skill on arrival tops the strongest mixture component's mean
    arrivals_skill = [s.skill(p, EPOCH_MS + s.arrival_day[p] * DAY_MS) for p in late]
    assert max(arrivals_skill) > 1900.0


def test_learning_curves_raise_a_newcomers_skill() -> None:
    cfg = small("learning-probit-random")
    s = generate_setting(dataclasses.replace(cfg, drift=0.0), 5)
    p = next(p for p, d in s.arrival_day.items() if d > 0 and d < cfg.days - 60)
    start = EPOCH_MS + s.arrival_day[p] * DAY_MS
    gained = s.skill(p, start + 60 * DAY_MS) - s.skill(p, start)
    assert gained == pytest.approx(cfg.learning_gain * (1 - math.exp(-60 / cfg.learning_days)))


def test_lobbies_pair_players_closer_in_skill_than_uniform_pairs() -> None:
    base = small("uniform-logistic", events=6_000)
    gaps = {}
    for mm in ("uniform", "lobbies"):
        s = generate_setting(dataclasses.replace(base, matchmaking=mm), 1)
        late = [e for e in s.events if e.kind == "organic"][3_000:]
        gaps[mm] = sum(abs(s.skill(e.attacker, e.ts) - s.skill(e.victim, e.ts)) for e in late)
    assert gaps["lobbies"] < 0.75 * gaps["uniform"]


def test_coin_flip_kills_ignore_skill() -> None:
    cfg = small("uniform-logistic", events=6_000, random_share=1.0)
    s = generate_setting(cfg, 1)
    organic = [e for e in s.events if e.kind == "organic"]
    stronger_first = [e for e in organic if s.skill(e.first, e.ts) > s.skill(e.second, e.ts)]
    wins = sum(e.first_won for e in stronger_first)
    n = len(stronger_first)
    assert abs(wins - n / 2) < 4 * math.sqrt(n / 4)


@pytest.mark.parametrize("curve", CURVES)
def test_curves_are_symmetric_monotone_and_half_at_zero(curve: str) -> None:
    assert curve_probability(0.0, curve, 400.0, 277.0) == pytest.approx(0.5)
    xs = [-1200.0, -400.0, -50.0, 0.0, 50.0, 400.0, 1200.0]
    ps = [curve_probability(x, curve, 400.0, 277.0) for x in xs]
    assert ps == sorted(ps) and all(0.0 < p < 1.0 for p in ps)
    for x in xs:
        p, q = curve_probability(x, curve, 400.0, 277.0), curve_probability(-x, curve, 400.0, 277.0)
        assert p + q == pytest.approx(1.0)


def test_student_t_tails_lie_between_the_logistic_and_the_cauchy() -> None:
    def upset(curve: str) -> float:
        return 1.0 - curve_probability(2_000.0, curve, 400.0, 277.0)

    assert upset("logistic") < upset("student-t") < upset("arctan")


def test_long_setting_and_validation() -> None:
    long = long_setting(setting("newcomer-stream"))
    assert long.days == 3 * 365 and long.name.endswith("-long")
    with pytest.raises(EvaluationError):
        dataclasses.replace(setting("uniform-logistic"), curve="cauchy").validate()
    with pytest.raises(EvaluationError):
        dataclasses.replace(setting("uniform-logistic"), days=40).validate()


def test_a_small_churning_population_reuses_farmers_rather_than_failing() -> None:
    # 16 sessions need 16 farmers and 8 weak victims: more than 20 accounts hold
    cfg = small("smurfs-lobbies-logistic", accounts=20, initial=1.0, lifetime_shape=0.0)
    s = generate_setting(cfg, 88)
    assert len(s.farm_sessions) == 16
    farmers = Counter(f.farmer for f in s.farm_sessions)
    assert max(farmers.values()) > 1
