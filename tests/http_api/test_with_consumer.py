"""The read side beside a running pipeline (real broker, real redis-server, the real processes):
`adr simulate` publishes kills, `adr consume` rates them, `adr calibrate` places players,
`adr history` keeps histories, `adr serve` answers. While all of them run, a season is closed:
its archive is one state of the board; the API's pages walk the live board, and the profile of a
player shows a history that ends at the player's stored version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from redis_layout import Keys
from serve.seasons import close_season
from stack import TopicAdmin
from tests.http_api.conftest import http_get, running_serve

pytestmark = [pytest.mark.integration, pytest.mark.slow]
_ADR = [sys.executable, "-m", "adr_cli.main"]


def test_a_season_closes_and_the_api_answers_while_the_pipeline_runs(
    kafka_bootstrap: str,
    kafka_admin: TopicAdmin,
    redis_url: str,
    redis_client: redis.Redis,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    ns = unique_name("live")
    topics = {k: kafka_admin.create(unique_name(k), partitions=2) for k in ("kills", "ratings")}
    dlq = kafka_admin.create(unique_name("dlq"))
    tiers = kafka_admin.create(unique_name("tiers"), config={"cleanup.policy": "compact"})
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REDIS_URL": redis_url,
           "ADR_NAMESPACE": ns}  # fmt: skip
    commands = {
        "consume": ["consume", "--topic", topics["kills"], "--rating-topic", topics["ratings"],
                    "--dlq-topic", dlq, "--group", unique_name("g"), "--metrics-port", "0"],
        "calibrate": ["calibrate", "--topic", tiers, "--every", "2", "--metrics-port", "0"],
        "history": ["history", "--topic", topics["ratings"], "--group", unique_name("h"),
                    "--metrics-port", "0"],
        "simulate": ["simulate", "--topic", topics["kills"], "--players", "120", "--arenas", "6",
                     "--rate", "300", "--events", "0", "--seed", "7"],
    }  # fmt: skip
    procs = {}
    keys = Keys(ns)
    try:
        for name, argv in commands.items():
            log = (tmp_path / f"{name}.log").open("wb")
            procs[name] = subprocess.Popen([*_ADR, *argv], env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + 120
        while redis_client.zcard(keys.lb) < 40:
            for name, proc in procs.items():
                assert proc.poll() is None, (name, (tmp_path / f"{name}.log").read_text()[-2000:])
            assert time.monotonic() < deadline, "fewer than 40 placed players after 120 s"
            time.sleep(0.5)
        players = close_season(redis_client, ns, "s1", "s2", topics=(topics["kills"],))
        archive = keys.archive("s1")
        board = dict(redis_client.zrange(archive.lb, 0, -1, withscores=True))
        assert len(board) == players >= 40
        pipe = redis_client.pipeline(transaction=False)
        for member in board:
            pipe.hget(archive.player(member.decode()), "mu")
        assert [float(mu) for mu in pipe.execute()] == list(board.values())  # one state
        # the close starts season s2: its board begins empty at its first event and players
        # come back to it as they play (docs/api.md, "Seasons"); walk it once 40 are back
        deadline = time.monotonic() + 120
        while redis_client.zcard(keys.lb) < 40:
            assert time.monotonic() < deadline, "fewer than 40 players back after 120 s"
            time.sleep(0.5)
        with running_serve(redis_url, "--namespace", ns) as (base, _):
            rows, cursor = [], None
            while True:
                status, body = http_get(
                    f"{base}/v1/top?limit=7" + (f"&cursor={cursor}" if cursor else "")
                )
                assert status == 200
                page = json.loads(body)
                rows += page["rows"]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert len(rows) >= 40  # walked the live board while it was written
            status, body = http_get(f"{base}/v1/seasons/s1/top?limit=200")
            assert status == 200 and len(json.loads(body)["rows"]) == players
            who = rows[0]["player"]
            deadline = time.monotonic() + 30
            while True:
                status, body = http_get(f"{base}/v1/profile?player={who}")
                profile = json.loads(body)
                history = profile["history"]
                if history and history[-1]["seq"] == profile["version"]:
                    break
                assert time.monotonic() < deadline, profile
                time.sleep(0.5)
            seqs = [(p["epoch"], p["seq"]) for p in history]
            assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.wait(timeout=60)
