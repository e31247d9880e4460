"""`adr rebuild` on a real broker and redis-server: the pool it writes is the consumer's, bit for
bit, and `adr consume` continues from it exactly-once; a crash leaves no visible pool."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import consumer_support as S
import msgspec
import pytest
import redis

from consumer.config import Config
from consumer.pipeline import Pipeline
from engine import (
    AdrModel,
    ModelBook,
    Params,
    RatingBook,
    SeasonReset,
    SeasonSchedule,
    SeasonStart,
    model_named,
    model_parameters,
)
from redis_layout import Keys, PoolRebuilding, model_stamp
from redis_layout.layout import UnknownLayout, check_layout
from redis_layout.player_codec import READ_FIELDS, decode_fields
from redis_layout.season_schedule import encode_schedule
from schemas import encode_kill_event, kill_event

FIRST, MORE = 6_000, 2_000
"""The rebuilt part and the continuation: ~20 kills a player over 750 players (most placed, so
the ranks and tier counts hold something), cooldowns and event ids spread over the 50 minutes
of events whatever their number."""
CORES = ("python", "native")
"""adr rebuild --core: the pure path (the reference) and the native batch core (docs/native.md),
each against the same real broker and Redis."""


@pytest.fixture(scope="module")
def native_built() -> None:
    """The native core built in place for the sources' `adr` (the wheel builds its own)."""
    from runtime import compiled

    try:
        compiled.build_native_inplace()
    except OSError as exc:
        if compiled.required():
            raise
        pytest.skip(f"native core not built: {exc}")


def _with_core(request: pytest.FixtureRequest, core: str) -> list[str]:
    if core == "native":
        request.getfixturevalue("native_built")
    return ["--core", core]


def _assert_core(stderr: str, core: str) -> None:
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    started = next(r for r in lines if r.get("event") == "started")
    if core == "native":
        assert started["core"] == "native"
    else:
        assert started["core"].startswith("python")


MALFORMED = b"\x81\xa1v\x07not a kill event"


def _rebuild_cmd(bootstrap: str, redis_url: str, ns: str, topic: str, group: str,
                 snapshot: Path, *extra: str) -> list[str]:  # fmt: skip
    return [
        sys.executable, "-m", "adr_cli.main", "rebuild", "--bootstrap-servers", bootstrap,
        "--redis-url", redis_url, "--namespace", ns, "--topic", topic, "--group", group,
        "--snapshot", str(snapshot), *extra,
    ]  # fmt: skip


def _snapshot_file(tmp_path: Path) -> Path:
    path = tmp_path / "population.json"
    snap = S.SNAPSHOT
    path.write_text(json.dumps({
        "mean_mu_active": snap.mean_mu_active, "boundaries": list(snap.boundaries or ()),
        "active_count": snap.active_count,
    }))  # fmt: skip
    return path


def _summary(stderr: str) -> dict:  # type: ignore[type-arg]
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    done = [r for r in lines if r.get("event") == "rebuilt"]
    assert done, stderr[-3000:]
    return done[-1]


def _pool(client: redis.Redis, keys: Keys, topic: str) -> dict[str, object]:
    """The keys compared between two pools: every player hash (raw bytes), the ranks, activity,
    tier counts (non-zero: the consumer's HINCRBY leaves a "0"), the σ-limbs and count, the
    offsets and watermarks of the topic, the model stamp."""
    players = {k: client.hgetall(k) for k in client.scan_iter(match=keys.match_players, count=5000)}
    pop = {k: v for k, v in client.hgetall(keys.pop).items() if v != b"0"}
    tiers = {k: v for k, v in client.hgetall(keys.tier_counts).items() if v != b"0"}
    return {
        "players": {k[len(keys.prefix) :]: v for k, v in players.items()},
        "lb": client.zrange(keys.lb, 0, -1, withscores=True),
        "activity": client.zrange(keys.activity, 0, -1, withscores=True),
        "tier_counts": tiers,
        "pop": pop,
        "offsets": client.hgetall(keys.offsets(topic)),
        "watermarks": client.hgetall(keys.watermarks(topic)),
        "model": client.get(keys.model),
    }


def _live_records(client: redis.Redis, keys: Keys) -> dict[bytes, bytes]:
    """The cooldown and event-id records past the sweep horizon both pools must hold."""
    out = {}
    for pattern in (keys.match_cooldowns, keys.match_all.replace("*", "eid:*")):
        for k in client.scan_iter(match=pattern, count=5000):
            out[k] = client.get(k)
    return out


@pytest.mark.parametrize("core", CORES)
def test_rebuild_then_consume_equals_a_consumer_of_everything(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path,
    request: pytest.FixtureRequest, core: str,
) -> None:  # fmt: skip
    params = Params()
    events = S.events(FIRST + MORE, players=750, arenas=30, seed=31)
    first, more = events[:FIRST], events[FIRST:]
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    items = list(S.encoded(first))
    items.insert(FIRST // 2, (b"arena-1", MALFORMED))  # a malformed event in the log
    S.produce(kafka_bootstrap, topic, items)
    total = FIRST + MORE + 1

    ns, group = unique_name("ns"), unique_name("g")
    keys = Keys(ns)
    client = redis.Redis.from_url(redis_url)
    done = subprocess.run(
        _rebuild_cmd(kafka_bootstrap, redis_url, ns, topic, group, _snapshot_file(tmp_path),
                     *_with_core(request, core)),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == ""
    _assert_core(done.stderr, core)
    summary = _summary(done.stderr)
    assert summary["messages"] == FIRST + 1 and summary["events"] == FIRST
    assert client.get(keys.layout) == b"2"
    assert client.get(keys.model).decode() == model_stamp("adr", model_parameters(AdrModel(params)))
    assert S.applied_offsets(client, keys, topic) == {0: FIRST + 1}
    # equal to the engine's replay of the same events in the same (offset) order
    S.assert_as_replayed(client, keys, first, params)

    # `adr consume` continues from the rebuilt pool: the rest of the log, exactly once
    S.produce(kafka_bootstrap, topic, S.encoded(more))
    config = Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=group, rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
    )  # fmt: skip
    consumer = S.start_threaded(config, params)
    try:
        S.wait_applied(client, keys, topic, {0: total}, 240, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()
    changes = S.read_topic(kafka_bootstrap, f"{topic}-ratings")
    book_more = S.replay(events, params, S.SNAPSHOT)
    book_first = S.replay(first, params, S.SNAPSHOT)
    # only the continuation's rating changes were sent (none of the rebuilt history)
    assert len(changes) == 2 * (book_more.counted - book_first.counted)

    # a consumer that consumed everything, from the start, into another pool
    keys_all, client_all, _config = S.consume_all(
        kafka_bootstrap, redis_url, unique_name, topic, params, total
    )
    assert _pool(client, keys, topic) == _pool(client_all, keys_all, topic)
    horizon_keys = set(_live_records(client_all, keys_all))
    mine = {k.split(b"}", 1)[1]: v for k, v in _live_records(client, keys).items()}
    theirs = {k.split(b"}", 1)[1]: v for k, v in _live_records(client_all, keys_all).items()}
    assert horizon_keys and mine == theirs
    # the malformed message: dead-lettered by the consumer with the reason the rebuild counted
    dlq = S.read_topic(kafka_bootstrap, f"{topic}-dlq", expect=1, timeout=30)
    reasons = [dict(m.headers())["reason"].decode() for m in dlq]
    assert summary["dead_lettered"] == {reasons[0]: 1} and len(reasons) == 1
    client.close()
    client_all.close()


MODEL_FLAGS = {
    "elo": (("k=24",), "flags"),
    "glicko2": (("display_k=1",), "env"),
    "trueskill": (("display_k=2",), "flags"),
    "weng-lin": ((), "env"),
}
"""Per model other than ADR: its `--model-param` items and where `adr rebuild` gets the model
from (flags, or ADR_MODEL and ADR_MODEL_PARAMS as `adr consume` reads them)."""


@pytest.mark.parametrize("name", sorted(MODEL_FLAGS))
def test_a_model_pool_rebuilt_then_consumed_equals_a_consumer_of_everything_and_the_replay(
    name: str, kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    first_n, more_n = 3_000, 1_000
    params = Params()
    items, source = MODEL_FLAGS[name]
    model = model_named(name, dict(item.split("=", 1) for item in items))
    stamp = model_stamp(name, model_parameters(model))
    events = S.events(first_n + more_n, players=300, arenas=20, seed=36)
    first, more = events[:first_n], events[first_n:]
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    S.produce(kafka_bootstrap, topic, S.encoded(first))
    ns, group = unique_name("ns"), unique_name("g")
    keys = Keys(ns)
    client = redis.Redis.from_url(redis_url)
    cmd = _rebuild_cmd(kafka_bootstrap, redis_url, ns, topic, group, _snapshot_file(tmp_path))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADR_MODEL")}
    if source == "flags":
        cmd += ["--model", name, *(arg for item in items for arg in ("--model-param", item))]
    else:
        env |= {"ADR_MODEL": name, "ADR_MODEL_PARAMS": ",".join(items)}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = _summary(done.stderr)
    assert summary["model"] == name and summary["events"] == first_n
    assert client.get(keys.layout) == b"2"
    assert client.get(keys.model).decode() == stamp  # as `adr consume` stamps it

    # a consumer of another model (ADR, the default) refuses the rebuilt pool and consumes nothing
    S.produce(kafka_bootstrap, topic, S.encoded(more))
    refused = subprocess.run(
        S.consume_cmd(kafka_bootstrap, redis_url, ns, topic, group),
        env=env if source == "flags" else {**env, "ADR_MODEL": "adr", "ADR_MODEL_PARAMS": ""},
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert b"one pool runs one model" in refused.stderr + refused.stdout
    assert S.applied_offsets(client, keys, topic) == {0: first_n}
    assert client.get(keys.model).decode() == stamp

    # `adr consume --model` of the same model continues, exactly once
    config = Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=group, rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
    )  # fmt: skip
    consumer = S.start_threaded(config, params, model=model)
    try:
        S.wait_applied(client, keys, topic, {0: len(events)}, 240, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()
    changes = S.read_topic(kafka_bootstrap, f"{topic}-ratings")

    # equal to a consumer of the same model that consumed everything...
    keys_all, client_all, _config = S.consume_all(
        kafka_bootstrap, redis_url, unique_name, topic, params, len(events), model=model
    )
    mine, theirs = _pool(client, keys, topic), _pool(client_all, keys_all, topic)
    assert mine == theirs
    ranked, tiers = mine["lb"], mine["tier_counts"]
    assert isinstance(ranked, list) and len(ranked) > 10 and tiers  # players placed and ranked
    ours = {k.split(b"}", 1)[1]: v for k, v in _live_records(client, keys).items()}
    all_ = {k.split(b"}", 1)[1]: v for k, v in _live_records(client_all, keys_all).items()}
    assert ours and ours == all_

    # ...and to `adr replay --model` of the same events, every field of every player
    out = S.replay_model(tmp_path, name, events, items)
    want = {}
    for line in (out / "players.jsonl").read_text().splitlines():
        record = json.loads(line)
        want[record.pop("player")] = record
    got = {}
    for key in client.scan_iter(match=keys.match_players, count=1000):
        fields = decode_fields(client.hmget(key, list(READ_FIELDS)), key.decode())
        assert fields is not None
        state = model.from_fields(fields[0])
        player = key.decode().removeprefix(keys.player(""))
        got[player] = {**msgspec.structs.asdict(state), "display": model.display(state)}
    assert got == want
    # only the continuation's rating changes were sent (before the other pool sent its own)
    counted_all = json.loads((out / "population.json").read_text())["counted"]
    assert len(changes) == 2 * (counted_all - summary["counted"])
    client.close()
    client_all.close()


def test_a_crash_midway_leaves_no_visible_pool_and_a_rerun_completes(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    params = Params()
    events = S.events(8_000, players=3_000, arenas=30, seed=32)
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    ns, group = unique_name("ns"), unique_name("g")
    keys = Keys(ns)
    client = redis.Redis.from_url(redis_url)
    cmd = _rebuild_cmd(kafka_bootstrap, redis_url, ns, topic, group, _snapshot_file(tmp_path))
    proc = subprocess.Popen(
        [*cmd, "--commands-per-round", "20", "--progress-every", "0.000001"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:  # kill it once it has written part of the pool
        if '"phase":"write"' in line:
            proc.kill()
            break
    proc.wait(30)
    assert proc.returncode == -9, "the rebuild finished before it could be killed"
    assert client.get(keys.layout) == b"rebuilding"
    assert next(client.scan_iter(match=keys.match_players, count=1000), None) is not None
    with pytest.raises(UnknownLayout):  # every reader refuses it
        check_layout(client, keys)
    assert client.exists(keys.offsets(topic)) == 0  # written after the players
    # a consumer of the pool refuses it at start, whatever its model (the rebuild records the
    # pool's model only at its end), saying that the namespace is being rebuilt; it writes nothing
    config = Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=group, rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
    )  # fmt: skip
    for model in (None, model_named("elo")):
        pipeline = Pipeline(config, params, model=model)
        raised = S.raised_at_start(pipeline, "the consumer ran on a namespace being rebuilt")
        assert len(raised) == 1 and isinstance(raised[0], PoolRebuilding), raised
        assert "`adr rebuild` is writing this namespace" in str(raised[0])
    assert client.get(keys.layout) == b"rebuilding"
    assert client.get(keys.model) is None  # no consumer stamped its model into the namespace
    # nothing applied (the relay's empty outbox stream and its group are made at start)
    assert client.exists(keys.offsets(topic), keys.lb, keys.pop) == 0
    assert client.xlen(keys.outbox) == 0
    refused = subprocess.run(  # `adr consume` itself: exit 2 and the reason
        S.consume_cmd(kafka_bootstrap, redis_url, ns, topic, group, "--model", "elo"),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "the pool is being rebuilt" in refused.stderr + refused.stdout
    assert "one pool runs one model" not in refused.stderr + refused.stdout

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert '"unfinished_rebuild_removed"' in again.stderr
    assert check_layout(client, keys) == 2
    S.assert_as_replayed(client, keys, events, params)
    assert S.applied_offsets(client, keys, topic) == {0: len(events)}
    # a third run refuses the namespace: it holds a pool now
    third = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert third.returncode == 3, third.stderr[-2000:]
    assert check_layout(client, keys) == 2
    client.close()


def test_the_consumers_parameters_reach_the_rebuild_and_its_other_settings_do_not_stop_it(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    """`adr rebuild` run with the consumer's environment and config file: it takes ADR_PARAMS
    and the file's [params] as `adr consume` does, so the consumer with them continues the
    rebuilt pool (it refused it when the rebuild read neither), and a bad setting only the
    consumer uses (ADR_BATCH_SIZE=0) does not stop it."""
    events = S.events(400, players=40, arenas=5, seed=41)
    first, more = events[:300], events[300:]
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    S.produce(kafka_bootstrap, topic, S.encoded(first))
    ns, group = unique_name("ns"), unique_name("g")
    keys = Keys(ns)
    file = tmp_path / "adr.toml"
    file.write_text("[params]\nn_min = 5\n[consume]\nbatch_size = 200\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADR_")}
    env |= {"ADR_PARAMS": "theta=300,t_cooldown=30", "ADR_CONFIG_FILE": str(file)}
    cmd = _rebuild_cmd(kafka_bootstrap, redis_url, ns, topic, group, _snapshot_file(tmp_path))
    done = subprocess.run(
        cmd, env={**env, "ADR_BATCH_SIZE": "0"}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    params = Params.from_overrides({"theta": "300", "t_cooldown": "30", "n_min": "5"})
    client = redis.Redis.from_url(redis_url)
    assert client.get(keys.model).decode() == model_stamp("adr", model_parameters(AdrModel(params)))

    S.produce(kafka_bootstrap, topic, S.encoded(more))
    config = Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=group, rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
    )  # fmt: skip
    consumer = S.start_threaded(config, params)  # the consumer's parameters: it continues
    try:
        S.wait_applied(client, keys, topic, {0: len(events)}, 120, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()
    S.assert_as_replayed(client, keys, events, params)
    client.close()


def test_the_consumers_pool_and_counting_settings_reach_the_rebuild_and_its_flags_win(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    """`adr rebuild` reads the namespace, topic, group, lateness and future guard by the
    consumer's road (flags > env > file > defaults): run with the consumer's environment and
    file (top-level keys, its [consume] table) it builds the consumer's namespace from its
    topic, commits its group's offsets and counts as it does (an event 5 s behind the
    watermark is late under lateness_ms 1000; one 10 min ahead passes ADR_MAX_FUTURE_MS 1 h);
    a bad setting only the consumer uses does not stop it; its own flags win over both."""
    from confluent_kafka import Consumer, TopicPartition

    events = S.events(40, players=12, arenas=3, seed=43)
    late = kill_event(
        id="late-1", arena="arena-0", attacker="la", victim="lb", ts=events[-1].ts - 5_000
    )
    ahead_ts = time.time_ns() // 1_000_000 + 600_000
    ahead = kill_event(id="ahead-1", arena="arena-1", attacker="aa", victim="ab", ts=ahead_ts)
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    S.produce(kafka_bootstrap, topic, S.encoded([*events, late, ahead]))
    ns, group = unique_name("ns"), unique_name("g")
    file = tmp_path / "adr.toml"
    file.write_text(
        f'namespace = "{ns}"\ntopic = "{topic}"\n[consume]\nlateness_ms = 1000\ngroup = "{group}"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADR_")}
    env |= {"ADR_CONFIG_FILE": str(file), "ADR_MAX_FUTURE_MS": "3600000", "ADR_BATCH_SIZE": "x"}
    snapshot = str(_snapshot_file(tmp_path))
    base = [sys.executable, "-m", "adr_cli.main", "rebuild", "--bootstrap-servers",
            kafka_bootstrap, "--redis-url", redis_url, "--snapshot", snapshot]  # fmt: skip

    def rebuild(*flags: str) -> dict:  # type: ignore[type-arg]
        done = subprocess.run([*base, *flags], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        return _summary(done.stderr)

    def committed(group_id: str) -> int:
        reader = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group_id})
        try:
            return int(reader.committed([TopicPartition(topic, 0)], timeout=30)[0].offset)
        finally:
            reader.close()

    got = rebuild()  # the consumer's settings only
    assert (got["namespace"], got["topic"], got["late"]) == (ns, topic, 1)
    assert got["counted"] + got["duplicates"] + got["late"] == len(events) + 2
    assert "ts_out_of_range" not in got["dead_lettered"]
    assert committed(group) == len(events) + 2
    assert redis.Redis.from_url(redis_url).exists(Keys(ns).player("aa"))

    ns2, group2 = unique_name("ns"), unique_name("g")
    got = rebuild("--namespace", ns2, "--group", group2, "--lateness-ms", "3600000",
                  "--max-future-ms", "60000")  # fmt: skip
    assert (got["namespace"], got["late"], got["dead_lettered"]) == (ns2, 0, {"ts_out_of_range": 1})
    assert committed(group2) == len(events) + 2


def test_the_consumers_kafka_table_reaches_the_rebuild_under_the_properties_file_and_pairs(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    """`adr rebuild` reads the config file's [kafka] table as `adr consume` does, so a consumer
    secured through its file is rebuilt with the same file: alone, the file's settings reach the
    reader (librdkafka's debug lines it asks for; a protocol librdkafka refuses is exit 2 naming
    it, before any broker is asked); the properties file, ADR_KAFKA_CONFIG and --kafka-config
    each win over it (the consumer's order) and the rebuild builds the pool from the topic."""
    events = S.events(20, players=6, arenas=2, seed=47)
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    file = tmp_path / "adr.toml"
    file.write_text(
        f'topic = "{topic}"\n[kafka]\ndebug = "metadata"\n"security.protocol" = "no_such"\n'
    )
    properties = tmp_path / "client.properties"
    properties.write_text("# the consumer's properties file\nsecurity.protocol=plaintext\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADR_")}
    env |= {"ADR_CONFIG_FILE": str(file), "ADR_LOG_LEVEL": "debug"}
    snapshot = str(_snapshot_file(tmp_path))
    client = redis.Redis.from_url(redis_url)

    def rebuild(
        more_env: dict[str, str], *flags: str
    ) -> tuple[str, subprocess.CompletedProcess[str]]:
        ns = unique_name("ns")
        cmd = [sys.executable, "-m", "adr_cli.main", "rebuild", "--bootstrap-servers",
               kafka_bootstrap, "--redis-url", redis_url, "--namespace", ns, "--group",
               unique_name("g"), "--snapshot", snapshot, *flags]  # fmt: skip
        done = subprocess.run(
            cmd, env={**env, **more_env}, capture_output=True, text=True, timeout=120
        )
        return ns, done

    ns, refused = rebuild({})
    assert refused.returncode == 2, refused.stderr[-3000:]
    said = [json.loads(line) for line in refused.stderr.splitlines() if line.startswith("{")]
    usage = [line["message"] for line in said if line.get("event") == "usage"]
    assert len(usage) == 1 and '"no_such"' in usage[0] and "security.protocol" in usage[0], said
    assert not client.keys(f"{ns}:*")

    for more_env, flags in (
        ({"ADR_KAFKA_CONFIG_FILE": str(properties)}, ()),
        ({"ADR_KAFKA_CONFIG": "security.protocol=plaintext"}, ()),
        ({"ADR_KAFKA_CONFIG": "security.protocol=no_such"},
         ("--kafka-config", "security.protocol=PLAINTEXT")),
    ):  # fmt: skip
        ns, done = rebuild(more_env, *flags)
        assert done.returncode == 0, (more_env, flags, done.stderr[-3000:])
        assert sum(S.applied_offsets(client, Keys(ns), topic).values()) == len(events)
        said = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
        kafka_debug = [
            line for line in said
            if line.get("logger") == "adr.rebuild.kafka" and line.get("level") == "debug"
        ]  # fmt: skip
        assert kafka_debug, done.stderr[-3000:]  # the file's `debug`, not overridden, applied
    client.close()


def test_a_namespace_with_keys_is_refused_and_left_alone(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    S.produce(kafka_bootstrap, topic, [(b"a", encode_kill_event(S.events(1, 2, 1, 1)[0]))])
    ns, keys, client = S.rating_pool(redis_url, unique_name)  # a snapshot published: a key
    before = sorted(client.scan_iter(match=keys.match_all))
    cmd = _rebuild_cmd(kafka_bootstrap, redis_url, ns, topic, "g", _snapshot_file(tmp_path))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr[-2000:]
    assert sorted(client.scan_iter(match=keys.match_all)) == before
    client.close()


@pytest.mark.parametrize("core", CORES)
def test_partitions_are_merged_by_event_time_and_equal_the_replay_of_that_order(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path,
    request: pytest.FixtureRequest, core: str,
) -> None:  # fmt: skip
    params = Params()
    events = S.events(6_000, players=800, arenas=12, seed=33)
    topic = kafka_admin.create(unique_name("kill-events"), partitions=3)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    ns, group = unique_name("ns"), unique_name("g")
    keys = Keys(ns)
    client = redis.Redis.from_url(redis_url)
    cmd = _rebuild_cmd(kafka_bootstrap, redis_url, ns, topic, group, _snapshot_file(tmp_path),
                       *_with_core(request, core))  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    _assert_core(done.stderr, core)
    # the order, from the log itself: per partition in offset order, merged by (ts, partition)
    by_partition: dict[int, list] = {}  # type: ignore[type-arg]
    for m in S.read_topic(kafka_bootstrap, topic, expect=len(events)):
        by_partition.setdefault(m.partition(), []).append(m)
    from schemas import decode_kill_event

    heads = {p: sorted(ms, key=lambda m: m.offset()) for p, ms in by_partition.items()}
    assert len(heads) > 1
    merged = []
    now = time.time_ns() // 1_000_000
    while heads:
        p = min(heads, key=lambda q: (decode_kill_event(heads[q][0].value(), now).ts, q))
        merged.append(decode_kill_event(heads[p].pop(0).value(), now))
        if not heads[p]:
            del heads[p]
    S.assert_as_replayed(client, keys, merged, params)
    ends = S.end_offsets(kafka_bootstrap, topic, 3)
    assert S.applied_offsets(client, keys, topic) == {p: e for p, e in ends.items() if e}
    client.close()


@pytest.mark.parametrize("core", CORES)
def test_records_past_the_sweep_horizon_are_the_consumers(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path,
    request: pytest.FixtureRequest, core: str,
) -> None:  # fmt: skip
    # lateness 60 s over 50 min of events: the consumer's sweep deletes most records, and the
    # rebuild writes only those past the horizon; both hold the same ones there
    params = Params()
    lateness = 60_000
    events = S.events(6_000, players=300, arenas=10, seed=34)
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    ns, group = unique_name("ns"), unique_name("g")
    keys = Keys(ns)
    client = redis.Redis.from_url(redis_url)
    cmd = _rebuild_cmd(kafka_bootstrap, redis_url, ns, topic, group, _snapshot_file(tmp_path),
                       *_with_core(request, core))  # fmt: skip
    done = subprocess.run([*cmd, "--lateness-ms", str(lateness)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    _assert_core(done.stderr, core)

    ns_all, keys_all, client_all = S.rating_pool(redis_url, unique_name)
    config = Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns_all, topic=topic,
        group=unique_name("g"), rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
        lateness_ms=lateness,
    )  # fmt: skip
    consumer = S.start_threaded(config, params)
    try:
        S.wait_applied(client_all, keys_all, topic, {0: len(events)}, 240,
                       alive=consumer.thread.is_alive)  # fmt: skip
    finally:
        consumer.stop()
    assert _pool(client, keys, topic) == _pool(client_all, keys_all, topic)
    watermark = int(client.hget(keys.watermarks(topic), "0"))
    horizon = watermark - lateness - params.pair_memory_ms

    def live(c: redis.Redis, k: Keys) -> dict[bytes, bytes]:
        out = {}
        for key, value in _live_records(c, k).items():
            short = key.split(b"}", 1)[1]
            if short.startswith(b":cd:") and int(value) <= horizon:
                continue  # no accepted event can fall in its cooldown: either may hold it
            out[short] = value
        return out

    mine, theirs = live(client, keys), live(client_all, keys_all)
    assert mine == theirs
    assert len(_live_records(client, keys)) < 6_000 * 2 * 0.5  # records were swept
    client.close()
    client_all.close()


def test_an_adr_pool_with_pair_decay_is_refused_at_start_as_the_consumer_refuses_it(
    tmp_path: Path,
) -> None:
    """`pair_decay` (`--profile general`) by flag, environment or config file: no consumer
    could continue the pool (the consumer keeps no pair loads), so the rebuild of an ADR pool
    exits 2 before it touches Kafka or Redis, with `adr consume`'s own refusal (one check,
    consumer.cli.refuse_offline_only)."""
    config = tmp_path / "adr.toml"
    config.write_text('[params]\nprofile = "general"\n')
    servers = ["--bootstrap-servers", "127.0.0.1:1", "--redis-url", "redis://127.0.0.1:1"]
    rebuild = [sys.executable, "-m", "adr_cli.main", "rebuild", *servers, "--namespace", "n",
               "--group", "g"]  # fmt: skip
    consume = [sys.executable, "-m", "adr_cli.main", "consume", *servers]
    road: list[tuple[list[str], dict[str, str]]] = [
        (["--profile", "general"], {}),
        (["--param", "pair_decay=600"], {}),
        ([], {"ADR_PROFILE": "general"}),
        (["--config", str(config)], {}),
    ]
    for extra, env in road:
        said = []
        for command, field in ((rebuild, "message"), (consume, "error")):
            done = subprocess.run(
                [*command, *extra], capture_output=True, text=True, timeout=60,
                env={**os.environ, **env},
            )  # fmt: skip
            assert done.returncode == 2, (command[3], extra, done.stderr[-2000:])
            lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
            said.append([line[field] for line in lines if field in line])
        assert said[0] == said[1] and len(said[0]) == 1, (extra, said)
        assert "pair_decay=" in said[0][0] and "no pair load" in said[0][0], said


def test_usage_errors_exit_2_before_touching_kafka_or_redis(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "adr_cli.main", "rebuild", "--bootstrap-servers", "127.0.0.1:1",
            "--redis-url", "redis://127.0.0.1:1", "--namespace", "n", "--group", "g"]  # fmt: skip
    bad_snapshot = tmp_path / "bad.json"
    bad_snapshot.write_text("{}")
    seasons = tmp_path / "seasons.json"  # one season start: the native core applies none
    seasons.write_text(encode_schedule(SeasonSchedule((SeasonStart("s2", 1_000, 1000.0),), 1)))
    kafka_tables = {  # the consumer's config file's [kafka], read as the consumer reads it
        "guarded": '[kafka]\n"isolation.level" = "read_uncommitted"\n',  # the consumer's guard
        "unreadable": '[kafka]\n"socket.timeout.ms" = [1]\n',  # an array: no librdkafka text
        "unknown": '[kafka]\n"no.such.setting" = "1"\n',  # librdkafka's refusal
    }
    configs = []
    for name, text in kafka_tables.items():
        (tmp_path / f"{name}.toml").write_text(text)
        configs.append(["--config", str(tmp_path / f"{name}.toml")])
    for extra in (["--param", "no_such=1"], ["--snapshot", str(bad_snapshot)],
                  ["--commands-per-round", "0"], ["--lateness-ms", "-1"],
                  ["--model", "elo", "--profile", "general"],  # adr's pair_decay: no loads
                  ["--model", "trueskill", "--param", "pair_decay=600"],
                  ["--model", "glicko3"], ["--model-param", "k=24"],  # adr takes --param
                  ["--model", "elo", "--model-param", "no_such=1"],
                  ["--model", "elo", "--core", "native"],  # the core rates adr only
                  ["--seasons", str(seasons), "--core", "native"],
                  ["--model", "elo", "--seasons", str(seasons)],  # a raise elo has nothing for
                  ["--kafka-config", "isolation.level=read_uncommitted"],  # the consumer's guard
                  ["--kafka-config-file", str(tmp_path / "absent.properties")],
                  ["--kafka-config", "no.such.setting=1"],
                  *configs):  # fmt: skip
        done = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, (extra, done.stderr[-2000:])
        assert '"event":"usage"' in done.stderr


@pytest.mark.parametrize("pause_at", [1, 3, 200_000])
def test_the_read_merges_partitions_by_event_time_also_while_pausing_them(
    kafka_bootstrap: str, kafka_admin, unique_name, pause_at: int
) -> None:
    from confluent_kafka import Consumer

    from adr_cli import _rebuild_log
    from schemas import Limits

    events = S.events(3_000, players=200, arenas=9, seed=35)
    topic = kafka_admin.create(unique_name("kill-events"), partitions=3)
    items = list(S.encoded(events))
    items.insert(100, (b"arena-1", MALFORMED))
    S.produce(kafka_bootstrap, topic, items)
    reader = Consumer(_rebuild_log.settings(kafka_bootstrap, unique_name("g"), {}))
    out = _rebuild_log.LogRead()
    try:
        got = list(
            _rebuild_log.read_log(
                reader, topic, Limits(max_age_ms=2**62), out, lambda n: None, pause_at=pause_at
            )
        )
    finally:
        reader.close()
    # expected: each partition in offset order, merged by (ts, partition)
    per_partition: dict[int, list[tuple[int, int, str]]] = {}
    for p, offset, e in got:
        per_partition.setdefault(p, []).append((offset, e.ts, e.id))
    assert all(rows == sorted(rows) for rows in per_partition.values())  # offset order
    heads = {p: list(rows) for p, rows in per_partition.items()}
    want = []
    while heads:
        p = min(heads, key=lambda q: (heads[q][0][1], q))
        want.append(heads[p].pop(0)[2])
        if not heads[p]:
            del heads[p]
    assert [e.id for _p, _o, e in got] == want
    assert sorted(e.id for _p, _o, e in got) == sorted(e.id for e in events)
    assert sum(out.rejected.values()) == 1 and out.messages == len(items)
    assert sum(out.ends.values()) == len(items)


def _sh_blocks(section: str) -> list[str]:
    """The ```sh blocks of docs/operations.md's `## section`, in order."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [textwrap.dedent(b) for b in re.findall(r"^ *```sh\n(.*?)^ *```", body, re.M | re.S)]


def _commands(block: str) -> list[tuple[str, bool]]:
    """(command line, in the background: ended by &) of each command of a sh block."""
    out = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append((line.removesuffix("&").strip(), line.endswith("&")))
    return out


def test_the_documented_model_switch_runs_as_written(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    """docs/operations.md, "Switching a pool's model", steps 2 and 3: its commands run as
    written (the topic, namespace and group renamed to this test's own): the shadow pool is
    rebuilt with the new model, consumed on by that model, calibrated, and read."""
    step2, step3 = _sh_blocks("Switching a pool's model")
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    ns, group = unique_name("adr-elo"), unique_name("adr-consumer-elo")
    events = S.events(2_500, players=200, arenas=10, seed=37)
    first, more = events[:2_000], events[2_000:]
    S.produce(kafka_bootstrap, topic, S.encoded(first))
    names = {"adr-consumer-elo": group, "adr-elo": ns, "kill-events": topic}
    chosen = ("ADR_MODEL", "ADR_MODEL_PARAMS", "ADR_NAMESPACE", "ADR_CONFIG_FILE", "ADR_PARAMS")
    env = {k: v for k, v in os.environ.items() if k not in chosen}
    env |= {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REDIS_URL": redis_url,
            "ADR_METRICS_PORT": "0", "ADR_TIER_TOPIC": unique_name("tier-boundaries"),
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}  # fmt: skip

    def bash(line: str) -> list[str]:
        """The line for bash as written, but for this test's names (and the names built on
        them: kill-events-dlq-elo), run by `exec` so that a signal reaches `adr` itself."""
        for old, new in names.items():
            line = re.sub(rf"(?<![\w-]){re.escape(old)}(?=[\s-]|$)", new, line)
        assert line.startswith("adr "), line
        return ["bash", "-c", f"exec {line}"]

    client = redis.Redis.from_url(redis_url)
    keys = Keys(ns)
    commands = _commands(step2)
    assert [line.split()[:2] for line, _bg in commands] == [
        ["adr", "rebuild"], ["adr", "consume"], ["adr", "calibrate"]
    ]  # fmt: skip
    background: list[subprocess.Popen[str]] = []
    try:
        for line, in_background in commands:
            if in_background:
                log = open(tmp_path / f"{line.split()[1]}.log", "w")  # noqa: SIM115 - the process's
                background.append(
                    subprocess.Popen(bash(line), env=env, stdout=log, stderr=log, text=True)
                )
                continue
            done = subprocess.run(bash(line), env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
            assert "--model" in line and client.get(keys.layout) == b"2"
            stamp = json.loads(client.get(keys.model))
            assert (stamp["model"], stamp["parameters"]["k"]) == ("elo", 24)
        S.produce(kafka_bootstrap, topic, S.encoded(more))
        S.wait_applied(client, keys, topic, {0: len(events)}, 240,
                       alive=lambda: all(p.poll() is None for p in background))  # fmt: skip
        S.wait_until(lambda: client.hget(keys.snapshot, "version") not in (None, b"1"), 60,
                     "the tier job's snapshot over the rebuilt one")  # fmt: skip
        ((line, _bg),) = _commands(step3)
        read = subprocess.run(bash(line), env=env, capture_output=True, text=True, timeout=60)
        assert read.returncode == 0, read.stderr
        rows = read.stdout.splitlines()
        assert rows[0].split() == ["RANK", "PLAYER", "RATING", "TIER"] and len(rows) > 1
    finally:
        for proc in background:
            proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(60) for proc in background]
    assert codes == [0, 0], [
        (tmp_path / f).read_text()[-2000:] for f in ("consume.log", "calibrate.log")
    ]
    # the shadow pool holds the new model's states, every player's hash read by its codec
    model = model_named("elo", {"k": "24"})
    states = []
    for key in client.scan_iter(match=keys.match_players, count=1000):
        fields = decode_fields(client.hmget(key, list(READ_FIELDS)), key.decode())
        assert fields is not None
        states.append(model.from_fields(fields[0]))
    assert len(states) == int(client.hget(keys.pop, "count")) > 100
    client.close()


@pytest.mark.parametrize("name", ["adr", "glicko2"])
def test_a_rebuild_with_seasons_is_the_replay_with_them_and_the_consumer_continues(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path, name: str
) -> None:
    params = Params()
    model = model_named(name)
    adr = name == "adr"
    events = S.events(9_000, players=800, arenas=30, seed=37)
    first, more = events[:6_000], events[6_000:]
    times = sorted(e.ts for e in first)
    shift = 0.0 if adr else 500.0  # the pool means in the model's scale (Glicko-2: r near 1500)
    raise_ = 1.0 if adr else model.default_sigma_raise() / 100.0
    schedule = SeasonSchedule(
        (
            SeasonStart("s2", times[2_000] + 1, 1004.5 + shift, SeasonReset(0.5, 110.0 * raise_)),
            SeasonStart("s3", times[5_990] + 1, 997.25 + shift, SeasonReset(0.25, 60.0 * raise_)),
        ),
        version=2,
    )
    (tmp_path / "seasons.json").write_text(encode_schedule(schedule))
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    S.produce(kafka_bootstrap, topic, S.encoded(first))
    ns, group = unique_name("ns"), unique_name("g")
    keys = Keys(ns)
    client = redis.Redis.from_url(redis_url)
    done = subprocess.run(
        _rebuild_cmd(kafka_bootstrap, redis_url, ns, topic, group, _snapshot_file(tmp_path),
                     "--seasons", str(tmp_path / "seasons.json"), "--model", name),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]

    def assert_pool(evs: list) -> None:  # type: ignore[type-arg]
        book = (
            RatingBook(params, fixed_snapshot=S.SNAPSHOT, seasons=schedule)
            if adr
            else ModelBook(model, params, fixed_snapshot=S.SNAPSHOT, seasons=schedule)
        )
        for e in evs:
            book.apply(e.id, e.attacker, e.victim, e.ts)
        if adr:
            stored = {p: s for p, (s, _v) in S.redis_players(client, keys).items()}
        else:
            stored = {}
            for raw in client.scan_iter(match=keys.match_players, count=5000):
                fields = decode_fields(client.hmget(raw, list(READ_FIELDS)), raw.decode())
                assert fields is not None
                stored[raw.decode()[len(keys.player_prefix) :]] = model.from_fields(fields[0])
        assert stored == book.players()
        assert int(client.hget(keys.season_schedule, "ladder") or 0) == book.ladder
        board = {
            p: (s.mu if adr else model.display(s))
            for p, s in stored.items()
            if model.tier(s) and model.in_season(s, schedule, book.ladder)
        }
        assert {m.decode(): v for m, v in client.zrange(keys.lb, 0, -1, withscores=True)} == board
        counts = {k.decode(): int(v) for k, v in client.hgetall(keys.tier_counts).items() if int(v)}
        assert sum(counts.values()) == len(board) > 0

    assert_pool(first)
    # adr consume continues from it, reading the schedule the rebuild wrote
    S.produce(kafka_bootstrap, topic, S.encoded(more))
    config = Config(
        bootstrap_servers=kafka_bootstrap, redis_url=redis_url, namespace=ns, topic=topic,
        group=group, rating_topic=f"{topic}-ratings", dlq_topic=f"{topic}-dlq",
    )  # fmt: skip
    consumer = S.start_threaded(config, params, model=None if adr else model)
    try:
        S.wait_applied(client, keys, topic, {0: len(events)}, 240, alive=consumer.thread.is_alive)
    finally:
        consumer.stop()
    assert_pool(events)
    client.close()
