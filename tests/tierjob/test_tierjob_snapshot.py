"""The job's snapshot equals engine.take_snapshot on the same state (real Redis).

The expected value is the engine's function on the players themselves, with A decided by
engine.is_active, so the job's pruning, counting and reconciliation are checked against the
definition, not against themselves.
"""

from __future__ import annotations

import random

import msgspec
import pytest
import redis
from _tierjob_support import (
    DAY_MS,
    T0,
    drop_namespace,
    expected_snapshot,
    played,
    player,
    write_players,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine import Params, PlayerState, boundary_targets
from redis_layout import Keys, decode_snapshot
from tierjob import Calibrator, Config

PARAMS = Params()


def calibrator(client: redis.Redis, ns: str, params: Params = PARAMS) -> Calibrator:
    return Calibrator(client, Config(namespace=ns, params=params))


def populate(
    client: redis.Redis, ns: str, rng: random.Random, count: int, now: int, active_share: float
) -> dict[str, PlayerState]:
    """`population(...)` written to the namespace's player hashes and indexes."""
    players = population(rng, count, now, active_share)
    write_players(client, Keys.of(ns), players, PARAMS)
    return players


def populated_job(
    client: redis.Redis, ns: str, rng: random.Random, count: int, now: int, active_share: float
) -> tuple[dict[str, PlayerState], Calibrator]:
    """`populate(...)`, and a Calibrator of the namespace."""
    return populate(client, ns, rng, count, now, active_share), calibrator(client, ns)


def population(
    rng: random.Random, count: int, now: int, active_share: float
) -> dict[str, PlayerState]:
    """`count` players with 5 events each: about `active_share` of them active at `now`."""
    out = {}
    for i in range(count):
        if rng.random() < active_share:
            first = now - rng.randrange(1, 7 * DAY_MS)  # the 5th most recent is within 7 days
        else:
            first = now - 7 * DAY_MS - rng.randrange(0, 30 * DAY_MS)
        recent = tuple(first + j * rng.randrange(0, 3_600_000) for j in range(5))
        out[f"p{i}"] = player(PARAMS, rng.uniform(0.0, 4000.0), recent)
    return out


def published(client: redis.Redis, ns: str):  # type: ignore[no-untyped-def]
    return decode_snapshot(client.hgetall(Keys.of(ns).snapshot))


def test_first_run_uses_the_targets_unsmoothed(redis_client: redis.Redis, ns: str) -> None:
    players = populate(redis_client, ns, random.Random(1), 120, T0, 0.5)

    result = calibrator(redis_client, ns).run_once(T0)

    want = expected_snapshot(players, T0, None, PARAMS)
    assert result.outcome == "published" and result.version == 1
    assert result.snapshot == want
    active = sorted(s.mu for s in players.values() if s.recent[0] > T0 - 7 * DAY_MS)
    assert want.active_count == len(active) >= PARAMS.p_min
    assert want.boundaries == boundary_targets(active, PARAMS)  # §6.3: first run, B = targets
    assert published(redis_client, ns) == (1, want)


def test_later_runs_smooth_against_the_published_snapshot(
    redis_client: redis.Redis, ns: str
) -> None:
    rng = random.Random(2)
    keys = Keys.of(ns)
    players, job = populated_job(redis_client, ns, rng, 150, T0, 0.6)
    first = job.run_once(T0).snapshot
    assert first is not None and first.boundaries is not None

    moved = {
        pid: msgspec.structs.replace(s, mu=rng.uniform(0.0, 4000.0))
        for pid, s in list(players.items())[:60]
    }
    players |= moved
    write_players(redis_client, keys, moved, PARAMS)
    now = T0 + 3_600_000
    second = job.run_once(now)

    want = expected_snapshot(players, now, first, PARAMS)
    assert second.snapshot == want and second.version == 2
    assert want.boundaries != expected_snapshot(players, now, None, PARAMS).boundaries
    assert published(redis_client, ns) == (2, want)


def test_fewer_than_p_min_active_keeps_the_boundaries(redis_client: redis.Redis, ns: str) -> None:
    rng = random.Random(3)
    players, job = populated_job(redis_client, ns, rng, 60, T0, 0.8)
    first = job.run_once(T0).snapshot
    assert first is not None and first.boundaries is not None

    # Four days on, the players whose 5th latest event is older than 7 days drop out.
    later = T0 + 6 * DAY_MS
    want = expected_snapshot(players, later, first, PARAMS)
    assert 0 < want.active_count < PARAMS.p_min
    result = job.run_once(later)
    assert result.snapshot == want
    assert want.boundaries == first.boundaries
    assert result.population is not None and result.population.expired > 0


def test_fewer_than_p_min_on_the_first_run_publishes_no_boundaries(
    redis_client: redis.Redis, ns: str
) -> None:
    players = populate(redis_client, ns, random.Random(4), 30, T0, 0.3)
    want = expected_snapshot(players, T0, None, PARAMS)
    assert 0 < want.active_count < PARAMS.p_min and want.boundaries is None

    assert calibrator(redis_client, ns).run_once(T0).snapshot == want
    fields = redis_client.hgetall(Keys.of(ns).snapshot)
    assert fields[b"boundaries"] == b""


def test_nobody_active_falls_back_to_every_tracked_player(
    redis_client: redis.Redis, ns: str
) -> None:
    players = population(random.Random(5), 50, T0, 0.0)
    players |= {f"new{i}": player(PARAMS, 900.0 + i, (T0 - 1000,)) for i in range(3)}  # n < 5
    write_players(redis_client, Keys.of(ns), players, PARAMS)

    result = calibrator(redis_client, ns).run_once(T0)

    want = expected_snapshot(players, T0, None, PARAMS)
    assert want.active_count == 53 and want.boundaries is not None
    assert result.snapshot == want
    assert result.population is not None and result.population.fallback_mus


def test_empty_population_gives_mu0_and_no_boundaries(redis_client: redis.Redis, ns: str) -> None:
    result = calibrator(redis_client, ns).run_once(T0)
    assert result.snapshot == expected_snapshot({}, T0, None, PARAMS)
    assert result.snapshot is not None
    assert (result.snapshot.mean_mu_active, result.snapshot.boundaries) == (PARAMS.mu0, None)


def test_active_means_strictly_later_than_now_minus_t_active(
    redis_client: redis.Redis, ns: str
) -> None:
    cutoff = T0 - PARAMS.active_ms
    players = {
        f"in{i}": player(PARAMS, 1000.0 + i, tuple(cutoff + 1 + j for j in range(5)))
        for i in range(25)
    }
    players["edge"] = player(PARAMS, 4000.0, tuple(cutoff + j for j in range(5)))
    write_players(redis_client, Keys.of(ns), players, PARAMS)

    result = calibrator(redis_client, ns).run_once(T0)

    assert result.snapshot == expected_snapshot(players, T0, None, PARAMS)
    assert result.snapshot is not None and result.snapshot.active_count == 25
    assert redis_client.zscore(Keys.of(ns).active_mu, "edge") is None


def test_each_prune_handles_only_the_newly_expired(redis_client: redis.Redis, ns: str) -> None:
    keys = Keys.of(ns)
    players, job = populated_job(redis_client, ns, random.Random(6), 200, T0, 1.0)
    times = [T0, T0 + DAY_MS, T0 + DAY_MS, T0 + 3 * DAY_MS]
    previous = None
    for now in times:
        result = job.run_once(now)
        assert result.population is not None
        assert result.snapshot == expected_snapshot(players, now, previous, PARAMS)
        previous = result.snapshot
        assert not result.population.reconciled
        assert redis_client.get(keys.pruned_to) == str(now - PARAMS.active_ms).encode()
    expired_total = sum(1 for s in players.values() if s.recent[0] <= times[-1] - PARAMS.active_ms)
    assert redis_client.zcard(keys.active_mu) == len(players) - expired_total


def test_prune_counts_only_players_expired_since_the_last_run(
    redis_client: redis.Redis, ns: str
) -> None:
    players, job = populated_job(redis_client, ns, random.Random(7), 300, T0, 1.0)
    job.run_once(T0)
    for a, b in [(T0, T0 + DAY_MS), (T0 + DAY_MS, T0 + DAY_MS), (T0 + DAY_MS, T0 + 4 * DAY_MS)]:
        lo, hi = a - PARAMS.active_ms, b - PARAMS.active_ms
        newly = sum(1 for s in players.values() if lo < s.recent[0] <= hi)
        result = job.run_once(b)
        assert result.population is not None and result.population.expired == newly


def test_a_late_event_that_left_an_expired_player_is_reconciled(
    redis_client: redis.Redis, ns: str
) -> None:
    keys = Keys.of(ns)
    players, job = populated_job(redis_client, ns, random.Random(8), 80, T0, 0.7)
    first = job.run_once(T0).snapshot

    # A late event: active at its own time, expired at the job's now; the consumer adds it.
    late = {"late": player(PARAMS, 3999.0, tuple(T0 - 8 * DAY_MS + j for j in range(5)))}
    players |= late
    write_players(redis_client, keys, late, PARAMS)
    assert redis_client.zscore(keys.active_mu, "late") is not None

    now = T0 + 60_000
    result = job.run_once(now)
    assert result.snapshot == expected_snapshot(players, now, first, PARAMS)
    assert result.population is not None
    assert (result.population.reconciled, result.population.dropped) == (True, 1)
    assert redis_client.zscore(keys.active_mu, "late") is None
    assert job.run_once(now).population.reconciled is False  # type: ignore[union-attr]


def test_an_active_player_missing_from_active_mu_is_added_with_its_mu(
    redis_client: redis.Redis, ns: str
) -> None:
    keys = Keys.of(ns)
    players = populate(redis_client, ns, random.Random(9), 60, T0, 0.9)
    gone = next(p for p, s in players.items() if s.recent[0] > T0 - PARAMS.active_ms)
    redis_client.zrem(keys.active_mu, gone)

    result = calibrator(redis_client, ns).run_once(T0)

    assert result.snapshot == expected_snapshot(players, T0, None, PARAMS)
    assert result.population is not None and result.population.added == 1
    assert redis_client.zscore(keys.active_mu, gone) == players[gone].mu


def test_a_replica_whose_clock_is_behind_still_sees_exactly_a(
    redis_client: redis.Redis, ns: str
) -> None:
    players, job = populated_job(redis_client, ns, random.Random(10), 100, T0, 1.0)
    ahead = job.run_once(T0 + 5 * DAY_MS).snapshot
    behind = T0 + DAY_MS
    result = job.run_once(behind)
    assert result.snapshot == expected_snapshot(players, behind, ahead, PARAMS)
    assert result.population is not None and result.population.added > 0


# Small p_min, so that few players exercise boundaries, fallbacks and smoothing alike.
SMALL = Params.from_overrides({"p_min": "4"})

_times = st.integers(min_value=-20 * DAY_MS, max_value=2 * DAY_MS)
_player = st.tuples(
    st.floats(min_value=0.0, max_value=4000.0),
    st.lists(_times, min_size=0, max_size=7),
)
_step = st.tuples(
    st.integers(min_value=-DAY_MS, max_value=4 * DAY_MS),  # clock step (may go back)
    st.dictionaries(st.integers(0, 11), _player, max_size=6),  # players the consumer wrote
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    start=st.dictionaries(st.integers(0, 11), _player, max_size=12),
    steps=st.lists(_step, min_size=1, max_size=5),
)
def test_property_every_run_equals_the_engine_snapshot(
    redis_client: redis.Redis, unique_name, start, steps
) -> None:  # type: ignore[no-untyped-def]
    keys = Keys.of(unique_name("tjp"))
    job = Calibrator(redis_client, Config(namespace=keys.namespace, params=SMALL))
    players: dict[str, PlayerState] = {}
    now = T0
    previous = None
    try:
        for writes, step in [(start, 0), *((w, s) for s, w in steps)]:
            now += step
            new = {}
            for i, (mu, times) in writes.items():
                events = tuple(T0 + t for t in times)
                old = players.get(f"p{i}")
                new[f"p{i}"] = (
                    player(SMALL, mu, events) if old is None else played(SMALL, old, mu, events)
                )
            players |= new
            write_players(redis_client, keys, new, SMALL)
            result = job.run_once(now)
            assert result.population is not None
            event(f"reconciled={result.population.reconciled}")
            event(f"fallback={bool(result.population.fallback_mus)}")
            want = expected_snapshot(players, now, previous, SMALL)
            assert result.snapshot == want
            previous = want
    finally:
        drop_namespace(redis_client, keys)


@pytest.mark.parametrize("protocol", [2, 3])
def test_either_redis_protocol_reads_the_same_snapshot(
    redis_client: redis.Redis, redis_url: str, ns: str, protocol: int
) -> None:
    players = populate(redis_client, ns, random.Random(13), 300, T0, 0.5)
    client = redis.Redis.from_url(redis_url, protocol=protocol)
    try:
        result = calibrator(client, ns).run_once(T0)
    finally:
        client.close()
    assert result.snapshot == expected_snapshot(players, T0, None, PARAMS)
