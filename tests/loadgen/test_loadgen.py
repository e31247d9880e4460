"""`adr simulate`: the pure generator (determinism, fractions, labels, malformed kinds), the CLI."""

from __future__ import annotations

import collections
import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adr_cli.main import main as adr_main
from engine import Params, is_duplicate
from loadgen import KINDS, MALFORMED_KINDS, SimConfig, build_world, generate
from schemas import Reason, SchemaError, decode_kill_event

START = 1_764_680_400_000


def _cfg(**kw: object) -> SimConfig:
    base: dict[str, object] = {
        "arenas": 8,
        "players": 200,
        "events": 3000,
        "seed": 11,
        "start_ts": START,
    }
    return SimConfig(**{**base, **kw})  # type: ignore[arg-type]


def test_same_seed_same_stream_other_seed_other_stream() -> None:
    cfg = _cfg(duplicate_rate=0.1, malformed_rate=0.05)
    first = [(m.kind, m.ts, m.key, m.value) for m in generate(cfg)]
    assert first == [(m.kind, m.ts, m.key, m.value) for m in generate(cfg)]
    other = [(m.kind, m.ts, m.key, m.value) for m in generate(_cfg(seed=12))]
    assert first != other
    assert len(first) == cfg.events


def test_fractions_are_respected() -> None:
    # Many players per arena: accidental repeats of a pair inside the cooldown are rare.
    n, dup, bad = 20_000, 0.1, 0.05
    kinds = collections.Counter(
        m.kind
        for m in generate(_cfg(players=20_000, events=n, duplicate_rate=dup, malformed_rate=bad))
    )
    malformed = sum(kinds[k] for k in MALFORMED_KINDS)
    for observed, p in ((malformed, bad), (kinds["duplicate"], dup)):
        assert abs(observed - n * p) < 5 * math.sqrt(n * p * (1 - p)), (observed, p)
    # Malformed kinds cycle: each appears within one of the others' count.
    per_kind = [kinds[k] for k in MALFORMED_KINDS]
    assert max(per_kind) - min(per_kind) <= 1
    assert set(kinds) <= set(KINDS)


def test_no_duplicates_or_malformed_when_rates_are_zero_and_many_players() -> None:
    kinds = collections.Counter(
        m.kind for m in generate(_cfg(players=50_000, events=2000, duplicate_rate=0.0))
    )
    assert kinds == {"kill": 2000}


def test_every_malformed_kind_is_rejected_with_its_reason_and_valid_ones_decode() -> None:
    seen: collections.Counter[str] = collections.Counter()
    missing_fields = set()
    for m in generate(_cfg(events=600, duplicate_rate=0.2, malformed_rate=0.3)):
        if m.event is not None:
            assert decode_kill_event(m.value, m.ts) == m.event
            assert m.key == m.event.arena.encode()
            continue
        with pytest.raises(SchemaError) as info:
            decode_kill_event(m.value, m.ts)
        assert info.value.reason == Reason(m.kind)
        seen[m.kind] += 1
        if m.kind == "missing_field":
            missing_fields.add(info.value.detail)
    assert set(seen) == set(MALFORMED_KINDS)
    assert len(missing_fields) == 6  # cycles through every required field


def test_kind_labels_follow_the_engines_cooldown_rule() -> None:
    params = Params(t_cooldown=60)
    cfg = _cfg(players=30, arenas=3, duplicate_rate=0.2, cooldown_ms=60_000)
    last: dict[tuple[str, str], int] = {}
    for m in generate(cfg):
        assert m.event is not None
        pair = (m.event.attacker, m.event.victim)
        dup = is_duplicate(last.get(pair), m.event.ts, params)
        assert m.kind == ("duplicate" if dup else "kill")
        if not dup:
            last[pair] = m.event.ts


def test_players_are_in_arenas_and_fight_only_there() -> None:
    import random

    cfg = _cfg(players=100, arenas=10, roaming=0.5)
    world = build_world(cfg, random.Random(cfg.seed))
    placed = collections.Counter(p for roster in world.rosters.values() for p in roster)
    assert set(placed) == set(world.skills) and all(c in (1, 2) for c in placed.values())
    assert sum(c == 2 for c in placed.values()) > 20  # roaming players appear twice
    assert all(
        len(r) >= 2
        for r in build_world(_cfg(players=3, arenas=5), random.Random(0)).rosters.values()
    )
    for m in generate(cfg):
        assert m.event is not None
        roster = set(world.rosters[m.event.arena])
        assert {m.event.attacker, m.event.victim} <= roster


def test_outcomes_follow_the_hidden_skills() -> None:
    import random

    cfg = _cfg(players=2, arenas=1, events=4000, skill_sd=1.0, seed=5)
    skills = build_world(cfg, random.Random(cfg.seed)).skills
    wins = collections.Counter(m.event.attacker for m in generate(cfg) if m.event is not None)
    expected = 1 / (1 + math.exp(skills["p1"] - skills["p0"]))  # P(p0 kills p1)
    n = wins["p0"] + wins["p1"]
    assert abs(wins["p0"] / n - expected) < 5 * math.sqrt(expected * (1 - expected) / n)


def test_event_time_is_start_plus_spacing() -> None:
    msgs = list(generate(_cfg(events=50, spacing_ms=250.0)))
    assert [m.ts for m in msgs] == [START + 250 * i for i in range(50)]


def test_bad_config_is_rejected() -> None:
    for kw in ({"players": 1}, {"duplicate_rate": 0.7, "malformed_rate": 0.4}, {"arenas": 0}):
        with pytest.raises(ValueError):
            _cfg(**kw)


def test_cli_writes_replay_file_and_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "events.jsonl"
    argv = [
        "simulate",
        "--no-kafka",
        "--out",
        str(out),
        "--events",
        "300",
        "--seed",
        "4",
        "--players",
        "40",
        "--arenas",
        "3",
        "--rate",
        "0",
        "--start-ts",
        str(START),
        "--duplicate-rate",
        "0.1",
        "--malformed-rate",
        "0.1",
    ]
    assert adr_main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["sent"] == 300 and sum(summary["by_kind"].values()) == 300
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == summary["by_kind"]["kill"] + summary["by_kind"]["duplicate"]
    expected = [
        m.event
        for m in generate(
            _cfg(events=300, seed=4, players=40, arenas=3, duplicate_rate=0.1, malformed_rate=0.1)
        )
        if m.event is not None
    ]
    assert lines == [
        {"id": e.id, "arena": e.arena, "attacker": e.attacker, "victim": e.victim, "ts": e.ts}
        for e in expected
    ]
    assert adr_main(["simulate", "--no-kafka"]) == 2  # nowhere to write


def test_rate_paces_the_stream(tmp_path: Path) -> None:
    started = time.monotonic()
    argv = [
        "simulate",
        "--no-kafka",
        "--out",
        str(tmp_path / "e.jsonl"),
        "--events",
        "150",
        "--rate",
        "500",
        "--players",
        "20",
    ]
    assert adr_main(argv) == 0
    elapsed = time.monotonic() - started
    assert 0.2 <= elapsed < 5.0  # 150 events at 500/s with a 50-event burst: >= 0.2 s


def test_against_the_broker(kafka_bootstrap: str, kafka_admin, unique_name) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka import Consumer

    topic = kafka_admin.create(unique_name("kill-events"), partitions=4)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "adr_cli",
            "simulate",
            "--bootstrap-servers",
            kafka_bootstrap,
            "--topic",
            topic,
            "--events",
            "200",
            "--rate",
            "0",
            "--seed",
            "9",
            "--arenas",
            "6",
            "--players",
            "100",
            "--duplicate-rate",
            "0.1",
            "--malformed-rate",
            "0.1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["sent"] == summary["delivered"] == 200 and summary["failed"] == 0
    for line in proc.stderr.splitlines():  # logs are JSON lines, librdkafka's included
        assert line.startswith("{") and json.loads(line)["level"], line

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": unique_name("g"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got: list[tuple[bytes, int, bytes]] = []  # key, partition, value
    deadline = time.monotonic() + 30
    while len(got) < 200 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            key, partition, value = msg.key(), msg.partition(), msg.value()
            assert key is not None and partition is not None and value is not None
            got.append((key, partition, value))
    consumer.close()
    assert len(got) == 200

    now = time.time_ns() // 1_000_000
    reasons: collections.Counter[str] = collections.Counter()
    partition_of: dict[bytes, set[int]] = collections.defaultdict(set)
    for key, partition, value in got:
        partition_of[key].add(partition)
        try:
            event = decode_kill_event(value, now)
        except SchemaError as exc:
            reasons[exc.reason.value] += 1
            continue
        assert key == event.arena.encode()
        reasons["valid"] += 1
    by_kind = summary["by_kind"]
    assert reasons["valid"] == by_kind["kill"] + by_kind["duplicate"]
    assert {k: reasons[k] for k in MALFORMED_KINDS} == {k: by_kind[k] for k in MALFORMED_KINDS}
    assert all(len(parts) == 1 for parts in partition_of.values())  # keyed by arena


def test_until_stopped_ends_cleanly_on_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "e.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "adr_cli", "simulate", "--no-kafka", "--out", str(out),
         "--events", "0", "--rate", "2000", "--players", "50"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while (not out.exists() or out.stat().st_size == 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 0, stderr
    summary = json.loads(stdout)
    assert summary["sent"] > 0
    assert (
        len(out.read_text().splitlines())
        == summary["by_kind"]["kill"] + summary["by_kind"]["duplicate"]
    )


def test_without_start_ts_events_carry_the_clocks_time() -> None:
    ticks = iter(range(START, START + 10_000, 7))
    msgs = list(
        generate(_cfg(start_ts=None, events=40, malformed_rate=0.3), clock=lambda: next(ticks))
    )
    assert [m.ts for m in msgs] == list(range(START, START + 7 * 40, 7))
    for m in msgs:
        if m.event is not None:
            assert m.event.ts == m.ts
