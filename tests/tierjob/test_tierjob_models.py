"""The tier job on a pool whose model is not ADR: the snapshot is taken over the model's display
rating of the active players (read through the model's codec), as the engine takes it."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest
import redis
from _tierjob_support import T0, drop_namespace

from engine import Params, model_named, model_parameters, take_snapshot, tier_label
from redis_layout import Keys, model_stamp
from redis_layout.player_codec import FIELDS, float_text
from tierjob import Calibrator, Config

pytestmark = pytest.mark.integration


def _write(client: redis.Redis, keys: Keys, model: Any, players: dict[str, Any]) -> None:
    """The hashes and activity scores the consumer writes for `players`."""
    for player, state in players.items():
        mu, sigma, n, last_ts, tier, window, packed = model.to_fields(state)
        values = [
            float_text(mu),
            float_text(sigma),
            str(n),
            "" if last_ts is None else str(last_ts),
        ]
        values += [tier_label(tier) if tier else "", window, packed, "1"]
        client.hset(keys.player(player), mapping=dict(zip(FIELDS, values, strict=True)))
        since = model.activity_time(state)
        if since is not None:
            client.zadd(keys.activity, {player: since})


@pytest.mark.parametrize(("name", "overrides"), [("trueskill", {"display_k": "2"}), ("elo", {})])
def test_the_snapshot_is_over_the_models_display_rating(
    redis_client: redis.Redis, unique_name, name: str, overrides: dict[str, str]
) -> None:  # type: ignore[no-untyped-def]
    params = Params()
    keys = Keys.of(unique_name("tjmodel"))
    model: Any = model_named(name, overrides)
    redis_client.set(keys.model, model_stamp(name, model_parameters(model)))
    rng = random.Random(7)
    new = model.new_player()
    fields = {f.name for f in msgspec.structs.fields(new)}
    rating = "rating" if "rating" in fields else "mu"
    active = {
        f"a{i}": msgspec.structs.replace(
            new, **{rating: rng.uniform(0, 50) if name == "trueskill" else rng.uniform(1000, 2000)},
            n=20, last_ts=T0 - 1000 - i,
        )
        for i in range(40)
    }  # fmt: skip
    idle = {
        f"i{i}": msgspec.structs.replace(new, n=3, last_ts=T0 - params.active_ms - 10 - i)
        for i in range(10)
    }
    _write(redis_client, keys, model, {**active, **idle})
    try:
        result = Calibrator(redis_client, Config(namespace=keys.namespace)).run_once(T0)
    finally:
        drop_namespace(redis_client, keys)
        redis_client.delete(keys.model)
    displays = sorted(model.display(s) for s in active.values())
    assert displays != sorted(msgspec.structs.asdict(s)[rating] for s in active.values()) or (
        name == "elo"
    )  # TrueSkill's display is μ − kσ, not μ
    want = take_snapshot(T0, displays, [], None, params)
    assert result.snapshot is not None
    assert result.snapshot.mean_mu_active == want.mean_mu_active
    assert result.snapshot.boundaries == want.boundaries
    assert result.snapshot.active_count == len(active)
