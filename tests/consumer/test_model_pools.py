"""A pool of each model other than ADR (`adr consume --model NAME`): through a real Kafka broker
and redis-server, killed with SIGKILL mid-run and restarted, it ends equal to `adr replay --model
NAME` on the same events, bit for bit; a process with another model or other model parameters
refuses the pool (exit 2) before it consumes anything."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections import Counter
from pathlib import Path

import consumer_support as S
import msgspec
import pytest
import redis

from engine import TIER_LABELS, model_named, model_parameters
from redis_layout import (
    Keys,
    ModelMismatch,
    PoolRebuilding,
    model_stamp,
    pool_model,
    stamp_model,
)
from redis_layout.player_codec import READ_FIELDS, decode_fields
from runtime import compiled
from schemas import change_order, decode_rating_change

pytestmark = pytest.mark.integration  # starts consumer processes of its own

ROOT = Path(__file__).resolve().parents[2]

OTHER_MODELS = ("elo", "glicko2", "trueskill", "weng-lin")
MODEL_PARAMS = {"elo": ("k=24",), "glicko2": (), "trueskill": ("display_k=2",), "weng-lin": ()}
"""One non-default parameter where a model has an obvious one: the consumer and the replay
must read `--model-param` alike."""


def _compiled_adr() -> list[str]:
    """The compiled build's `adr` (runtime/compiled.py), or a skip where it is not current."""
    venv = compiled.venv()
    reason = compiled.stale_reason(venv, ROOT)
    if reason is not None:
        (pytest.fail if compiled.required() else pytest.skip)(reason)
    return [str(venv / "bin" / "adr")]


def _start(cmd: list[str], log: Path, build: str) -> subprocess.Popen[bytes]:
    if build == "pure":
        return S.start_process(cmd, str(log))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ADR_COMPILED")}
    out = open(log, "ab")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(  # not from the source tree: its .py would shadow the build
        cmd, stdout=out, stderr=out, start_new_session=True, cwd=log.parent, env=env
    )


@pytest.mark.parametrize(
    ("name", "build"),
    [*((name, "pure") for name in OTHER_MODELS), ("elo", "compiled"), ("trueskill", "compiled")],
)
def test_model_pool_killed_mid_run_equals_the_replay(
    name: str,
    build: str,
    kafka_bootstrap: str,
    redis_url: str,
    kafka_admin,
    unique_name,
    tmp_path: Path,
) -> None:
    """Pure, and compiled (the rating loop's Rating, cache and engine as mypyc built them).

    Two kills at random points of progress: each restart resumes from the model's state as
    Redis holds it, which is what a kill can break; more events or kills repeat that. 6,000
    events over 750 players keep ~16 kills a player, so a tenth and more are placed."""
    n = 6_000
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    events = S.events(n, players=750, arenas=30, seed=47)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    params = MODEL_PARAMS[name]
    model_flags = [arg for p in params for arg in ("--model-param", p)]
    cmd = S.consume_cmd(
        kafka_bootstrap, redis_url, ns, topic, unique_name("g"), "--model", name, *model_flags,
        "--group-instance-id", "c1", "--outbox-claim-idle-ms", "1000", "--batch-size", "200",
    )  # fmt: skip
    if build == "compiled":
        cmd = [*_compiled_adr(), *cmd[3:]]  # `adr consume ...` of the compiled build
    log = tmp_path / "consumer.log"
    proc = _start(cmd, log, build)
    kills: list[int] = []
    for target in sorted(random.Random(name).sample(range(n // 10, n - n // 10), 2)):
        applied = 0
        while applied < target and proc.poll() is None:
            time.sleep(0.01)
            applied = S.applied_offsets(client, keys, topic).get(0, 0)
        if applied >= n:
            break
        S.sigkill(proc)
        kills.append(applied)
        proc = _start(cmd, log, build)
    assert kills, f"the run ended before a kill: {log.read_text()[-2000:]}"
    S.wait_applied(client, keys, topic, {0: n}, 180, alive=lambda: proc.poll() is None)
    S.wait_outbox_empty(client, keys, 60)
    S.stop_gracefully(proc, log)

    out = S.replay_model(tmp_path, name, events, params)
    overrides = dict(p.split("=", 1) for p in params)
    model = model_named(name, overrides)
    want = {}
    for line in (out / "players.jsonl").read_text().splitlines():
        record = json.loads(line)
        want[record.pop("player")] = record
    population = json.loads((out / "population.json").read_text())
    assert population["model"] == name and population["counted"] > 0.8 * n

    got = {}
    for key in client.scan_iter(match=keys.match_players, count=1000):
        player = key.decode().removeprefix(keys.player(""))
        fields = decode_fields(client.hmget(key, list(READ_FIELDS)), key.decode())
        assert fields is not None
        state = model.from_fields(fields[0])
        got[player] = {**msgspec.structs.asdict(state), "display": model.display(state)}
    assert got == want  # every field of every player, floats compared exactly
    assert int(client.hget(keys.pop, "count")) == len(want)
    ranked = dict(client.zrange(keys.lb, 0, -1, withscores=True))
    placed = {p: r["display"] for p, r in want.items() if r["tier"]}
    assert len(placed) > len(want) // 10  # the common tier rule placed players
    assert {p.decode(): s for p, s in ranked.items()} == placed  # ranked by display, once placed
    tiers = Counter(TIER_LABELS[r["tier"] - 1] for r in want.values() if r["tier"])
    counts = {k.decode(): int(v) for k, v in client.hgetall(keys.tier_counts).items()}
    assert {k: v for k, v in counts.items() if v} == dict(tiers)
    assert json.loads(client.get(keys.model))["model"] == name

    changes = [
        decode_rating_change(m.value()) for m in S.read_topic(kafka_bootstrap, f"{topic}-ratings")
    ]
    assert {c.id for c in changes} == {c.id for c in changes if c.model == name}
    assert len({c.id for c in changes}) == 2 * population["counted"]  # every change, once
    last = {}
    for c in changes:  # a restart re-sends some: the newest is the highest (epoch, seq)
        if c.player not in last or change_order(c) > change_order(last[c.player]):
            last[c.player] = c
    mu_field = "rating" if name in ("elo", "glicko2") else "mu"
    assert all(last[p].mu_after == want[p][mu_field] for p in want)
    client.close()


def test_a_process_of_another_model_or_parameters_refuses_the_pool(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    n = 2_000
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    S.produce(kafka_bootstrap, topic, S.encoded(S.events(n, players=300, arenas=20, seed=3)))
    group = unique_name("g")
    base = S.consume_cmd(kafka_bootstrap, redis_url, ns, topic, group)
    log = tmp_path / "consumer.log"
    proc = S.start_process([*base, "--model", "elo", "--model-param", "k=24"], str(log))
    S.wait_applied(client, keys, topic, {0: n}, 120, alive=lambda: proc.poll() is None)
    S.stop_gracefully(proc, log)
    stamp = client.get(keys.model)
    offsets = S.applied_offsets(client, keys, topic)
    assert offsets == {0: n}
    S.produce(kafka_bootstrap, topic, S.encoded(S.events(40, players=5, arenas=2, seed=4)))

    for flags in (
        ["--model", "glicko2"],  # another model
        ["--model", "elo"],  # Elo's defaults: other parameters
        ["--model", "elo", "--model-param", "k=25"],
        [],  # ADR
    ):
        done = subprocess.run([*base, *flags], capture_output=True, timeout=60)
        assert done.returncode == 2, done.stderr[-2000:]
        assert b"one pool runs one model" in done.stderr + done.stdout
        assert client.get(keys.model) == stamp  # the record stays the first process's
        assert S.applied_offsets(client, keys, topic) == offsets  # nothing consumed

    # the same model and parameters (given through the environment this time) go on
    env_proc = subprocess.Popen(
        [*base, "--model", "elo"], env={**os.environ, "ADR_MODEL_PARAMS": "k=24"},
        stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True,  # noqa: SIM115
    )  # fmt: skip
    S.wait_applied(client, keys, topic, {0: n + 40}, 120, alive=lambda: env_proc.poll() is None)
    S.stop_gracefully(env_proc, log)
    client.close()


def test_a_model_other_than_adr_refuses_a_pool_adr_wrote_before_the_stamp(
    redis_url: str, unique_name
) -> None:
    client = redis.Redis.from_url(redis_url)
    keys = Keys(unique_name("ns"))
    client.hset(keys.pop, mapping={"count": 3, "sigma_hi": 0, "sigma_lo": 7})  # ADR's, no stamp
    elo = model_named("elo")
    assert pool_model(client, keys) == "adr"
    with pytest.raises(ModelMismatch):
        stamp_model(client, keys, model_stamp("elo", model_parameters(elo)))
    assert client.get(keys.model) is None
    adr = model_named("adr")
    stamp_model(client, keys, model_stamp("adr", model_parameters(adr)))
    assert pool_model(client, keys) == "adr"
    client.close()


def test_a_namespace_being_rebuilt_is_refused_as_such_whatever_the_model(
    redis_url: str, unique_name
) -> None:
    """`{ns}:layout` = rebuilding (adr rebuild midway: players and `{ns}:pop` written, no
    `{ns}:model` yet): every model's stamp check refuses it saying so (it said "a pool adr
    wrote before it" to another model) and writes no stamp (ADR's used to SET NX one)."""
    client = redis.Redis.from_url(redis_url)
    keys = Keys(unique_name("ns"))
    client.set(keys.layout, "rebuilding")
    client.hset(keys.pop, mapping={"count": 3, "sigma_hi": 0, "sigma_lo": 7})
    for name in ("elo", "adr"):
        with pytest.raises(PoolRebuilding, match="`adr rebuild` is writing this namespace") as exc:
            stamp_model(client, keys, model_stamp(name, model_parameters(model_named(name))))
        assert isinstance(exc.value, ModelMismatch)  # the consumer's refusal at start, exit 2
        assert "wrote before it" not in str(exc.value) and keys.layout in str(exc.value)
    assert client.get(keys.model) is None
    client.set(keys.layout, "2")  # switched: a pool (of ADR, written before the stamp)
    with pytest.raises(ModelMismatch, match="wrote before it"):
        stamp_model(client, keys, model_stamp("elo", model_parameters(model_named("elo"))))
    client.close()


def test_a_model_key_that_is_not_a_stamp_is_refused(redis_url: str, unique_name) -> None:
    client = redis.Redis.from_url(redis_url)
    keys = Keys(unique_name("ns"))
    stamp = model_stamp("elo", model_parameters(model_named("elo")))
    for garbage in (b"elo", b'{"model": 3}', b"\xff\xfe"):
        client.set(keys.model, garbage)
        with pytest.raises(ModelMismatch):
            stamp_model(client, keys, stamp)
        with pytest.raises(ModelMismatch):
            pool_model(client, keys)
        assert client.get(keys.model) == garbage  # left for the operator, not overwritten
    client.delete(keys.model)
    client.close()
