"""Synthetic FFA kill streams from hidden skills (§10.4), with injected skill jumps, long absences
followed by strong play, and repeat-kill farming. Pure and seeded: the same config gives the same
events, bit for bit.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluation._errors import EvaluationError

DAY_MS = 86_400_000
OUTCOME_MODELS = ("logistic", "arctan", "probit")
SECOND_MS = 1_000
# 2026-01-01T00:00:00Z: streams start on a fixed epoch so event times are reproducible.
EPOCH_MS = 1_767_225_600_000


@dataclass(frozen=True)
class MixtureComponent:
    """One Gaussian of the hidden-skill mixture (Elo-like points)."""

    weight: float
    mean: float
    sd: float


@dataclass(frozen=True)
class FarmPattern:
    """A farming session: one attacker kills the same victim `kills` times, `interval_s` apart."""

    name: str
    interval_s: int
    kills: int


@dataclass(frozen=True)
class StreamConfig:
    """Everything that shapes a synthetic stream; recorded verbatim in the report."""

    seed: int = 1
    players: int = 300
    events: int = 60_000
    days: int = 240
    mixture: tuple[MixtureComponent, ...] = (
        MixtureComponent(0.25, 1200.0, 150.0),
        MixtureComponent(0.55, 1500.0, 200.0),
        MixtureComponent(0.20, 1900.0, 180.0),
    )
    # Outcome model: P(i kills j) = 1 / (1 + 10^(−(θi − θj)/outcome_scale)) (logistic, like Elo),
    # "arctan": 1/2 + atan((θi − θj)/outcome_scale)/π (ADR's own model shape), or "probit": each
    # player performs θ + N(0, s_i²) with its own noise s_i, so P = Φ((θi − θj)/√(s_i² + s_j²))
    # (the shape of neither family: no system models per-player noise).
    outcome_model: str = "logistic"
    outcome_scale: float = 400.0
    # probit only: s_i drawn uniformly from [low, high]; the mean matches the logistic curve's
    # slope at 0 (√(2·s²) = 4·400/(ln 10·√(2π)) ≈ 277, s ≈ 196).
    performance_sd_low: float = 100.0
    performance_sd_high: float = 290.0
    online_low: float = 0.3  # each player is online on a day with a probability drawn uniformly
    online_high: float = 0.9  # from [online_low, online_high]
    jump_fraction: float = 0.05
    jump_size: float = 400.0
    jump_day: int = 100
    return_fraction: float = 0.04
    absence_start_day: int = 30
    absence_days: int = 90  # > t_return = 60: ADR's returning-player safeguard is in play
    return_boost: float = 300.0  # "strong play" after the absence: hidden skill up by this much
    farm_day: int = 150
    farm_patterns: tuple[FarmPattern, ...] = (
        FarmPattern("burst-10s", 10, 30),
        FarmPattern("paced-65s", 65, 30),
    )
    farmers_per_pattern: int = 3
    test_fraction: float = 0.3

    def validate(self) -> None:
        """Reject configs the generator cannot honour."""
        special = (
            round(self.players * self.jump_fraction)
            + round(self.players * self.return_fraction)
            + 2 * self.farmers_per_pattern * len(self.farm_patterns)
        )
        if self.players < 4 or self.players < special + 4:
            raise EvaluationError(f"{self.players} players are too few for the injected cohorts")
        if self.events < 100 or self.days < 1:
            raise EvaluationError("a stream needs at least 100 events over at least one day")
        if self.outcome_model not in OUTCOME_MODELS:
            raise EvaluationError(f"unknown outcome model {self.outcome_model!r}")
        if not 0.0 < self.performance_sd_low <= self.performance_sd_high:
            raise EvaluationError("performance noise needs 0 < low <= high")
        if not 0.0 < self.test_fraction < 1.0:
            raise EvaluationError("test_fraction must lie in (0, 1)")
        sessions = self.farmers_per_pattern * len(self.farm_patterns)
        last_day = max(
            self.jump_day if self.jump_fraction else 0,
            self.absence_start_day + self.absence_days if self.return_fraction else 0,
            self.farm_day + sessions - 1 if sessions else 0,
        )
        if last_day >= self.days:
            raise EvaluationError(f"the injections need more than {self.days} days ({last_day})")
        if abs(sum(c.weight for c in self.mixture) - 1.0) > 1e-9:
            raise EvaluationError("mixture weights must sum to 1")


_ORGANIC_ONLY: dict[str, Any] = {
    "jump_fraction": 0.0,
    "return_fraction": 0.0,
    "farm_patterns": (),
    "farmers_per_pattern": 0,
}


def organic_stream(seed: int, players: int, events: int, days: int) -> StreamConfig:
    """A stream of organic kills only: no skill jumps, absences or farming sessions."""
    sized = StreamConfig(seed=seed, players=players, events=events, days=days)
    return dataclasses.replace(sized, **_ORGANIC_ONLY)


@dataclass(frozen=True)
class Event:
    """One kill. `first`/`second` is the pair in the order it was drawn, `first_won` the outcome:
    systems are scored on P(first kills second), so both labels occur. Farming kills are
    scripted, not drawn from the skills, and are never scored."""

    ts: int
    attacker: str
    victim: str
    first_won: bool
    kind: str  # "organic" | "farm"
    session: int = -1  # farm session index, -1 for organic events

    @property
    def first(self) -> str:
        return self.attacker if self.first_won else self.victim

    @property
    def second(self) -> str:
        return self.victim if self.first_won else self.attacker


@dataclass(frozen=True)
class FarmSession:
    """An injected farming session."""

    index: int
    pattern: str
    farmer: str
    victim: str
    start_ts: int
    end_ts: int


@dataclass
class Stream:
    """A generated stream plus the ground truth the metrics need."""

    config: StreamConfig
    players: list[str]
    base_skill: dict[str, float]
    # player -> (ts from which the change holds, added skill); applied in order
    skill_changes: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    jumpers: list[str] = field(default_factory=list)
    jump_ts: int = 0
    returners: list[str] = field(default_factory=list)
    absence: tuple[int, int] = (0, 0)  # [start, end) in ms
    farm_sessions: list[FarmSession] = field(default_factory=list)
    test_start: int = 0  # index of the first held-out event
    performance_sd: dict[str, float] = field(default_factory=dict)  # s_i of the probit model

    def skill(self, player: str, ts: int) -> float:
        """The hidden skill of a player at time ts."""
        value = self.base_skill[player]
        for since, delta in self.skill_changes.get(player, ()):
            if ts >= since:
                value += delta
        return value

    def skills_at(self, ts: int) -> list[float]:
        """Hidden skills of all players (in `players` order) at ts."""
        return [self.skill(p, ts) for p in self.players]


def outcome_probability(diff: float, model: str, scale: float, noise: float = 0.0) -> float:
    """P(i kills j) for a hidden-skill difference θi − θj; `noise` = √(s_i² + s_j²) (probit)."""
    if model == "arctan":
        return 0.5 + math.atan(diff / scale) / math.pi
    if model == "probit":
        return 0.5 * (1.0 + math.erf(diff / (noise * math.sqrt(2.0))))
    return 1.0 / (1.0 + math.pow(10.0, -diff / scale))


def _draw_skills(cfg: StreamConfig, rng: np.random.Generator) -> np.ndarray:
    weights = np.array([c.weight for c in cfg.mixture])
    which = rng.choice(len(cfg.mixture), size=cfg.players, p=weights)
    means = np.array([c.mean for c in cfg.mixture])[which]
    sds = np.array([c.sd for c in cfg.mixture])[which]
    return np.asarray(rng.normal(means, sds))


def generate(cfg: StreamConfig) -> Stream:
    """Generate the stream: organic kills day by day among online players, then the injections."""
    cfg.validate()
    rng = np.random.default_rng(cfg.seed)
    width = len(str(cfg.players - 1))
    players = [f"p{i:0{width}d}" for i in range(cfg.players)]
    skills = _draw_skills(cfg, rng)
    stream = Stream(cfg, players, {p: float(s) for p, s in zip(players, skills, strict=True)})
    online_prob = rng.uniform(cfg.online_low, cfg.online_high, size=cfg.players)
    # Own generator for the noise, so the logistic and arctan streams stay bit-identical.
    noise_rng = np.random.default_rng([cfg.seed, 0x9E3779B9])
    perf_var = noise_rng.uniform(cfg.performance_sd_low, cfg.performance_sd_high, cfg.players) ** 2
    stream.performance_sd = {p: math.sqrt(v) for p, v in zip(players, perf_var, strict=True)}

    # Cohorts: farm victims are the weakest players, farmers sit near the median, the rest of the
    # injected players are drawn at random from the remainder.
    order = list(np.argsort(skills))
    n_farm = cfg.farmers_per_pattern * len(cfg.farm_patterns)
    victims_idx = order[:n_farm]
    mid = len(order) // 2
    farmers_idx = order[mid - n_farm // 2 : mid - n_farm // 2 + n_farm]
    rest = [i for i in range(cfg.players) if i not in set(victims_idx) | set(farmers_idx)]
    rest_arr = np.array(rest)
    rng.shuffle(rest_arr)
    n_jump = round(cfg.players * cfg.jump_fraction)
    n_return = round(cfg.players * cfg.return_fraction)
    jump_idx = [int(i) for i in rest_arr[:n_jump]]
    return_idx = [int(i) for i in rest_arr[n_jump : n_jump + n_return]]

    start = EPOCH_MS
    stream.jump_ts = start + cfg.jump_day * DAY_MS
    stream.jumpers = [players[i] for i in jump_idx]
    for p in stream.jumpers:
        stream.skill_changes.setdefault(p, []).append((stream.jump_ts, cfg.jump_size))
    absent_from = start + cfg.absence_start_day * DAY_MS
    absent_to = absent_from + cfg.absence_days * DAY_MS
    stream.absence = (absent_from, absent_to)
    stream.returners = [players[i] for i in return_idx]
    for p in stream.returners:
        stream.skill_changes.setdefault(p, []).append((absent_to, cfg.return_boost))
    returning = np.zeros(cfg.players, dtype=bool)
    returning[return_idx] = True

    per_day = rng.multinomial(cfg.events, np.full(cfg.days, 1.0 / cfg.days))
    organic: list[Event] = []
    for day in range(cfg.days):
        day_start = start + day * DAY_MS
        online = rng.random(cfg.players) < online_prob
        if absent_from <= day_start < absent_to:
            online &= ~returning
        elif day_start == absent_to:
            online |= returning  # the returners come back on the first day after the absence
        ids = np.flatnonzero(online)
        count = int(per_day[day])
        if ids.size < 2 or count == 0:
            continue
        times = np.sort(rng.integers(day_start, day_start + DAY_MS, size=count))
        firsts = rng.integers(0, ids.size, size=count)
        seconds = rng.integers(0, ids.size - 1, size=count)
        seconds = np.where(seconds >= firsts, seconds + 1, seconds)  # distinct from the first
        draws = rng.random(count)
        for ts, fi, si, u in zip(times, firsts, seconds, draws, strict=True):
            first, second = players[int(ids[fi])], players[int(ids[si])]
            t = int(ts)
            i1, i2 = int(ids[fi]), int(ids[si])
            prob = outcome_probability(
                stream.skill(first, t) - stream.skill(second, t),
                cfg.outcome_model,
                cfg.outcome_scale,
                math.sqrt(perf_var[i1] + perf_var[i2]),
            )
            won = bool(u < prob)
            attacker, victim = (first, second) if won else (second, first)
            organic.append(Event(t, attacker, victim, won, "organic"))

    farm: list[Event] = []
    session = 0
    for pattern_no, pattern in enumerate(cfg.farm_patterns):
        for k in range(cfg.farmers_per_pattern):
            slot = pattern_no * cfg.farmers_per_pattern + k
            farmer, victim = players[farmers_idx[slot]], players[victims_idx[slot]]
            day_start = start + (cfg.farm_day + slot) * DAY_MS
            begin = int(rng.integers(day_start, day_start + DAY_MS // 2))
            times_f = [begin + j * pattern.interval_s * SECOND_MS for j in range(pattern.kills)]
            stream.farm_sessions.append(
                FarmSession(session, pattern.name, farmer, victim, times_f[0], times_f[-1])
            )
            farm.extend(Event(t, farmer, victim, True, "farm", session) for t in times_f)
            session += 1

    # Stable merge by time; an organic event and a farm kill in the same ms keep organic first.
    stream.events = sorted(organic + farm, key=lambda e: (e.ts, e.kind != "organic"))
    stream.test_start = int(len(stream.events) * (1.0 - cfg.test_fraction))
    return stream
