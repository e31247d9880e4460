"""Scenarios from the issue (farming, a 90-day return) and RatingBook's own rules."""

from __future__ import annotations

import msgspec
import pytest

from engine import (
    COUNTED,
    DUPLICATE,
    EngineError,
    Params,
    RatingBook,
    Snapshot,
    initial_snapshot,
    new_player,
    rate_kill,
    sigma_units,
)

P = Params()
DAY = 86_400_000
T0 = 1_700_000_000_000


def test_repeat_kill_farming_inside_the_cooldown_gains_nothing() -> None:
    # §2.1/§7.3: a kills b 120 times in 60 s (every 0.5 s); only the first one counts.
    farm = RatingBook(P)
    verdicts = [farm.apply(str(i), "a", "b", T0 + 500 * i) for i in range(120)]
    once = RatingBook(P)
    once.apply("0", "a", "b", T0)
    assert verdicts[0] is COUNTED and all(v is DUPLICATE for v in verdicts[1:])
    assert farm.players() == once.players()
    assert (farm.counted, farm.duplicates) == (1, 119)
    # the cooldown runs from the last *counted* kill: 60 s later it counts again
    assert farm.apply("x", "a", "b", T0 + 60_000) is COUNTED
    # the reverse direction is a different pair
    assert once.apply("y", "b", "a", T0 + 1) is COUNTED


def _history(book: RatingBook, player: str, start: int, kills: int) -> int:
    """`player` trades kills with a pool of opponents, one event a minute; returns the last ts."""
    ts = start
    for i in range(kills):
        ts = start + 61_000 * i
        opponent = f"o{i % 7}"
        if i % 3:
            book.apply(f"h{i}", player, opponent, ts)
        else:
            book.apply(f"h{i}", opponent, player, ts)
    return ts


@pytest.mark.parametrize("params", [P, Params.from_overrides({"eta_max": "400"})])
def test_a_90_day_absent_players_first_kill_is_bounded(params: Params) -> None:
    # §8: the returning player's first event moves μ by at most Δ_max, and by less than the same
    # kill by the same player would if it had been active (last event 1 hour before).
    book = RatingBook(params)
    last = _history(book, "r", T0, 60)
    state = book.player("r")
    assert state is not None and state.n == 60
    victim = new_player(params)
    units = sigma_units(state.sigma, params) + sigma_units(victim.sigma, params)
    snap = book.snapshot

    def move(ts: int) -> float:
        out = rate_kill(state, victim, ts, units, 2, snap, params)
        before = _decayed_mu(state.mu, ts - last, snap.mean_mu_active, params)
        return out.attacker.mu - before

    returning, active = move(last + 90 * DAY), move(last + 3_600_000)
    assert 0.0 < returning <= params.delta_max
    assert returning < active


def _decayed_mu(mu: float, gap_ms: int, mean: float, params: Params) -> float:
    # §5 written out independently of the engine: μ̄ + (μ − μ̄)·exp(−d/τ)
    import math

    return mean + (mu - mean) * math.exp(-(gap_ms / DAY) / params.tau)


def test_the_cap_holds_for_a_returning_player_with_a_full_pool() -> None:
    # §8.4: even with a full pool (ν = 60) and a huge learning rate the visible step is ≤ Δ_max
    params = Params.from_overrides({"eta_max": "2000"})
    last = T0 - 90 * DAY
    returning = new_player(params).__replace__(mu=1000.0, sigma=30.0, pool=60.0, n=40, last_ts=last)
    victim = new_player(params).__replace__(mu=3000.0, sigma=30.0, n=40, last_ts=T0 - 1000)
    units = sigma_units(30.0, params) * 2
    out = rate_kill(returning, victim, T0, units, 2, initial_snapshot(params), params)
    decayed = _decayed_mu(1000.0, 90 * DAY, params.mu0, params)
    assert abs(out.attacker.mu - decayed) <= params.delta_max
    assert out.attacker.pool <= params.nu_max


def test_late_events_are_rejected_and_counted() -> None:
    book = RatingBook(P, lateness_ms=3_600_000)
    assert book.apply("1", "a", "b", T0 + 10 * 3_600_000) is COUNTED
    verdict = book.apply("2", "c", "d", T0 + 9 * 3_600_000 - 1)  # 1 h + 1 ms behind the max
    assert (verdict.kind, verdict.reason) == ("rejected", "late")
    assert book.apply("3", "c", "d", T0 + 9 * 3_600_000) is COUNTED  # exactly 1 h behind: fine
    assert book.rejected_by_reason == {"late": 1}
    assert book.player("c") is not None and book.rejected == 1


def test_bad_events_are_rejected_with_a_reason() -> None:
    book = RatingBook(P)
    assert book.apply("1", "a", "a", T0).reason == "self_kill"
    assert book.apply("2", "a", "b", -1).reason == "bad_ts"
    assert book.apply("2", "a", "b", 2**53).reason == "bad_ts"
    assert book.apply("3", "", "b", T0).reason == "bad_player"
    assert len(book) == 0 and book.counted == 0 and book.rejected == 4


def test_snapshots_are_due_by_event_time() -> None:
    # docs/algorithm.md#snapshot: due before a counted event when none exists or t − last ≥ interval
    book = RatingBook(P, calibrate_every_ms=300_000)
    book.apply("1", "a", "b", T0)
    assert book.snapshot.taken_at == T0
    book.apply("2", "b", "a", T0 + 299_999)
    assert book.snapshot.taken_at == T0
    book.apply("3", "a", "c", T0 + 300_000)
    assert book.snapshot.taken_at == T0 + 300_000
    # a duplicate does not take one, even when a snapshot is due (every 20 s here)
    fast = RatingBook(P, calibrate_every_ms=20_000)
    fast.apply("1", "a", "b", T0)
    assert fast.apply("2", "a", "b", T0 + 30_000) is DUPLICATE
    assert fast.snapshot.taken_at == T0


def test_fixed_snapshot_is_never_recalibrated() -> None:
    fixed = Snapshot(taken_at=None, mean_mu_active=1234.5, boundaries=None, active_count=0)
    book = RatingBook(P, fixed_snapshot=fixed)
    for i in range(50):
        book.apply(str(i), f"p{i % 5}", f"p{(i + 1) % 5}", T0 + i * DAY)
    assert book.snapshot is fixed


def test_predict_is_the_probability_the_next_event_uses() -> None:
    book = RatingBook(P, calibrate_every_ms=300_000)
    for i in range(40):
        book.apply(str(i), f"p{i % 6}", f"p{(i * 5 + 1) % 6}", T0 + i * 70_000)
    ts = T0 + 100 * DAY
    a, b = book.player("p1"), book.player("p2")
    assert a is not None and b is not None
    predicted = book.predict("p1", "p2", ts)
    snapshot = book._snapshot_at(ts)  # the snapshot that the next event at ts takes
    out = rate_kill(a, b, ts, book.total_sigma_units, len(book), snapshot, P)
    assert predicted == out.p_ab
    before = msgspec.msgpack.encode(book.players())
    book.predict("p1", "new", ts)  # unknown players are predicted as new, nothing is stored
    assert msgspec.msgpack.encode(book.players()) == before
    assert book.apply("x", "p1", "p2", ts) is COUNTED
    assert book.snapshot.taken_at == ts
    with pytest.raises(EngineError):
        book.predict("p1", "p1", ts)


def test_the_active_set_follows_activity_expiry() -> None:
    # §2.3 with n_active = 5, t_active = 7 days: a and b trade 6 kills, then only c and d play.
    book = RatingBook(P, calibrate_every_ms=DAY)
    for i in range(6):
        book.apply(str(i), "a", "b", T0 + i * 120_000)
    book.apply("c", "c", "d", T0 + DAY)
    assert book.snapshot.active_count == 2  # a, b active
    book.apply("d", "c", "d", T0 + 8 * DAY)  # a's 5th latest kill is > 7 days ago: nobody active
    assert book.snapshot.active_count == 4  # fallback A = P
