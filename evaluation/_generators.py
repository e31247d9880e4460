"""A family of synthetic kill streams, each shaped by a `Setting` (evaluation/_settings.py names
them): arrivals and churn with heavy-tailed lifetimes and play rates, skill drift and learning
curves, smurfs entering at the default rating, matchmaking by rating (lobbies) or uniform, a share
of random third-party kills, four outcome curves, and farmers paced from just past the cooldown to
an hour against fresh alt accounts and weak regulars.

The result is an `evaluation._stream.Stream`, so `run_protocol` measures it like the §10 stream.
Pure and seeded: the same setting and seed give the same events, bit for bit.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from evaluation._errors import EvaluationError
from evaluation._stream import DAY_MS, EPOCH_MS, SECOND_MS, Event, FarmSession, Stream

CURVES = ("logistic", "arctan", "probit", "student-t")
MATCHMAKING = ("uniform", "lobbies")
VICTIMS = ("alt", "weak")
BLOCK_MS = 2 * 3_600_000  # lobbies are re-formed every two hours of event time
# The generator's own matchmaker: Elo (K 24, scale 400, newcomers at 1500), independent of every
# rated system, so "matched by rating" means the same lobbies for all of them.
MATCH_K = 24.0
MATCH_START = 1500.0
T3_SQRT = math.sqrt(3.0)


@dataclass(frozen=True)
class Setting:
    """One named shape of stream. Skills are in Elo-like points (mixture 1200/1500/1900)."""

    name: str
    split: str  # "tuning" | "held-out"
    about: str
    accounts: int = 150  # regular accounts over the whole stream (alts and smurfs extra)
    events: int = 10_000  # organic kills
    days: int = 150
    # Arrivals and churn: `initial` of the accounts exist on day 0, the rest arrive uniformly over
    # the stream; each stays a Pareto(lifetime_shape) lifetime of at least lifetime_min days
    # (shape <= 0: nobody leaves).
    initial: float = 1.0
    lifetime_shape: float = 0.0
    lifetime_min: float = 20.0
    # Play rates: each account's weight is lognormal(0, play_sigma) (0: all equal); it is online
    # on a day with probability clip(online·weight, 0.03, 0.97) and drawn into kills ∝ weight.
    play_sigma: float = 0.0
    online: float = 0.6
    # Skill dynamics: a daily Gaussian random walk of this SD (points per √day), and a learning
    # curve: a new account starts `learning_gain` below its skill, closing it with this time scale.
    drift: float = 0.0
    learning_gain: float = 0.0
    learning_days: float = 20.0
    # Smurfs: this share of the arriving accounts are strong players on a fresh account.
    smurf_share: float = 0.0
    smurf_boost: float = 350.0
    matchmaking: str = "uniform"
    lobby_size: int = 8
    random_share: float = 0.0  # kills whose outcome is a coin flip (third party, environment)
    curve: str = "logistic"
    scale: float = 400.0  # logistic/arctan/student-t scale; probit uses per-player noise
    farm_paces_s: tuple[int, ...] = (65, 120, 300, 605, 700, 900, 1800, 3600)
    farm_kills: int = 20
    farm_day: int = 60  # sessions run every other day from here, one per (victim kind, pace)
    test_fraction: float = 0.3
    mixture: tuple[tuple[float, float, float], ...] = (
        (0.25, 1200.0, 150.0),
        (0.55, 1500.0, 200.0),
        (0.20, 1900.0, 180.0),
    )

    def validate(self) -> None:
        """Reject settings the generator cannot honour."""
        if self.split not in ("tuning", "held-out"):
            raise EvaluationError(f"{self.name}: split is 'tuning' or 'held-out'")
        if self.curve not in CURVES:
            raise EvaluationError(f"{self.name}: unknown curve {self.curve!r}")
        if self.matchmaking not in MATCHMAKING:
            raise EvaluationError(f"{self.name}: unknown matchmaking {self.matchmaking!r}")
        if self.accounts < 20 or self.events < 100 or self.days < 2:
            raise EvaluationError(f"{self.name}: needs >= 20 accounts, 100 events, 2 days")
        if not 0.0 < self.initial <= 1.0 or not 0.0 <= self.random_share <= 1.0:
            raise EvaluationError(f"{self.name}: initial in (0, 1], random_share in [0, 1]")
        if self.lobby_size < 2 or self.farm_kills < 2 or not 0 < self.test_fraction < 1:
            raise EvaluationError(f"{self.name}: lobby_size, farm_kills >= 2; test in (0, 1)")
        if any(p * SECOND_MS * self.farm_kills >= 2 * DAY_MS for p in self.farm_paces_s):
            raise EvaluationError(f"{self.name}: a farm session must fit in two days")
        last = self.farm_day + 2 * len(VICTIMS) * len(self.farm_paces_s)
        if self.farm_paces_s and last >= self.days:
            raise EvaluationError(f"{self.name}: farm sessions need {last} days")


@dataclass
class SettingStream(Stream):
    """A stream whose hidden skills move day by day (drift, learning): skill = daily table."""

    setting: Setting | None = None
    daily: dict[str, np.ndarray] = field(default_factory=dict)
    arrival_day: dict[str, int] = field(default_factory=dict)

    def skill(self, player: str, ts: int) -> float:
        table = self.daily.get(player)
        if table is None:
            return self.base_skill[player]
        day = min(max((ts - EPOCH_MS) // DAY_MS, 0), table.size - 1)
        return float(table[day])


def curve_probability(diff: float, curve: str, scale: float, noise: float) -> float:
    """P(i kills j) for a hidden-skill difference under `curve` (`noise`: probit's √(s_i²+s_j²)).
    student-t is Student's t with 3 degrees of freedom (closed form): heavier tails than the
    logistic, lighter than the arctangent (the Cauchy)."""
    if curve == "logistic":
        return 1.0 / (1.0 + math.pow(10.0, -diff / scale))
    if curve == "arctan":
        return 0.5 + math.atan(diff / scale) / math.pi
    if curve == "probit":
        return 0.5 * (1.0 + math.erf(diff / (noise * math.sqrt(2.0))))
    x = diff / scale / T3_SQRT
    return 0.5 + (x / (1.0 + x * x) + math.atan(x)) / math.pi


def _seed(setting: Setting, seed: int) -> list[int]:
    return [seed, zlib.crc32(setting.name.encode())]


def generate_setting(setting: Setting, seed: int) -> SettingStream:
    """The stream of `setting` for `seed`: organic kills day by day, then the farm sessions."""
    setting.validate()
    rng = np.random.default_rng(_seed(setting, seed))
    n = setting.accounts
    days = setting.days
    arriving = n - round(n * setting.initial)
    arrival = np.zeros(n, dtype=int)
    arrival[n - arriving :] = np.sort(rng.integers(1, days, size=arriving)) if arriving else []
    if setting.lifetime_shape > 0:
        life = setting.lifetime_min * (1.0 + rng.pareto(setting.lifetime_shape, size=n))
        leave = np.minimum(days, arrival + np.ceil(life).astype(int))
    else:
        leave = np.full(n, days)
    weights = np.exp(rng.normal(0.0, setting.play_sigma, size=n)) if setting.play_sigma else None
    weight = np.ones(n) if weights is None else weights
    comp = rng.choice(len(setting.mixture), size=n, p=[c[0] for c in setting.mixture])
    base = rng.normal([setting.mixture[c][1] for c in comp], [setting.mixture[c][2] for c in comp])
    smurf = (arrival > 0) & (rng.random(n) < setting.smurf_share)
    base = np.where(smurf, np.maximum(base, setting.mixture[-1][1]) + setting.smurf_boost, base)
    walk = np.cumsum(rng.normal(0.0, setting.drift, size=(n, days)), axis=1) if setting.drift else 0
    age = np.arange(days)[None, :] - arrival[:, None]
    learn = setting.learning_gain * np.exp(-np.maximum(age, 0) / setting.learning_days)
    table = base[:, None] + walk - np.where(smurf[:, None], 0.0, learn)
    noise_sd = rng.uniform(100.0, 290.0, size=n)  # probit's per-player performance noise

    width = len(str(n - 1))
    names = [f"p{i:0{width}d}" for i in range(n)]
    stream = SettingStream(
        config=None,  # type: ignore[arg-type]  # the setting replaces the §10 config
        players=list(names),
        base_skill={p: float(b) for p, b in zip(names, base, strict=True)},
        setting=setting,
        daily={p: table[i] for i, p in enumerate(names)},
        arrival_day={p: int(arrival[i]) for i, p in enumerate(names)},
        performance_sd={p: float(s) for p, s in zip(names, noise_sd, strict=True)},
    )
    # Farm sessions first (their players sit out organic play while farming).
    busy: dict[int, set[int]] = {}  # day -> account numbers farming or farmed that day
    sessions = _plan_farming(setting, rng, arrival, leave, base, names, busy, stream)
    organic = _organic(setting, rng, arrival, leave, weight, table, noise_sd, names, busy)
    farm = [
        Event(t, s.farmer, s.victim, True, "farm", s.index)
        for s, pace in sessions
        for t in range(s.start_ts, s.end_ts + 1, pace * SECOND_MS)
    ]
    stream.events = sorted(organic + farm, key=lambda e: (e.ts, e.kind != "organic"))
    stream.test_start = int(len(stream.events) * (1.0 - setting.test_fraction))
    return stream


def _plan_farming(
    setting: Setting,
    rng: np.random.Generator,
    arrival: np.ndarray,
    leave: np.ndarray,
    base: np.ndarray,
    names: list[str],
    busy: dict[int, set[int]],
    stream: SettingStream,
) -> list[tuple[FarmSession, int]]:
    """One session per (victim kind, pace), every other day: a regular near the median farms a
    fresh alt account (never seen before, never seen again) or the weakest regular present."""
    out: list[tuple[FarmSession, int]] = []
    used: set[int] = set()
    slot = 0
    for kind in VICTIMS:
        for pace in setting.farm_paces_s:
            day = setting.farm_day + 2 * slot
            # present for the whole session and ten days before it; accounts that farmed or
            # were farmed before only when fewer than four others are (sessions never overlap)
            around = [i for i in range(len(names)) if arrival[i] + 10 <= day and leave[i] > day + 1]
            present = [i for i in around if i not in used]
            if len(present) < 4:
                present = around
            if len(present) < 4:
                raise EvaluationError(f"{setting.name}: too few accounts present on day {day}")
            by_skill = sorted(present, key=lambda i: base[i])
            mid = by_skill[len(by_skill) // 2 - 2 : len(by_skill) // 2 + 2]
            farmer = int(mid[int(rng.integers(0, len(mid)))])
            used.add(farmer)
            if kind == "alt":
                victim_name = f"alt{slot:02d}"
                stream.players.append(victim_name)
                stream.base_skill[victim_name] = float(base[by_skill[0]])
                victim = -1
            else:
                victim = next(i for i in by_skill if i != farmer)
                victim_name = names[victim]
                used.add(victim)
            start = EPOCH_MS + day * DAY_MS + int(rng.integers(0, DAY_MS // 4))
            end = start + (setting.farm_kills - 1) * pace * SECOND_MS
            for d in range(day, day + 2):
                busy.setdefault(d, set()).update({farmer} | ({victim} if victim >= 0 else set()))
            session = FarmSession(slot, f"{kind}-{pace}s", names[farmer], victim_name, start, end)
            stream.farm_sessions.append(session)
            out.append((session, pace))
            slot += 1
    return out


def _organic(
    setting: Setting,
    rng: np.random.Generator,
    arrival: np.ndarray,
    leave: np.ndarray,
    weight: np.ndarray,
    table: np.ndarray,
    noise_sd: np.ndarray,
    names: list[str],
    busy: dict[int, set[int]],
) -> list[Event]:
    """Organic kills: per day the online accounts, per two-hour block uniform pairs (by play
    weight) or lobbies of similar matchmaker rating; outcomes from the curve, or a coin flip."""
    n = len(names)
    match = np.full(n, MATCH_START)
    per_day = rng.multinomial(setting.events, np.full(setting.days, 1.0 / setting.days))
    online_p = np.clip(setting.online * weight, 0.03, 0.97)
    out: list[Event] = []
    for day in range(setting.days):
        present = (arrival <= day) & (leave > day)
        online = present & (rng.random(n) < online_p)
        for i in busy.get(day, ()):
            online[i] = False
        ids = np.flatnonzero(online)
        count = int(per_day[day])
        if ids.size < 2 or count == 0:
            continue
        day_start = EPOCH_MS + day * DAY_MS
        times = np.sort(rng.integers(day_start, day_start + DAY_MS, size=count))
        blocks = (times - day_start) // BLOCK_MS
        for block in np.unique(blocks):
            block_times = times[blocks == block]
            lobbies = _lobbies(setting, rng, ids, match)
            w = weight[ids] / weight[ids].sum()
            for t in block_times:
                if setting.matchmaking == "lobbies":
                    sizes = np.array([len(lb) for lb in lobbies], dtype=float)
                    lobby = lobbies[int(rng.choice(len(lobbies), p=sizes / sizes.sum()))]
                    i, j = (int(x) for x in rng.choice(lobby, size=2, replace=False))
                else:
                    i, j = (int(x) for x in rng.choice(ids, size=2, replace=False, p=w))
                u, coin = rng.random(), rng.random()
                if coin < setting.random_share:
                    prob = 0.5
                else:
                    noise = math.sqrt(noise_sd[i] ** 2 + noise_sd[j] ** 2)
                    prob = curve_probability(
                        float(table[i, day] - table[j, day]), setting.curve, setting.scale, noise
                    )
                won = bool(u < prob)
                a, b = (i, j) if won else (j, i)
                out.append(Event(int(t), names[a], names[b], won, "organic"))
                expected = 1.0 / (1.0 + 10.0 ** ((match[b] - match[a]) / 400.0))
                match[a] += MATCH_K * (1.0 - expected)
                match[b] -= MATCH_K * (1.0 - expected)
    return out


def _lobbies(
    setting: Setting, rng: np.random.Generator, ids: np.ndarray, match: np.ndarray
) -> list[np.ndarray]:
    """Online accounts sorted by matchmaker rating (ties broken at random), cut into lobbies of
    `lobby_size`; a short last lobby joins the one before."""
    if setting.matchmaking != "lobbies":
        return [ids]
    order = ids[np.lexsort((rng.random(ids.size), match[ids]))]
    size = setting.lobby_size
    cuts = [order[k : k + size] for k in range(0, order.size, size)]
    if len(cuts) > 1 and cuts[-1].size < size:
        last = cuts.pop()
        cuts[-1] = np.concatenate([cuts[-1], last])
    return cuts
