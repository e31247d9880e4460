"""The simulated game-server traffic of `adr simulate`: seeded kill events v1, pure.

`generate(SimConfig)` yields the same messages for the same seed (and `start_ts`), each labelled
with its kind (a counted kill, a repeat inside the cooldown, or one malformed kind), so tests,
benchmarks and `adr replay` files reuse it; loadgen/cli.py paces and publishes them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from schemas import DEFAULT_MAX_AGE_MS, MAX_ID_BYTES, MAX_MESSAGE_BYTES, KillEvent, kill_event

MALFORMED_KINDS: tuple[str, ...] = (
    "undecodable", "not_a_map", "missing_field", "wrong_type", "unknown_version",
    "bad_id", "self_kill", "ts_out_of_range", "too_large",
)  # fmt: skip
"""Each malformed kind is named after the `schemas.Reason` the decoder rejects it with."""
KINDS: tuple[str, ...] = ("kill", "duplicate", *MALFORMED_KINDS)
"""`kill`: counted by the cooldown rule in production order; `duplicate`: a repeat inside it."""

_REQUIRED = ("v", "id", "arena", "attacker", "victim", "ts")
REPLAY_FIELDS = ("id", "arena", "attacker", "victim", "ts")
_RECENT_KILLS = 64  # repeat kills re-play one of the last few counted kills
_OUT_OF_RANGE_MARGIN_MS = 86_400_000  # out-of-range events are a day older than the window
_TRUNCATE_BYTES = 3


@dataclasses.dataclass(frozen=True, slots=True)
class SimConfig:
    """The simulated world and load (`adr simulate` flags)."""

    arenas: int = 8
    players: int = 1000
    events: int = 0
    """Messages to send (valid and malformed); 0 = until stopped."""
    seed: int = 0
    duplicate_rate: float = 0.05
    malformed_rate: float = 0.0
    roaming: float = 0.1
    """Chance that a player also plays in a second arena."""
    skill_sd: float = 1.0
    """Hidden skills ~ Normal(0, skill_sd); P(i kills j) = 1 / (1 + exp(s_j − s_i))."""
    start_ts: int | None = None
    """Event time of the first message (ms); None = the wall clock at generation."""
    spacing_ms: float = 100.0
    """Event time between consecutive messages when `start_ts` is set."""
    cooldown_ms: int = 60_000
    """t_cooldown of the consumer, to place repeat kills inside it and label duplicates."""
    max_age_ms: int = DEFAULT_MAX_AGE_MS
    """The consumer's accepted event age, to place out-of-range events outside it."""

    def __post_init__(self) -> None:
        problems = [
            (self.arenas >= 1, "arenas >= 1"),
            (self.players >= 2, "players >= 2"),
            (self.events >= 0, "events >= 0"),
            (0 <= self.duplicate_rate <= 1 and 0 <= self.malformed_rate <= 1, "rates in [0, 1]"),
            (self.duplicate_rate + self.malformed_rate <= 1, "duplicate + malformed rate <= 1"),
            (0 <= self.roaming <= 1, "roaming in [0, 1]"),
            (self.skill_sd >= 0 and self.spacing_ms >= 0, "skill-sd, spacing >= 0"),
            (self.cooldown_ms >= 1, "cooldown >= 1 ms"),
        ]
        bad = [what for ok, what in problems if not ok]
        if bad:
            raise ValueError("bad simulation config: " + ", ".join(bad))


@dataclasses.dataclass(frozen=True, slots=True)
class World:
    """Players with hidden skills, and the roster of each arena."""

    skills: dict[str, float]
    rosters: dict[str, tuple[str, ...]]


@dataclasses.dataclass(frozen=True, slots=True)
class SimMessage:
    """One message as produced: its kind, event time, Kafka key and value, the event if valid."""

    kind: str
    ts: int
    key: bytes
    value: bytes
    event: KillEvent | None


def build_world(cfg: SimConfig, rng: random.Random) -> World:
    """Players p0… with hidden skills; each has a home arena, some roam into a second one."""
    players = [f"p{i}" for i in range(cfg.players)]
    skills = {p: rng.gauss(0.0, cfg.skill_sd) for p in players}
    arenas = [f"arena-{k}" for k in range(cfg.arenas)]
    members: dict[str, list[str]] = {a: [] for a in arenas}
    order = players[:]
    rng.shuffle(order)
    for i, p in enumerate(order):
        home = arenas[i % cfg.arenas]
        members[home].append(p)
        if cfg.arenas > 1 and rng.random() < cfg.roaming:
            members[rng.choice([a for a in arenas if a != home])].append(p)
    for roster in members.values():
        while len(roster) < 2:  # more arenas than players/2: borrow players
            roster.append(rng.choice([p for p in players if p not in roster]))
    return World(skills=skills, rosters={a: tuple(r) for a, r in members.items()})


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def generate(cfg: SimConfig, clock: Callable[[], int] = _wall_ms) -> Iterator[SimMessage]:
    """The message stream of `cfg` (endless if cfg.events == 0); pure when cfg.start_ts is set."""
    rng = random.Random(cfg.seed)
    world = build_world(cfg, rng)
    arenas = list(world.rosters)
    last_counted: OrderedDict[tuple[str, str], int] = OrderedDict()
    recent: deque[tuple[str, str, str]] = deque(maxlen=_RECENT_KILLS)
    malformed_seen = 0
    i = 0
    while cfg.events == 0 or i < cfg.events:
        ts = clock() if cfg.start_ts is None else cfg.start_ts + math.floor(i * cfg.spacing_ms)
        event_id = f"sim{cfg.seed}-{i}"
        u = rng.random()
        if u < cfg.malformed_rate:
            arena, attacker, victim = _fight(world, arenas, rng)
            good = kill_event(id=event_id, arena=arena, attacker=attacker, victim=victim, ts=ts)
            kind = MALFORMED_KINDS[malformed_seen % len(MALFORMED_KINDS)]
            nth = malformed_seen // len(MALFORMED_KINDS)
            value = _malformed(kind, nth, msgspec.to_builtins(good), cfg)
            malformed_seen += 1
            yield SimMessage(kind, ts, arena.encode(), value, None)
        else:
            if u < cfg.malformed_rate + cfg.duplicate_rate and recent:
                arena, attacker, victim = rng.choice(recent)
                t_prev = last_counted.get((attacker, victim))
                if t_prev is not None and ts - t_prev >= cfg.cooldown_ms:
                    ts = t_prev + cfg.cooldown_ms // 2  # a late repeat, still inside
            else:
                arena, attacker, victim = _fight(world, arenas, rng)
            pair = (attacker, victim)
            t_prev = last_counted.get(pair)
            if t_prev is not None and abs(ts - t_prev) < cfg.cooldown_ms:
                kind = "duplicate"
            else:
                kind = "kill"
                last_counted[pair] = ts
                last_counted.move_to_end(pair)
                recent.append((arena, attacker, victim))
                _forget_before(last_counted, ts - 2 * cfg.cooldown_ms)
            event = kill_event(id=event_id, arena=arena, attacker=attacker, victim=victim, ts=ts)
            yield SimMessage(kind, ts, arena.encode(), _ENCODER.encode(event), event)
        i += 1


_ENCODER = msgspec.msgpack.Encoder()


def _fight(world: World, arenas: list[str], rng: random.Random) -> tuple[str, str, str]:
    """An arena and two of its players; the more skilled one wins more often (logistic)."""
    arena = rng.choice(arenas)
    i, j = rng.sample(world.rosters[arena], 2)
    p_i_wins = 1.0 / (1.0 + math.exp(world.skills[j] - world.skills[i]))
    return (arena, i, j) if rng.random() < p_i_wins else (arena, j, i)


def _forget_before(last_counted: OrderedDict[tuple[str, str], int], horizon: int) -> None:
    """Drop pairs counted before `horizon`: counted times only grow, so they are at the front."""
    while last_counted:
        pair, t = next(iter(last_counted.items()))
        if t >= horizon:
            return
        del last_counted[pair]


def _malformed(kind: str, nth: int, good: dict[str, Any], cfg: SimConfig) -> bytes:
    """A kill event broken in exactly one way, so the decoder rejects it with reason `kind`."""
    bad = dict(good)
    if kind == "undecodable":
        return msgspec.msgpack.encode(good)[:-_TRUNCATE_BYTES]
    if kind == "not_a_map":
        return msgspec.msgpack.encode(list(good.values()))
    if kind == "missing_field":
        del bad[_REQUIRED[nth % len(_REQUIRED)]]
    elif kind == "wrong_type":
        bad["ts"] = str(good["ts"])
    elif kind == "unknown_version":
        bad["v"] = 2
    elif kind == "bad_id":
        bad["attacker"] = "x" * (MAX_ID_BYTES + 1)
    elif kind == "self_kill":
        bad["victim"] = bad["attacker"]
    elif kind == "ts_out_of_range":
        bad["ts"] = good["ts"] - cfg.max_age_ms - _OUT_OF_RANGE_MARGIN_MS
    elif kind == "too_large":
        bad["extra"] = {"pad": "x" * MAX_MESSAGE_BYTES}
    else:
        raise ValueError(f"unknown malformed kind {kind!r}")
    return msgspec.msgpack.encode(bad)


def replay_line(event: KillEvent) -> str:
    """One line of the `adr replay` input: {"id","arena","attacker","victim","ts"}."""
    fields = {name: getattr(event, name) for name in REPLAY_FIELDS}
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
