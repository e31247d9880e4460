"""Seasons with the real processes: `adr consume` (ADR, and `--model glicko2|trueskill`) rates a
Kafka topic into Redis while `adr season close` closes two seasons, and is killed with SIGKILL
right around each season's start; the pool ends bit for bit as `adr replay --seasons` (the
schedule `adr season schedule` prints) of the same events, every rating change is emitted once,
and `adr serve`'s API serves the archived seasons and the new season's live board."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import consumer_support as S
import msgspec
import pytest
import redis
from litestar.testing import TestClient
from prometheus_client import CollectorRegistry

from adr_cli.main import main
from engine import (
    TIER_LABELS,
    AdrModel,
    ModelBook,
    Params,
    RatingBook,
    RatingModel,
    model_named,
)
from redis_layout import Keys
from redis_layout.player_codec import READ_FIELDS, decode_fields
from redis_layout.season_schedule import decode_schedule
from schemas import decode_rating_change
from serve import Config, create_app
from serve.seasons import close_season
from stack import TopicAdmin

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUNS = [("adr", 40_000, 1_500), ("glicko2", 12_000, 400), ("trueskill", 12_000, 400)]
"""(model, events, players): ADR's run as long as before; the other models' shorter (each player
still has a few dozen kills, so most are placed and a season leaves some behind)."""


def _wait(client: redis.Redis, keys: Keys, topic: str, proc: subprocess.Popen[bytes],
          until: Callable[[int], bool], what: str, log: Path) -> int:  # fmt: skip
    deadline = time.monotonic() + 180
    while True:
        applied = S.applied_offsets(client, keys, topic).get(0, 0)
        if until(applied):
            return applied
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"{what}: applied {applied} after 180 s"
        time.sleep(0.005)


def _ladder(client: redis.Redis, keys: Keys) -> int:
    return int(client.hget(keys.season_schedule, "ladder") or 0)


def _stored(client: redis.Redis, keys: Keys, model: RatingModel[Any]) -> dict[str, Any]:
    """The pool's states as its model's codec reads them."""
    if isinstance(model, AdrModel):
        return {p: s for p, (s, _ver) in S.redis_players(client, keys).items()}
    out = {}
    for raw in client.scan_iter(match=keys.match_players, count=5000):
        fields = decode_fields(client.hmget(raw, READ_FIELDS))
        assert fields is not None
        out[raw.decode()[len(keys.player_prefix) :]] = model.from_fields(fields[0])
    return out


def _score(model: RatingModel[Any], state: Any) -> float:
    """The board's score: ADR's μ, another model's display rating."""
    return state.mu if isinstance(model, AdrModel) else model.display(state)


@pytest.mark.parametrize(("name", "N", "players"), RUNS)
def test_seasons_closed_while_a_consumer_rates_and_is_killed_end_as_the_replay(
    kafka_bootstrap: str,
    kafka_admin: TopicAdmin,
    redis_url: str,
    unique_name: Callable[[str], str],
    tmp_path: Path,
    name: str,
    N: int,
    players: int,
) -> None:
    model = model_named(name)
    flags = () if name == "adr" else ("--model", name)
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    events = S.events(N, players=players, arenas=60, seed=41)
    closes = (N // 4, N * 19 // 20)  # the last season short: not all players return
    # Each close comes once `at` events are applied, while the consumer may still be rating up to
    # N // 40 more; the events after those are produced after the close, so the new season has
    # events to start with however fast the consumer went.
    cuts = [0, *(at + N // 40 for at in closes), N]
    S.produce(kafka_bootstrap, topic, S.encoded(events[: cuts[1]]))
    cmd = S.consume_cmd(kafka_bootstrap, redis_url, ns, topic, unique_name("g"),
                        "--group-instance-id", "c1", "--outbox-claim-idle-ms", "1000",
                        *flags)  # fmt: skip
    log = tmp_path / "consumer.log"
    proc = S.start_process(cmd, str(log))
    closed = {}
    kills = []
    for k, at in enumerate(closes):
        _wait(client, keys, topic, proc, lambda a, at=at: a >= at, "before the close", log)
        # closed while the consumer rates: its batch in flight was rated under the old schedule
        closed[f"s{k + 1}"] = close_season(client, ns, f"s{k + 1}", f"s{k + 2}", topics=(topic,))
        S.produce(kafka_bootstrap, topic, S.encoded(events[cuts[k + 1] : cuts[k + 2]]))
        # killed around the season's start: just before or just after its first event's write
        _wait(client, keys, topic, proc, lambda _a, k=k: _ladder(client, keys) > k or
              (k == 0 and _a > N // 4 + 40), "the new season's start", log)  # fmt: skip
        kills.append((_ladder(client, keys), S.applied_offsets(client, keys, topic).get(0, 0)))
        S.sigkill(proc)
        proc = S.start_process(cmd, str(log))
    S.wait_applied(client, keys, topic, {0: N}, 180, alive=lambda: proc.poll() is None)
    S.wait_outbox_empty(client, keys, 60)
    S.stop_gracefully(proc, log)
    assert _ladder(client, keys) == 2, kills
    assert all(n > 0 for n in closed.values())

    # adr replay --seasons, with the schedule adr season schedule prints
    printed = subprocess.run(
        [sys.executable, "-m", "adr_cli.main", "season", "--redis-url", redis_url,
         "--namespace", ns, "schedule"], capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    (tmp_path / "seasons.json").write_bytes(printed.stdout)
    schedule = decode_schedule(printed.stdout)
    assert [s.id for s in schedule.starts] == ["s2", "s3"]
    (tmp_path / "events.jsonl").write_text("".join(
        json.dumps({"id": e.id, "arena": e.arena, "attacker": e.attacker, "victim": e.victim,
                    "ts": e.ts}) + "\n" for e in events))  # fmt: skip
    snap = S.SNAPSHOT
    (tmp_path / "snapshot.json").write_text(json.dumps({
        "mean_mu_active": snap.mean_mu_active, "boundaries": list(snap.boundaries or ()),
        "active_count": snap.active_count}))  # fmt: skip
    out = tmp_path / "replay"
    assert main(["replay", str(tmp_path / "events.jsonl"), "--out-dir", str(out),
                 "--seasons", str(tmp_path / "seasons.json"), "--model", name,
                 "--snapshot", str(tmp_path / "snapshot.json")]) == 0  # fmt: skip
    replayed = {
        r["player"]: r for r in map(json.loads, (out / "players.jsonl").read_text().splitlines())
    }
    stored = _stored(client, keys, model)
    assert set(stored) == set(replayed)
    for player, s in stored.items():
        r = replayed[player]
        if isinstance(model, AdrModel):
            assert (r["mu"], r["sigma"], r["phi"], r["pool"], r["h_up"], r["h_down"]) == (
                s.mu, s.sigma, s.phi, s.pool, s.h_up, s.h_down), player  # fmt: skip
            assert (r["streak"], r["n"], r["last_ts"]) == (s.streak, s.n, s.last_ts), player
            assert r["tier"] == (TIER_LABELS[s.tier - 1] if s.tier else None), player
        else:  # the model's whole state (floats as repr: the same 64 bits), its display rating
            assert r.pop("display") == model.display(s), player
            assert {k: v for k, v in r.items() if k != "player"} == msgspec.structs.asdict(s)
    assert json.loads((out / "population.json").read_text())["season"] == 2

    def book_of(seasons: Any = None) -> Any:
        kwargs = {"fixed_snapshot": snap} | ({} if seasons is None else {"seasons": seasons})
        b = (
            RatingBook(Params(), **kwargs)
            if isinstance(model, AdrModel)
            else ModelBook(model, Params(), **kwargs)
        )
        for e in events:
            b.apply(e.id, e.attacker, e.victim, e.ts)
        return b

    book, plain = book_of(schedule), book_of()
    assert book.players() == dict(sorted(stored.items()))  # the whole state, bit for bit
    assert plain.counted == book.counted
    moved = sum(1 for p, s in plain.players().items() if s != book.player(p))
    assert moved > len(stored) // 2  # the resets changed most players (and the equality holds)
    board = {p: s for p, s in stored.items() if model.tier(s) and model.in_season(s, schedule, 2)}
    assert 0 < len(board) < sum(1 for s in stored.values() if model.tier(s))  # some not back
    lb = {m.decode(): v for m, v in client.zrange(keys.lb, 0, -1, withscores=True)}
    assert lb == {p: _score(model, s) for p, s in board.items()}

    received = [
        decode_rating_change(m.value()).id
        for m in S.read_topic(kafka_bootstrap, f"{topic}-ratings")
    ]
    # every change of every counted event, nothing else (a kill -9 may make the relay send an
    # entry again: at least once, docs/operations.md "The relay and duplicate rating changes")
    assert set(received) == S.change_ids(S.replay(events, Params(), snap).counted_ids)

    _assert_api(client, ns, {p: _score(model, s) for p, s in board.items()}, closed)
    client.close()


def _assert_api(client: redis.Redis, ns: str, board: dict[str, float],
                closed: dict[str, int]) -> None:  # fmt: skip
    config = Config(namespace=ns, max_page_size=500)
    with TestClient(create_app(config, client, CollectorRegistry())) as api:
        listed = api.get("/v1/seasons").json()
        assert [s["id"] for s in listed["closed"]] == ["s1", "s2"]
        assert listed["current"]["id"] == "s3"
        for season, players in closed.items():
            rows, cursor = [], None
            while True:
                params = {"limit": 500, **({"cursor": cursor} if cursor else {})}
                page = api.get(f"/v1/seasons/{season}/top", params=params).json()
                rows += page["rows"]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert len(rows) == players
        live, cursor = [], None
        while True:
            params = {"limit": 500, **({"cursor": cursor} if cursor else {})}
            page = api.get("/v1/top", params=params).json()
            live += page["rows"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert {r["player"]: r["mu"] for r in live} == board
        assert [r["mu"] for r in live] == sorted(board.values(), reverse=True)
