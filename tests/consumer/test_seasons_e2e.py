"""Seasons with the real processes: `adr consume` rates a Kafka topic into Redis while `adr season
close` closes two seasons, and is killed with SIGKILL right around each season's start; the pool
ends bit for bit as `adr replay --seasons` (the schedule `adr season schedule` prints) of the same
events, every rating change is emitted once, and `adr serve`'s API serves the archived seasons
and the new season's live board."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import consumer_support as S
import pytest
import redis
from litestar.testing import TestClient
from prometheus_client import CollectorRegistry

from adr_cli.main import main
from engine import TIER_LABELS, Params, PlayerState, RatingBook, season_start_ms
from redis_layout import Keys
from redis_layout.season_schedule import decode_schedule
from schemas import decode_rating_change
from serve import Config, create_app
from serve.seasons import close_season
from stack import TopicAdmin

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N = 40_000


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


def test_seasons_closed_while_a_consumer_rates_and_is_killed_end_as_the_replay(
    kafka_bootstrap: str,
    kafka_admin: TopicAdmin,
    redis_url: str,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    events = S.events(N, players=1_500, arenas=60, seed=41)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    cmd = S.consume_cmd(kafka_bootstrap, redis_url, ns, topic, unique_name("g"),
                        "--group-instance-id", "c1", "--outbox-claim-idle-ms", "1000")  # fmt: skip
    log = tmp_path / "consumer.log"
    proc = S.start_process(cmd, str(log))
    closed = {}
    kills = []
    for k, at in enumerate((N // 4, N * 19 // 20)):  # the last season short: not all return
        _wait(client, keys, topic, proc, lambda a, at=at: a >= at, "before the close", log)
        # closed while the consumer rates: its batch in flight was rated under the old schedule
        closed[f"s{k + 1}"] = close_season(client, ns, f"s{k + 1}", f"s{k + 2}", topics=(topic,))
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
                 "--seasons", str(tmp_path / "seasons.json"),
                 "--snapshot", str(tmp_path / "snapshot.json")]) == 0  # fmt: skip
    replayed = {
        r["player"]: r for r in map(json.loads, (out / "players.jsonl").read_text().splitlines())
    }
    stored = {p: s for p, (s, _ver) in S.redis_players(client, keys).items()}
    assert set(stored) == set(replayed)
    for player, s in stored.items():
        r = replayed[player]
        assert (r["mu"], r["sigma"], r["phi"], r["pool"], r["h_up"], r["h_down"]) == (
            s.mu, s.sigma, s.phi, s.pool, s.h_up, s.h_down), player  # fmt: skip
        assert (r["streak"], r["n"], r["last_ts"]) == (s.streak, s.n, s.last_ts), player
        assert r["tier"] == (TIER_LABELS[s.tier - 1] if s.tier else None), player
    assert json.loads((out / "population.json").read_text())["season"] == 2

    book = RatingBook(Params(), fixed_snapshot=snap, seasons=schedule)
    for e in events:
        book.apply(e.id, e.attacker, e.victim, e.ts)
    assert book.players() == dict(sorted(stored.items()))  # the whole state, bit for bit
    plain = RatingBook(Params(), fixed_snapshot=snap)
    for e in events:
        plain.apply(e.id, e.attacker, e.victim, e.ts)
    assert plain.counted == book.counted
    moved = sum(1 for p, s in plain.players().items() if s != book.player(p))
    assert moved > len(stored) // 2  # the resets changed most players (and the equality holds)
    since = season_start_ms(schedule, 2)
    board = {p: s for p, s in stored.items() if s.tier and s.recent[-1] >= (since or 0)}
    assert 0 < len(board) < sum(1 for s in stored.values() if s.tier)  # some not back yet
    lb = {m.decode(): v for m, v in client.zrange(keys.lb, 0, -1, withscores=True)}
    assert lb == {p: s.mu for p, s in board.items()}

    received = [
        decode_rating_change(m.value()).id
        for m in S.read_topic(kafka_bootstrap, f"{topic}-ratings")
    ]
    # every change of every counted event, nothing else (a kill -9 may make the relay send an
    # entry again: at least once, docs/operations.md "The relay and duplicate rating changes")
    assert set(received) == S.change_ids(S.replay(events, Params(), snap).counted_ids)

    _assert_api(client, ns, keys, board, closed)
    client.close()


def _assert_api(client: redis.Redis, ns: str, keys: Keys, board: dict[str, PlayerState],
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
        assert {r["player"]: r["mu"] for r in live} == {p: s.mu for p, s in board.items()}
        assert [r["mu"] for r in live] == sorted((s.mu for s in board.values()), reverse=True)
