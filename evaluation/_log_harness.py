"""Run rating systems over a studio's event log: the consumer's counting rules, then, for every
counted kill in order, each system predicts it and then learns from it (§10.4's protocol on real
events).

What is kept for the held-out part (events at or after the split time) is what the metrics and
the day bootstrap need, per system: each kill's prediction, the common tier rule's changes, and
the gains of repeated kills between one pair of accounts.

Orientation: a kill log has only "a killed b", so every outcome would be 1. Each counted kill is
put as "first vs second" by one bit of BLAKE2b of its event id: P(first kills second) is
predicted and the outcome is whether first was the attacker. The bit does not depend on the
players or on any rating, and log loss of a system that predicts P(b kills a) = 1 − P(a kills b)
does not depend on it at all.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from engine import Params, RatingBook, initial_snapshot
from evaluation._common_tiers import CommonTiers
from evaluation._event_log import LogEvent
from evaluation._systems import RatingSystem
from redis_layout.event_ids import COOLDOWN_DUPLICATE, COUNTED_EVENT, CountingRules

DAY_MS: Final = 86_400_000
HOUR_MS: Final = 3_600_000


@dataclass(frozen=True)
class HarnessOptions:
    """The harness's settings, recorded in the report."""

    holdout: float = 0.2  # the last share of the log's time span is held out
    order: str = "time"  # "time": sorted by ts (stable); "file": as written (lateness applies)
    lateness_ms: int = 3_600_000  # the consumer's and adr replay's default
    tier_calibrate_every_ms: int = HOUR_MS  # the common tier rule's recalibration (event time)
    hysteresis_sd: float = 2.0  # the common rule's threshold, in the system's population SDs
    repeat_gap_ms: int = 600_000  # an a→b kill within this of the pair's last continues a run
    repeat_min_kills: int = 5  # a run of at least this many kills is a repeat-pair run

    def validate(self) -> None:
        if not 0.0 < self.holdout < 1.0:
            raise ValueError("--holdout must be in (0, 1)")
        if self.order not in ("time", "file"):
            raise ValueError("--order must be time or file")
        if self.repeat_min_kills < 2 or self.repeat_gap_ms <= 0:
            raise ValueError("a repeat run needs at least 2 kills and a positive gap")


@dataclass
class SystemTrace:
    """The held-out observations of one system."""

    name: str
    p: list[float] = field(default_factory=list)  # P(first kills second), per held-out kill
    tier_changes: list[int] = field(default_factory=list)  # per held-out kill: 0, 1 or 2
    run_gain_sd: list[float] = field(default_factory=list)  # per repeat run: attacker's gain
    run_loss_sd: list[float] = field(default_factory=list)  # per repeat run: victim's loss
    placed_share: float = 0.0  # share of active players placed by the common rule at the end
    final_sd: float = 0.0


@dataclass
class HarnessResult:
    """Everything the report needs from one pass over the log."""

    verdicts: dict[str, int]
    split_ts: int
    first_ts: int
    last_ts: int
    players: int
    counted: int
    y: list[float]  # held-out outcome: first was the attacker
    day: list[int]  # held-out kill's UTC day (days since the epoch)
    run_day: list[int]  # repeat run's start day
    run_kills: list[int]
    run_counted: list[int]
    traces: list[SystemTrace]


def first_is_attacker(event_id: str) -> bool:
    """The orientation bit of one event (see the module docstring)."""
    return hashlib.blake2b(event_id.encode(), digest_size=1).digest()[0] & 1 == 0


class _Spread:
    """A system's ratings by player number with their population SD, kept incrementally."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.s1 = 0.0
        self.s2 = 0.0

    def add(self, value: float) -> None:
        self.values.append(value)
        self.s1 += value
        self.s2 += value * value

    def set(self, i: int, value: float) -> float:
        old = self.values[i]
        self.values[i] = value
        self.s1 += value - old
        self.s2 += value * value - old * old
        return value - old

    def resum(self) -> None:
        """Exact sums again (called at each recalibration, so rounding cannot drift)."""
        self.s1 = math.fsum(self.values)
        self.s2 = math.fsum(v * v for v in self.values)

    def sd(self) -> float:
        n = len(self.values)
        if n < 2:
            return 1.0
        var = max(0.0, self.s2 / n - (self.s1 / n) ** 2)
        return math.sqrt(var) if var > 0 else 1.0


@dataclass
class _Run:
    start_ts: int
    last_ts: int
    kills: int = 0
    counted: int = 0
    gain: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    sd: list[float] = field(default_factory=list)


def order_events(events: list[LogEvent], order: str) -> list[LogEvent]:
    return sorted(events, key=lambda e: e.ts) if order == "time" else list(events)


def split_time(events: Iterable[LogEvent], holdout: float) -> tuple[int, int, int]:
    """(first ts, last ts, split ts): events at or after the split are held out."""
    times = [e.ts for e in events]
    first, last = min(times), max(times)
    return first, last, first + math.ceil((1.0 - holdout) * (last - first))


def run_log(
    events: list[LogEvent],
    systems: list[RatingSystem],
    params: Params,
    opts: HarnessOptions,
    progress: Callable[[int, int], None] | None = None,
) -> HarnessResult:
    """One pass: counting rules, then predict-then-update for every system, in order."""
    ordered = order_events(events, opts.order)
    first_ts, last_ts, split = split_time(ordered, opts.holdout)
    # The book decides what counts; its own snapshot never does, so it keeps the initial one
    # instead of recalibrating (the models keep their own).
    gate = RatingBook(params, lateness_ms=opts.lateness_ms, fixed_snapshot=initial_snapshot(params))
    rules = CountingRules(gate)
    verdicts: dict[str, int] = {}
    number: dict[str, int] = {}
    spreads = [_Spread() for _ in systems]
    tiers = [CommonTiers(params, opts.tier_calibrate_every_ms, opts.hysteresis_sd) for _ in systems]
    traces = [SystemTrace(s.name) for s in systems]
    y: list[float] = []
    days: list[int] = []
    runs: dict[tuple[str, str], _Run] = {}
    run_day: list[int] = []
    run_kills: list[int] = []
    run_counted: list[int] = []
    next_sweep = first_ts + HOUR_MS
    counted = 0

    def close(run: _Run) -> None:
        if run.kills >= opts.repeat_min_kills and run.start_ts >= split:
            run_day.append(run.start_ts // DAY_MS)
            run_kills.append(run.kills)
            run_counted.append(run.counted)
            for k, trace in enumerate(traces):
                trace.run_gain_sd.append(run.gain[k] / run.sd[k])
                trace.run_loss_sd.append(run.loss[k] / run.sd[k])

    for done, ev in enumerate(ordered):
        if progress is not None and done % 50_000 == 0:
            progress(done, len(ordered))
        a, b, ts = ev.attacker, ev.victim, ev.ts
        verdict = rules.apply(ev.id, ev.arena, a, b, ts)
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        if verdict not in (COUNTED_EVENT, COOLDOWN_DUPLICATE):
            continue  # a resend, a reused id or a rejection: not a kill that happened
        if ts >= next_sweep:  # close the runs no later kill can continue
            for pair in [p for p, r in runs.items() if r.last_ts < ts - opts.repeat_gap_ms]:
                close(runs.pop(pair))
            next_sweep = ts + HOUR_MS
        run = runs.get((a, b))
        if run is not None and ts - run.last_ts > opts.repeat_gap_ms:
            close(runs.pop((a, b)))
            run = None
        if run is None:
            sds = [sp.sd() for sp in spreads]
            run = runs[(a, b)] = _Run(
                ts, ts, gain=[0.0] * len(systems), loss=[0.0] * len(systems), sd=sds
            )
        run.kills += 1
        run.last_ts = max(run.last_ts, ts)
        if verdict != COUNTED_EVENT:
            continue
        counted += 1
        run.counted += 1
        for name in (a, b):
            if name not in number:
                number[name] = len(number)
                for k, s in enumerate(systems):
                    spreads[k].add(s.rating(name))
                    tiers[k].add_player()
        ia, ib = number[a], number[b]
        held = ts >= split
        attacker_first = first_is_attacker(ev.id)
        first, second = (a, b) if attacker_first else (b, a)
        if held:
            y.append(1.0 if attacker_first else 0.0)
            days.append(ts // DAY_MS)
        for k, system in enumerate(systems):
            spread, rule, trace = spreads[k], tiers[k], traces[k]
            if held:
                trace.p.append(system.predict(first, second, ts))
            before = rule.snapshot
            rule.calibrate(ts, spread.values)
            if rule.snapshot is not before:
                spread.resum()
            system.update(a, b, ts)
            run.gain[k] += spread.set(ia, system.rating(a))
            run.loss[k] -= spread.set(ib, system.rating(b))
            changes = int(rule.observe(ia, spread.values[ia], ts, spread.sd))
            changes += int(rule.observe(ib, spread.values[ib], ts, spread.sd))
            if held:
                trace.tier_changes.append(changes)
    for run in runs.values():
        close(run)
    for k, trace in enumerate(traces):
        active = tiers[k].active(last_ts)
        placed = sum(1 for i in active if tiers[k].tiers[i])
        trace.placed_share = placed / len(active) if active else 0.0
        trace.final_sd = float(np.std(spreads[k].values)) if spreads[k].values else 0.0
    return HarnessResult(
        verdicts=dict(sorted(verdicts.items())),
        split_ts=split,
        first_ts=first_ts,
        last_ts=last_ts,
        players=len(number),
        counted=counted,
        y=y,
        day=days,
        run_day=run_day,
        run_kills=run_kills,
        run_counted=run_counted,
        traces=traces,
    )
