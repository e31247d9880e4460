"""The tier job's Prometheus metrics (the snapshot codec: tests/redis_layout)."""

from __future__ import annotations

import random

import redis
from _tierjob_support import T0, drop_namespace, player, write_players
from prometheus_client import generate_latest

from engine import Params
from redis_layout import Keys
from tierjob import Calibrator, Config
from tierjob._metrics import Metrics


def test_metrics_expose_the_published_snapshot(redis_client: redis.Redis, unique_name) -> None:  # type: ignore[no-untyped-def]
    params = Params()
    keys = Keys.of(unique_name("tjm"))
    rng = random.Random(31)
    players = {
        f"p{i}": player(params, rng.uniform(0, 4000), tuple(T0 - 10 - j for j in range(5)))
        for i in range(25)
    }
    write_players(redis_client, keys, players, params)
    redis_client.hset(keys.tier_counts, mapping={"2M": 7, "5L": 3})
    try:
        result = Calibrator(redis_client, Config(namespace=keys.namespace)).run_once(T0)
    finally:
        drop_namespace(redis_client, keys)
    metrics = Metrics()
    metrics.observe(result)
    text = generate_latest(metrics.registry).decode()
    values = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    snap = result.snapshot
    assert snap is not None and snap.boundaries is not None
    assert values["adr_active_players"] == 25
    assert values["adr_mean_mu_active"] == snap.mean_mu_active
    assert values['adr_tier_boundary{k="1"}'] == snap.boundaries[0]
    assert values['adr_tier_boundary{k="14"}'] == snap.boundaries[13]
    assert values['adr_tier_players{tier="2M"}'] == 7
    assert values['adr_tier_players{tier="1H"}'] == 0
    assert values["adr_calibration_lease_held"] == 1
    assert values["adr_calibration_duration_seconds_count"] == 1
    assert values["adr_calibration_last_success_timestamp_seconds"] == T0 / 1000
    assert values['adr_calibration_runs_total{outcome="published"}'] == 1
