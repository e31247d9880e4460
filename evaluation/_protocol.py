"""The §10.4/§10.5 protocol: feed one stream to one system, predict-then-update, and measure.

One pass per system over the same events. Everything a §10.3 metric needs is collected on the
way; `summarize` turns it into plain numbers. Ratings are compared across systems only through
scale-free quantities (ranks, percentiles, population standard deviations).
"""

from __future__ import annotations

import functools
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from engine import Params, Snapshot, tier_of
from evaluation._common_tiers import CommonTiers
from evaluation._stream import DAY_MS, Stream
from evaluation._systems import RatingSystem

HOUR_MS = 3_600_000


@dataclass(frozen=True)
class ProtocolOptions:
    """Measurement settings, recorded in the report."""

    calibrate_every_ms: int = HOUR_MS  # quantile tiers: recalibration interval (event time)
    checkpoints: int = 400  # rank-correlation samples over the stream
    convergence_rho: float = 0.9
    follow_events: int = 400  # own events a jumper/returner is followed for
    return_window: int = 30  # own events after the return scanned for the largest change
    gap_closed: float = 0.5  # response delay: own events until this share of the gap is closed
    # The common hysteresis rule: §6.4's accumulators on every system's rating, promoting or
    # demoting once h↑ or h↓ reaches this many population SDs of the system's own ratings (ADR's
    # h_req = 400 over its population SD of about 200 at the end of the default stream).
    hysteresis_sd: float = 2.0
    series_every_days: int = 30  # long-horizon time series: one sample per this many days
    floor_band: float = 0.01  # "near the floor": within this share of (μ_max − μ_min) above μ_min


@dataclass
class Followed:
    """A jumper or returner followed after its change: own events until the gap closes."""

    player: str
    start_pct: float = math.nan
    target_pct: float = math.nan
    events: int = 0
    delay: int | None = None
    deltas_sd: list[float] = field(default_factory=list)  # |Δ rating| / population SD per event


@dataclass
class SystemResult:
    """Raw observations of one system on one stream."""

    name: str
    predictions: np.ndarray
    labels: np.ndarray
    scored_index: np.ndarray  # stream index of each prediction
    rho_curve: list[tuple[int, float]]
    quantile_changes_test: int
    own_tier_changes_test: int | None
    player_events_test: int
    quantile_shares: list[float]
    own_shares: list[float] | None
    own_unplaced_active: float | None
    jumpers: list[Followed]
    returners: list[Followed]
    farm: list[dict[str, float | str]]
    median_abs_change_sd: float
    final_sd: float
    final_mean: float
    hyst_changes_test: int = 0
    hyst_shares: list[float] = field(default_factory=list)
    series: list[dict[str, object]] = field(default_factory=list)


def _percentile(values: np.ndarray, i: int) -> float:
    """Share of the other players rated below player i (ties count half)."""
    v = values[i]
    below = float(np.count_nonzero(values < v))
    ties = float(np.count_nonzero(values == v)) - 1.0
    return (below + 0.5 * ties) / (values.size - 1)


def run_protocol(
    system: RatingSystem, stream: Stream, opts: ProtocolOptions, params: Params | None = None
) -> SystemResult:
    """Predict-then-update over every event, in time order, observing as it goes."""
    params = params or Params()
    players = stream.players
    index = {p: i for i, p in enumerate(players)}
    cur = np.array([system.rating(p) for p in players], dtype=float)
    events = stream.events
    n_events = len(events)
    test_start = stream.test_start
    every = max(1, n_events // opts.checkpoints)
    hidden_order: list[float] = []

    preds: list[float] = []
    labels: list[int] = []
    scored: list[int] = []
    rho_curve: list[tuple[int, float]] = []

    # quantile tiers, the same procedure for every system (§6.3 quantiles on the system's ratings)
    # and the common hysteresis rule (evaluation/_common_tiers.py), on the same snapshots
    tiers = CommonTiers(params, opts.calibrate_every_ms, opts.hysteresis_sd)
    for _ in players:
        tiers.add_player()
    recent = tiers.recent
    q_tier = np.zeros(len(players), dtype=int)
    q_changes = 0
    own_tier = np.zeros(len(players), dtype=int)
    own_changes = 0
    has_own = system.tier(players[0]) is not None
    player_events_test = 0
    abs_changes_test: list[float] = []
    h_changes = 0
    adr_params = getattr(system, "params", None)
    floor = (adr_params.mu_min, adr_params.mu_max) if isinstance(adr_params, Params) else None
    series: list[dict[str, object]] = []
    series_every = opts.series_every_days * DAY_MS
    next_sample = events[0].ts + series_every if events else 0

    jumpers = {p: Followed(p) for p in stream.jumpers}
    returners = {p: Followed(p) for p in stream.returners}
    absence_end = stream.absence[1]
    sessions = {s.index: s for s in stream.farm_sessions}
    farm_before: dict[int, tuple[float, float, float, float]] = {}
    farm_rows: list[dict[str, float | str]] = []
    sd_cache = (-1, 1.0)

    def population_sd(at: int) -> float:
        nonlocal sd_cache
        if sd_cache[0] != at:
            sd = float(np.std(cur))
            sd_cache = (at, sd if sd > 0 else 1.0)
        return sd_cache[1]

    from evaluation._stream import Event  # local: keeps the hot loop's globals short

    ev: Event
    for k, ev in enumerate(events):
        ts = ev.ts
        while ts >= next_sample and tiers.snapshot is not None:
            series.append(
                _sample(
                    next_sample,
                    events[0].ts,
                    cur,
                    np.asarray(tiers.counts),
                    recent,
                    tiers.tiers,
                    tiers.snapshot,
                    floor,
                    params,
                    opts,
                )
            )
            next_sample += series_every
        tiers.calibrate(ts, cur)
        snap = tiers.snapshot
        assert snap is not None
        a, b = ev.attacker, ev.victim
        ia, ib = index[a], index[b]
        if ev.kind == "organic":
            preds.append(system.predict(ev.first, ev.second, ts))
            labels.append(1 if ev.first_won else 0)
            scored.append(k)
        # followed players: fix the starting percentile at their first event after the change
        for fol, since in ((jumpers.get(a), stream.jump_ts), (returners.get(a), absence_end)):
            _start_follow(fol, since, ts, cur, index, stream)
        for fol, since in ((jumpers.get(b), stream.jump_ts), (returners.get(b), absence_end)):
            _start_follow(fol, since, ts, cur, index, stream)
        if ev.session >= 0 and ev.session not in farm_before:
            farm_before[ev.session] = (cur[ia], cur[ib], _percentile(cur, ia), population_sd(k))

        before_a, before_b = cur[ia], cur[ib]
        system.update(a, b, ts)
        cur[ia] = system.rating(a)
        cur[ib] = system.rating(b)

        for i, p, before in ((ia, a, before_a), (ib, b, before_b)):
            changed = tiers.observe(i, float(cur[i]), ts, functools.partial(population_sd, k))
            if changed and k >= test_start:
                h_changes += 1
            boundaries = snap.boundaries
            if tiers.counts[i] >= params.n_min and boundaries is not None:
                new_tier = tier_of(float(cur[i]), boundaries)
                if k >= test_start and q_tier[i] and new_tier != q_tier[i]:
                    q_changes += 1
                q_tier[i] = new_tier
            if has_own:
                t = system.tier(p) or 0
                if k >= test_start and own_tier[i] and t and t != own_tier[i]:
                    own_changes += 1
                own_tier[i] = t
            if k >= test_start:
                player_events_test += 1
                abs_changes_test.append(abs(cur[i] - before) / population_sd(k))
            for fol in (jumpers.get(p), returners.get(p)):
                if fol is not None and not math.isnan(fol.start_pct):
                    _advance_follow(fol, i, cur, before, population_sd(k), opts)

        if ev.session >= 0 and ts == sessions[ev.session].end_ts:
            fa, fb, fpct, sd = farm_before[ev.session]
            s = sessions[ev.session]
            farm_rows.append(
                {
                    "session": float(s.index),
                    "pattern": s.pattern,
                    "farmer_gain_sd": (cur[ia] - fa) / sd,
                    "victim_loss_sd": (fb - cur[ib]) / sd,
                    "farmer_pct_gain": _percentile(cur, ia) - fpct,
                }
            )

        if k % every == 0 or k == n_events - 1:
            hidden_order = stream.skills_at(ts)
            rho_curve.append((k + 1, _spearman(cur, hidden_order)))

    end = events[-1].ts
    active_idx = [
        i
        for i, dq in enumerate(recent)
        if len(dq) == params.n_active and dq[0] > end - params.active_ms
    ]
    q_shares = _shares([int(q_tier[i]) for i in active_idx])
    h_shares = _shares([int(tiers.tiers[i]) for i in active_idx])
    snap = tiers.snapshot
    if snap is not None:
        series.append(
            _sample(
                end,
                events[0].ts,
                cur,
                np.asarray(tiers.counts),
                recent,
                tiers.tiers,
                snap,
                floor,
                params,
                opts,
            )
        )
    own_shares = own_unplaced = None
    if has_own:
        own = [int(own_tier[i]) for i in active_idx]
        own_shares = _shares(own)
        own_unplaced = sum(1 for t in own if t == 0) / max(1, len(own))
    return SystemResult(
        name=system.name,
        predictions=np.asarray(preds),
        labels=np.asarray(labels),
        scored_index=np.asarray(scored),
        rho_curve=rho_curve,
        quantile_changes_test=q_changes,
        own_tier_changes_test=own_changes if has_own else None,
        player_events_test=player_events_test,
        quantile_shares=q_shares,
        own_shares=own_shares,
        own_unplaced_active=own_unplaced,
        jumpers=list(jumpers.values()),
        returners=list(returners.values()),
        farm=farm_rows,
        median_abs_change_sd=float(np.median(abs_changes_test)) if abs_changes_test else 0.0,
        final_sd=float(np.std(cur)),
        final_mean=float(np.mean(cur)),
        hyst_changes_test=h_changes,
        hyst_shares=h_shares,
        series=series,
    )


def _sample(
    at: int,
    start: int,
    cur: np.ndarray,
    counts: np.ndarray,
    recent: list[deque[int]],
    h_tier: list[int],
    snap: Snapshot,
    floor: tuple[float, float] | None,
    params: Params,
    opts: ProtocolOptions,
) -> dict[str, object]:
    """One point of the long-horizon series: mean rating, players at and near the floor (systems
    with one), the 14 boundaries in force, and the common-rule tier shares of the active players."""
    seen = cur[counts > 0]
    active = [
        i
        for i, dq in enumerate(recent)
        if len(dq) == params.n_active and dq[0] > at - params.active_ms
    ]
    shares = _shares([int(h_tier[i]) for i in active])
    at_floor = near_floor = None
    if floor is not None and seen.size:
        lo, hi = floor
        at_floor = float(np.count_nonzero(seen == lo)) / seen.size
        near_floor = float(np.count_nonzero(seen <= lo + opts.floor_band * (hi - lo))) / seen.size
    return {
        "day": (at - start) / DAY_MS,
        "mean": float(np.mean(seen)) if seen.size else math.nan,
        "sd": float(np.std(seen)) if seen.size else math.nan,
        "at_floor": at_floor,
        "near_floor": near_floor,
        "boundaries": None if snap.boundaries is None else [float(b) for b in snap.boundaries],
        "shares": shares,
        "shares_tv": 0.5 * sum(abs(x - 1.0 / 15.0) for x in shares) if any(shares) else None,
        "active": len(active),
    }


def _spearman(ratings: np.ndarray, hidden: list[float]) -> float:
    from evaluation._metrics import spearman

    return spearman(ratings.tolist(), hidden)


def _shares(tiers: list[int]) -> list[float]:
    """Share of placed players in each tier 1..15."""
    placed = [t for t in tiers if t > 0]
    if not placed:
        return [0.0] * 15
    return [sum(1 for t in placed if t == k) / len(placed) for k in range(1, 16)]


def _start_follow(
    fol: Followed | None,
    since: int,
    ts: int,
    cur: np.ndarray,
    index: dict[str, int],
    stream: Stream,
) -> None:
    """At the first own event at or after `since`: the percentile now and the one to reach."""
    if fol is None or ts < since or not math.isnan(fol.start_pct):
        return
    i = index[fol.player]
    fol.start_pct = _percentile(cur, i)
    hidden = np.array(stream.skills_at(since))
    fol.target_pct = _percentile(hidden, i)


def _advance_follow(
    fol: Followed, i: int, cur: np.ndarray, before: float, sd: float, opts: ProtocolOptions
) -> None:
    """Count one own event of a followed player; note when the percentile gap is half closed."""
    if fol.events >= opts.follow_events:
        return
    fol.events += 1
    if fol.events <= opts.return_window:
        fol.deltas_sd.append(abs(cur[i] - before) / sd)
    if fol.delay is None:
        goal = fol.start_pct + opts.gap_closed * (fol.target_pct - fol.start_pct)
        if _percentile(cur, i) >= goal:
            fol.delay = fol.events


DAYS = DAY_MS  # re-exported for the report's captions
