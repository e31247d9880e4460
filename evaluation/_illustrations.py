"""The paper's two illustrations rerun: §10.6 (a returning player) and §10.7 (prediction quality).

§10.6 leaves the set-up open (opponent updated or held, the players' uncertainties, the
population, the TrueSkill scale). The choices below are stated in the report; one of them (the
opponent held at 2000, Elo K = 32) reproduces the paper's Elo figure to the last digit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import msgspec
import numpy as np

from engine import Params, PlayerState, initial_snapshot, new_player, rate_kill, sigma_units
from evaluation._elo import Elo
from evaluation._glicko2 import GlickoRating, rate_period
from evaluation._metrics import auc, log_loss
from evaluation._stream import DAY_MS, EPOCH_MS, SECOND_MS, StreamConfig, generate, organic_stream
from evaluation._systems import RatingSystem
from evaluation._trueskill_system import TS_MU, TS_SIGMA, make_environment

PAPER_10_6 = {"adr": 1197.93, "elo-k32": 1166.94, "glicko2": 1077.40, "trueskill": 31.52}


@dataclass(frozen=True)
class ReturnSetup:
    """§10.6: a 1000-rated player back after `absent_days`, `kills` straight kills of a 2000."""

    absent_days: int = 60
    kills: int = 50
    interval_s: int = 61  # > t_cooldown: every kill counts for ADR
    player: float = 1000.0
    opponent: float = 2000.0
    opponent_fixed: bool = True
    adr_sigma: float = 100.0  # σ of both players before the absence (an established player)
    glicko_rd: float = 50.0  # RD of both before the absence; idle days inflate the player's
    elo_k: float = 32.0
    trueskill_opponent_mu: float = 40.0  # TrueSkill has its own scale: 25 stands for 1000
    trueskill_draw_probability: float = 0.0


@dataclass
class Trajectory:
    """The visible rating before the absence and after each kill, and the uncertainty scale."""

    system: str
    variant: str
    ratings: list[float] = field(default_factory=list)
    initial_uncertainty: float | None = None

    @property
    def total(self) -> float:
        return self.ratings[-1] - self.ratings[0]

    @property
    def steps(self) -> list[float]:
        return [b - a for a, b in zip(self.ratings, self.ratings[1:], strict=False)]


def _adr_state(mu: float, sigma: float, last_ts: int, params: Params) -> PlayerState:
    """A player with 100 events behind it, last at last_ts (§10.6's set-up)."""
    return msgspec.structs.replace(new_player(params), mu=mu, sigma=sigma, n=100, last_ts=last_ts)


def adr_return(setup: ReturnSetup, params: Params, absent_days: int) -> Trajectory:
    """ADR through engine.rate_kill; the population is the two players, μ̄_A = μ0."""
    t0 = EPOCH_MS
    back = t0 + absent_days * DAY_MS
    a = _adr_state(setup.player, setup.adr_sigma, t0, params)
    b = _adr_state(setup.opponent, setup.adr_sigma, back, params)
    snapshot = initial_snapshot(params)
    returning = absent_days > params.t_return
    safeguard = "on" if returning else "off"
    label = f"{absent_days} days: gap > t_return is {returning}, safeguard {safeguard}"
    traj = Trajectory("adr", label, [a.mu], params.sigma0)
    for k in range(setup.kills):
        ts = back + k * setup.interval_s * SECOND_MS
        if setup.opponent_fixed:
            b = msgspec.structs.replace(b, last_ts=ts)  # held: no decay, no update
        units = sigma_units(a.sigma, params) + sigma_units(b.sigma, params)
        out = rate_kill(a, b, ts, units, 2, snapshot, params)
        a = out.attacker
        if not setup.opponent_fixed:
            b = out.victim
        traj.ratings.append(a.mu)
    return traj


def elo_return(setup: ReturnSetup) -> Trajectory:
    """Elo (no notion of time): the absence changes nothing."""
    elo = Elo(k=setup.elo_k)
    traj = Trajectory(elo.name, "", [setup.player])
    elo.ratings.update({"a": setup.player, "b": setup.opponent})
    for _ in range(setup.kills):
        elo.update("a", "b", 0)
        if setup.opponent_fixed:
            elo.ratings["b"] = setup.opponent
        traj.ratings.append(elo.rating("a"))
    return traj


def glicko_return(setup: ReturnSetup) -> Trajectory:
    """Glicko-2: the absence adds one empty rating period per day, then one period per kill."""
    vol = GlickoRating().vol
    a = GlickoRating(setup.player, setup.glicko_rd, vol)
    for _ in range(setup.absent_days):
        a = rate_period(a, [])
    a = GlickoRating(a.r, min(a.rd, GlickoRating().rd), a.vol)
    b = GlickoRating(setup.opponent, setup.glicko_rd, vol)
    traj = Trajectory("glicko2", f"RD {setup.glicko_rd:g} → {a.rd:.1f} after the absence")
    traj.ratings.append(a.r)
    traj.initial_uncertainty = GlickoRating().rd
    for _ in range(setup.kills):
        a, b_next = rate_period(a, [(b, 1.0)]), rate_period(b, [(a, 0.0)])
        if not setup.opponent_fixed:
            b = b_next
        traj.ratings.append(a.r)
    return traj


def trueskill_return(setup: ReturnSetup, draw_probability: float) -> Trajectory:
    """TrueSkill on its own scale: the player a new Rating() (25, 25/3), the opponent μ = 40."""
    import trueskill

    env = make_environment(draw_probability)
    a = env.create_rating()
    b = env.create_rating(mu=setup.trueskill_opponent_mu)
    traj = Trajectory("trueskill", f"draw probability {draw_probability:g}", [TS_MU], TS_SIGMA)
    for _ in range(setup.kills):
        a, b_next = trueskill.rate_1vs1(a, b, env=env)
        if not setup.opponent_fixed:
            b = b_next
        traj.ratings.append(float(a.mu))
    return traj


def returning_player(setup: ReturnSetup, params: Params) -> list[Trajectory]:
    """Every system's trajectory (ADR at the stated gap and one day past t_return)."""
    trajectories = [
        adr_return(setup, params, setup.absent_days),
        adr_return(setup, params, math.floor(params.t_return) + 1),
        elo_return(setup),
        glicko_return(setup),
        trueskill_return(setup, setup.trueskill_draw_probability),
        trueskill_return(setup, 0.10),
    ]
    return trajectories


@dataclass
class PredictionCurves:
    """§10.7 for one system: rolling log loss and per-block AUC over the stream."""

    system: str
    rolling_log_loss: list[tuple[int, float]]
    block_auc: list[tuple[int, float]]
    overall_log_loss: float
    overall_auc: float
    last_block_log_loss: float
    last_block_auc: float


def prediction_quality_config(seed: int) -> StreamConfig:
    """§10.7's stream: 50 players, 8,000 kills, no injections (20 days)."""
    return organic_stream(seed=seed, players=50, events=8_000, days=20)


def prediction_quality(
    system: RatingSystem, cfg: StreamConfig, window: int = 500, block: int = 1000
) -> PredictionCurves:
    """Predict-then-update over the §10.7 stream; curves over the event count."""
    stream = generate(cfg)
    preds, labels = [], []
    for ev in stream.events:
        preds.append(system.predict(ev.first, ev.second, ev.ts))
        labels.append(1 if ev.first_won else 0)
        system.update(ev.attacker, ev.victim, ev.ts)
    p, y = np.asarray(preds), np.asarray(labels)
    clipped = np.clip(p, 1e-15, 1 - 1e-15)
    nll = -(y * np.log(clipped) + (1 - y) * np.log(1 - clipped))
    csum = np.concatenate([[0.0], np.cumsum(nll)])
    rolling = [
        (i, float((csum[i] - csum[i - window]) / window)) for i in range(window, p.size + 1, 50)
    ]
    blocks = [
        (min(i + block, p.size), auc(p[i : i + block], y[i : i + block]))
        for i in range(0, p.size, block)
    ]
    last = slice(p.size - block, p.size)
    return PredictionCurves(
        system.name,
        rolling,
        blocks,
        log_loss(p, y),
        auc(p, y),
        log_loss(p[last], y[last]),
        auc(p[last], y[last]),
    )
