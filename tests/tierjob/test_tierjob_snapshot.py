"""The job's snapshot equals engine.take_snapshot on the same state (real Redis).

The expected value is the engine's function on the players themselves, with A decided by
engine.is_active, so the job's paged read of A and of each member's μ is checked against the
definition, not against itself.
"""

from __future__ import annotations

import logging
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
from prometheus_client import CollectorRegistry

from engine import Params, PlayerState, boundary_targets
from redis_layout import Keys, decode_snapshot
from tierjob import Calibrator, Config, LeaseLost, PopulationReader
from tierjob._metrics import Metrics

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


def test_each_run_reads_exactly_the_players_active_at_its_now(
    redis_client: redis.Redis, ns: str
) -> None:
    players, job = populated_job(redis_client, ns, random.Random(6), 200, T0, 1.0)
    previous = None
    for now in [T0, T0 + DAY_MS, T0 + DAY_MS, T0 + 3 * DAY_MS]:
        result = job.run_once(now)
        assert result.snapshot == expected_snapshot(players, now, previous, PARAMS)
        previous = result.snapshot


def test_a_read_in_pages_of_one_gives_the_same_snapshot_with_tied_activity_times(
    redis_client: redis.Redis, ns: str
) -> None:
    """Members that share an activity time straddle pages: each is read once."""
    keys = Keys.of(ns)
    cutoff = T0 - PARAMS.active_ms
    players = {
        f"t{i}": player(PARAMS, 1000.0 + 7 * i, tuple(cutoff + 1 + (i % 4) * 10 for _ in range(5)))
        for i in range(30)
    }
    write_players(redis_client, keys, players, PARAMS)
    for chunk in (1, 2, 3, 7, 1000):
        reader = PopulationReader(redis_client, keys, "a", chunk)
        assert redis_client.set(keys.lease, "a")
        population = reader.read(cutoff)
        want = sorted(s.mu for s in players.values())
        assert population.active_mus == want
        assert population.pages >= len(players) // chunk


def test_a_late_event_that_left_an_expired_player_is_not_in_a(
    redis_client: redis.Redis, ns: str
) -> None:
    keys = Keys.of(ns)
    players, job = populated_job(redis_client, ns, random.Random(8), 80, T0, 0.7)
    first = job.run_once(T0).snapshot

    # A late event: active at its own time, expired at the job's now.
    late = {"late": player(PARAMS, 3999.0, tuple(T0 - 8 * DAY_MS + j for j in range(5)))}
    players |= late
    write_players(redis_client, keys, late, PARAMS)

    now = T0 + 60_000
    result = job.run_once(now)
    assert result.snapshot == expected_snapshot(players, now, first, PARAMS)


@pytest.mark.parametrize(
    ("what", "plant"),
    [
        ("no hash", lambda c, key: c.delete(key)),
        ("hash without mu", lambda c, key: c.hdel(key, "mu")),
        ("mu not a float", lambda c, key: c.hset(key, "mu", "12,5")),
        ("mu not finite", lambda c, key: c.hset(key, "mu", "nan")),
        ("mu infinite", lambda c, key: c.hset(key, "mu", "-inf")),
        ("another type", lambda c, key: (c.delete(key), c.set(key, "1500.0"))),
    ],
)
def test_an_active_player_without_a_readable_mu_is_skipped_counted_and_logged(
    redis_client: redis.Redis,
    ns: str,
    what: str,
    plant,
    caplog,  # type: ignore[no-untyped-def]
) -> None:
    keys = Keys.of(ns)
    players = populate(redis_client, ns, random.Random(9), 60, T0, 0.9)
    bad = next(p for p, s in players.items() if s.recent[0] > T0 - PARAMS.active_ms)
    plant(redis_client, keys.player(bad))
    del players[bad]
    registry = CollectorRegistry()
    metrics = Metrics(registry)

    with caplog.at_level(logging.WARNING, logger="adr.calibrate"):
        result = calibrator(redis_client, ns).run_once(T0)
    metrics.observe(result)

    assert result.snapshot == expected_snapshot(players, T0, None, PARAMS), what
    assert result.population is not None and result.population.corrupt == 1
    assert result.summary()["corrupt_players"] == 1
    sample = registry.get_sample_value("adr_corrupt_state_total", {"what": "player"})
    assert sample == 1.0
    logged = [r for r in caplog.records if r.getMessage() == "players skipped: no readable mu"]
    assert [r.keys for r in logged] == [[keys.player(bad)]]  # type: ignore[attr-defined]


def test_the_fallback_skips_and_counts_an_unreadable_mu(redis_client: redis.Redis, ns: str) -> None:
    keys = Keys.of(ns)
    players = population(random.Random(11), 20, T0, 0.0)
    write_players(redis_client, keys, players, PARAMS)
    redis_client.hset(keys.player("p3"), "mu", "inf")
    del players["p3"]

    result = calibrator(redis_client, ns).run_once(T0)

    assert result.snapshot == expected_snapshot(players, T0, None, PARAMS)
    assert result.population is not None and result.population.corrupt == 1


def test_the_keys_of_earlier_releases_are_unlinked_under_the_lease(
    redis_client: redis.Redis, ns: str
) -> None:
    keys = Keys.of(ns)
    players, job = populated_job(redis_client, ns, random.Random(12), 50, T0, 0.8)
    redis_client.zadd(keys.active_mu, {"p0": 1.0, "stale": 2.0})
    redis_client.set(keys.pruned_to, str(T0 - 10 * DAY_MS))

    result = job.run_once(T0)

    assert result.snapshot == expected_snapshot(players, T0, None, PARAMS)
    assert result.population is not None and result.population.legacy_removed == 2
    assert redis_client.exists(keys.active_mu, keys.pruned_to) == 0
    again = job.run_once(T0 + 1).population
    assert again is not None and again.legacy_removed == 0
    redis_client.set(keys.lease, "other")  # a paused replica unlinks nothing
    redis_client.zadd(keys.active_mu, {"p0": 1.0})
    with pytest.raises(LeaseLost):
        PopulationReader(redis_client, keys, "a", 100).drop_legacy()
    assert redis_client.exists(keys.active_mu) == 1


def test_a_replica_whose_clock_is_behind_still_sees_exactly_a(
    redis_client: redis.Redis, ns: str
) -> None:
    players, job = populated_job(redis_client, ns, random.Random(10), 100, T0, 1.0)
    ahead = job.run_once(T0 + 5 * DAY_MS).snapshot
    behind = T0 + DAY_MS
    result = job.run_once(behind)
    assert result.snapshot == expected_snapshot(players, behind, ahead, PARAMS)


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
    # Pages of 2 members: A straddles pages (and ties of activity time do) in most examples.
    job = Calibrator(redis_client, Config(namespace=keys.namespace, params=SMALL, read_chunk=2))
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
            event(f"pages>1={result.population.pages > 1}")
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


def test_writes_between_pages_give_each_player_once_with_a_committed_mu(
    redis_client: redis.Redis, ns: str
) -> None:
    """The consumer writes while the job reads page by page (here: between pages, from the
    renewal hook): a player whose activity time moves past the cursor is read once, a μ changed
    mid-read counts with its old or its new value, one that joins A may be read or not."""
    keys = Keys.of(ns)
    cutoff = T0 - PARAMS.active_ms
    players = {
        f"s{i:02}": player(PARAMS, 100.0 * i, tuple(cutoff + 1000 * (i + 1) for _ in range(5)))
        for i in range(30)
    }
    write_players(redis_client, keys, players, PARAMS)
    redis_client.set(keys.lease, "a")
    writes = iter(
        [
            # s00 (read on page 1) plays again: its activity time jumps past the cursor
            {"s00": played(PARAMS, players["s00"], 5000.0, tuple(T0 for _ in range(5)))},
            # s20 (not read yet) is rated: μ 20000.0 instead of 2000.0
            {"s20": msgspec.structs.replace(players["s20"], mu=20000.0)},
            # a newcomer joins A
            {"new": player(PARAMS, 7777.0, tuple(T0 for _ in range(5)))},
        ]
    )

    def write_between_pages() -> bool:
        write_players(redis_client, keys, next(writes, {}), PARAMS)
        return True

    reader = PopulationReader(redis_client, keys, "a", 4, renew=write_between_pages)
    mus = reader.read(cutoff).active_mus

    assert len(mus) in (30, 31)  # each of the 30 once; the newcomer maybe
    assert (0.0 in mus) != (5000.0 in mus)  # s00: once, old or new μ
    assert (2000.0 in mus) != (20000.0 in mus)  # s20: once, old or new μ
    assert set(mus) - {0.0, 5000.0, 2000.0, 20000.0, 7777.0} == {
        100.0 * i for i in range(1, 30) if i != 20
    }
