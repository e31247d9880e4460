"""`adr leaderboard` on a pool whose model is not ADR (`{ns}:model`): ranks and the rating shown
are the model's display rating (TrueSkill: μ − k·σ, here k = 2), read through its codec."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from adr_cli.main import main
from engine import model_named, model_parameters, tier_label
from redis_layout import Keys, model_stamp
from redis_layout.player_codec import FIELDS, float_text

pytestmark = pytest.mark.integration


def _write(client: redis.Redis, keys: Keys, model: Any, player: str, state: Any) -> None:
    mu, sigma, n, last_ts, tier, window, packed = model.to_fields(state)
    values = [
        float_text(mu),
        float_text(sigma),
        str(n),
        str(last_ts),
        tier_label(tier) if tier else "",
    ]
    client.hset(
        keys.player(player), mapping=dict(zip(FIELDS, [*values, window, packed, "1"], strict=True))
    )
    if tier:
        client.zadd(keys.lb, {player: model.display(state)})


def test_ranks_and_ratings_are_the_models_display_rating(
    redis_client: redis.Redis, unique_name, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    keys = Keys.of(unique_name("lbm"))
    model: Any = model_named("trueskill", {"display_k": "2"})
    redis_client.set(keys.model, model_stamp("trueskill", model_parameters(model)))
    new = model.new_player()
    states = {  # by μ: wide before sure; by μ − 2σ: sure before wide
        "sure": type(new)(30.0, 1.0, 40, 5, 2, 0.0, 0.0),  # display 28
        "wide": type(new)(34.0, 4.0, 40, 5, 1, 0.0, 0.0),  # display 26 (μ higher, rank lower)
        "fresh": type(new)(25.0, 8.0, 3, 5, 0, 0.0, 0.0),  # unplaced: display 9
    }
    for player, state in states.items():
        _write(redis_client, keys, model, player, state)
    url = redis_client.connection_pool.connection_kwargs
    base = [
        "leaderboard",
        "--redis-url",
        f"redis://{url['host']}:{url['port']}/0",
        "--namespace",
        keys.namespace,
    ]
    try:
        assert main([*base, "--json", "top", "5"]) == 0
        top = json.loads(capsys.readouterr().out)
        assert [(e["player"], e["mu"]) for e in top] == [("sure", 28.0), ("wide", 26.0)]
        assert main([*base, "--json", "rank", "fresh"]) == 0
        assert json.loads(capsys.readouterr().out) == {
            "rank": None,
            "player": "fresh",
            "mu": 9.0,
            "tier": None,
        }
        assert main([*base, "top", "1"]) == 0
        assert capsys.readouterr().out.splitlines()[0].split() == [
            "RANK",
            "PLAYER",
            "RATING",
            "TIER",
        ]
        redis_client.set(keys.model, '{"model":"glicko3","params":"0","parameters":{}}')
        assert main([*base, "top", "1"]) != 0  # a model this release does not know: refused
        assert "glicko3" in capsys.readouterr().err
    finally:
        redis_client.delete(keys.model, keys.lb, *(keys.player(p) for p in states))
