"""README, "Using Kafka and Redis you already run": every `adr` subcommand that talks to a server
reads it from KAFKA_BOOTSTRAP_SERVERS / REDIS_URL, a flag (`--bootstrap-servers`,
`--redis-url`) wins, and the services' config file lies under the environment.

The audit is AUDIT: each subcommand and the servers it needs. The short commands run for real
against the session's broker and redis-server with the servers in the environment only (and
again with the environment naming a dead port and the flags the real ones: the flag wins); the
long-running ones (a consumer, a server) are checked through the function their `run` reads its
config with; `adr rebuild` runs end to end in a process whose environment alone names the
servers, as a reader of docs/operations.md runs it."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from adr_cli.main import SUBCOMMANDS, build_parser, main
from redis_layout import Keys
from schemas import encode_kill_event, kill_event

KAFKA, REDIS = "KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL"
AUDIT: dict[str, tuple[str, ...]] = {
    "replay": (),  # a file of events, the engine offline
    "evaluate": (),  # files and the engine offline
    "stack": (),  # starts the servers, prints their addresses
    "demo": (KAFKA, REDIS),  # env (no flags), else a local stack of its own: test below
    "rebuild": (KAFKA, REDIS),
    "consume": (KAFKA, REDIS),
    "calibrate": (KAFKA, REDIS),
    "history": (KAFKA, REDIS),
    "simulate": (KAFKA,),  # --no-kafka --out FILE: none
    "check": (KAFKA,),  # --topic only; files and hex lines need none
    "topics": (KAFKA,),
    "serve": (REDIS,),
    "leaderboard": (REDIS,),
    "season": (REDIS,),
    "meta": (REDIS,),
}
"""Every subcommand and the servers it needs (a new subcommand fails the first test until it is
audited here)."""
DEAD_KAFKA, DEAD_REDIS = "127.0.0.1:1", "redis://127.0.0.1:1/0"
"""What the environment names where a flag must win: nothing listens on port 1."""


def test_every_subcommand_is_audited() -> None:
    assert set(AUDIT) == set(SUBCOMMANDS)
    needing = {name for name, servers in AUDIT.items() if servers}
    assert needing == {*RUNS, *CONFIGS, "rebuild", "demo"}  # rebuild: run end to end below


# --- the long-running commands: the config their run reads, by its own function -------------


def _parsed(command: str, *flags: str) -> argparse.Namespace:
    argv = [command, *flags]
    return build_parser(argv).parse_args(argv)


def _consume(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, str]:
    from consumer.config import from_args

    config = from_args(args, env)
    return {KAFKA: config.bootstrap_servers, REDIS: config.redis_url}


def _calibrate(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, str]:
    from tierjob.config import from_args

    config = from_args(args, env)
    return {KAFKA: config.bootstrap_servers, REDIS: config.redis_url}


def _history(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, str]:
    from serve.history_cli import config_from_args

    config = config_from_args(args, env)
    return {KAFKA: config.bootstrap_servers, REDIS: config.redis_url}


def _serve(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, str]:
    from serve._config import config_from_args

    return {REDIS: config_from_args(args, env).redis_url}


def _rebuild(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, str]:
    from adr_cli.rebuild import _SHARED
    from consumer.config import shared_settings_from_args

    values = shared_settings_from_args(args, _SHARED, env)
    return {KAFKA: values["bootstrap_servers"], REDIS: values["redis_url"]}


CONFIGS: dict[str, Callable[[argparse.Namespace, Mapping[str, str]], dict[str, str]]] = {
    "consume": _consume,
    "calibrate": _calibrate,
    "history": _history,
    "serve": _serve,
}
"""The commands that run until stopped, and the function each one's `run` reads its config with
(`adr rebuild`'s is checked too, beside its run end to end below)."""
FILE_KEYS = {KAFKA: "bootstrap_servers", REDIS: "redis_url"}
FLAGS = {KAFKA: "--bootstrap-servers", REDIS: "--redis-url"}


@pytest.mark.parametrize("command", [*CONFIGS, "rebuild"])
def test_a_service_reads_the_servers_flag_over_env_over_its_config_file(
    command: str, tmp_path: Path
) -> None:
    read = CONFIGS.get(command, _rebuild)
    servers = AUDIT[command]
    file = tmp_path / "adr.toml"
    file.write_text("".join(f'{FILE_KEYS[s]} = "{_value(s, "file")}"\n' for s in servers))
    env_given = {s: _value(s, "env") for s in servers}
    base = {"ADR_CONFIG_FILE": str(file)}

    assert read(_parsed(command), {**base, **env_given}) == env_given
    assert read(_parsed(command), base) == {s: _value(s, "file") for s in servers}
    flags = [item for s in servers for item in (FLAGS[s], _value(s, "flag"))]
    assert read(_parsed(command, *flags), {**base, **env_given}) == {
        s: _value(s, "flag") for s in servers
    }
    file_env = {f"{REDIS}_FILE": str(_secret(tmp_path))} if REDIS in servers else {}
    if file_env:  # the secret's file form, as a pod mounts it
        assert read(_parsed(command), {**base, **file_env})[REDIS] == "redis://secret:6/0"


def _value(server: str, source: str) -> str:
    return f"{source}:9092" if server == KAFKA else f"redis://{source}:6379/0"


def _secret(tmp_path: Path) -> Path:
    path = tmp_path / "redis-url"
    path.write_text("redis://secret:6/0\n")
    return path


def test_the_demo_takes_the_servers_the_environment_names_else_starts_its_own(
    tmp_path: Path,
) -> None:
    """`adr demo` has no server flags: KAFKA_BOOTSTRAP_SERVERS and REDIS_URL, or their _FILE
    forms as every other command reads them; "" (a local stack of its own) for one unset. Not
    run here: the whole pipeline is tests/stack/test_stack_demo.py's (with the variables unset,
    on a stack the demo starts)."""
    from runtime import RuntimeConfigError
    from stack.demo import servers_from_env

    given = {KAFKA: "envhost:9092", REDIS: "redis://envhost:6379/0"}
    assert servers_from_env(given) == (given[KAFKA], given[REDIS])
    assert servers_from_env({}) == ("", "")
    kafka_file, redis_file = tmp_path / "bootstrap", _secret(tmp_path)
    kafka_file.write_text("filehost:9092\n")
    files = {f"{KAFKA}_FILE": str(kafka_file), f"{REDIS}_FILE": str(redis_file)}
    assert servers_from_env(files) == ("filehost:9092", "redis://secret:6/0")
    with pytest.raises(RuntimeConfigError, match="keep one"):
        servers_from_env({**given, **files})


# --- the short commands, run for real against the session's servers ---------------------------


@pytest.fixture
def servers(kafka_bootstrap: str, redis_url: str) -> dict[str, str]:
    return {KAFKA: kafka_bootstrap, REDIS: redis_url}


@pytest.fixture
def env_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Mapping[str, str]], None]]:
    """Sets the server variables (and clears every ADR_* a developer's shell may hold)."""
    for name in [n for n in os.environ if n.startswith("ADR_") and n != "ADR_CACHE_DIR"]:
        if name not in ("ADR_COMPILED", "ADR_STACK_BACKEND"):
            monkeypatch.delenv(name)
    monkeypatch.delenv(f"{REDIS}_FILE", raising=False)

    def set_env(values: Mapping[str, str]) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    yield set_env


def _adr(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _leaderboard(ctx: _Ctx, flags: list[str]) -> None:
    keys = Keys.of(ctx.name("lb"))
    ctx.redis.hset(keys.player("p1"), mapping={"mu": "1234.5", "tier": "1H"})
    ctx.redis.zadd(keys.lb, {"p1": 1234.5})
    code, out, err = _adr(ctx.capsys, "leaderboard", *flags, "--namespace", keys.namespace,
                          "--json", "top", "1")  # fmt: skip
    assert code == 0, err
    assert [row["player"] for row in json.loads(out)] == ["p1"]


def _meta(ctx: _Ctx, flags: list[str]) -> None:
    ns = ctx.name("meta")
    code, _, err = _adr(ctx.capsys, "meta", *flags, "--namespace", ns, "set", "p1",
                        '{"display_name": "P"}')  # fmt: skip
    assert code == 0, err
    assert ctx.redis.hexists(Keys.of(ns).meta, "p1"), "nothing written to the env's Redis"


def _season(ctx: _Ctx, flags: list[str]) -> None:
    keys = Keys.of(ctx.name("season"))
    ctx.redis.hset(keys.current_season, mapping={"id": "s-env", "started_at": 5})
    code, out, err = _adr(ctx.capsys, "season", *flags, "--namespace", keys.namespace, "list")
    assert code == 0, err
    assert json.loads(out)["current"]["id"] == "s-env"


def _topics(ctx: _Ctx, flags: list[str]) -> None:
    names = [ctx.name(role) for role in ("kill", "rating", "tier", "dlq")]
    code, _, err = _adr(ctx.capsys, "topics", "create", *flags, "--partitions", "1",
                        "--replication-factor", "1", "--kill-topic", names[0],
                        "--rating-topic", names[1], "--tier-topic", names[2],
                        "--dlq-topic", names[3])  # fmt: skip
    assert code == 0, err
    admin = AdminClient({"bootstrap.servers": ctx.servers[KAFKA]})
    assert set(names) <= set(admin.list_topics(timeout=30).topics)


def _check(ctx: _Ctx, flags: list[str]) -> None:
    topic = ctx.kafka_admin.create(ctx.name("kill-events"), partitions=1)
    event = kill_event(id="e1", arena="a1", attacker="p1", victim="p2", ts=1_000_000)
    producer = Producer({"bootstrap.servers": ctx.servers[KAFKA]})
    producer.produce(topic, encode_kill_event(event), key=b"a1")
    assert producer.flush(30) == 0
    code, out, err = _adr(ctx.capsys, "check", *flags, "--topic", topic, "--count", "1",
                          "--now-ms", "1000000", "--timeout-s", "30")  # fmt: skip
    assert code == 0, err
    assert len(out.splitlines()) == 1 and "e1" in out, out


def _simulate(ctx: _Ctx, flags: list[str]) -> None:
    topic = ctx.name("kill-events")
    code, _, err = _adr(ctx.capsys, "simulate", *flags, "--topic", topic, "--events", "20",
                        "--rate", "0", "--partitions", "1")  # fmt: skip
    assert code == 0, err
    reader = Consumer({"bootstrap.servers": ctx.servers[KAFKA], "group.id": ctx.name("g")})
    try:
        low, high = reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    finally:
        reader.close()
    assert high - low >= 20  # published: some events are sent twice (duplicates)


class _Ctx:
    def __init__(self, request: pytest.FixtureRequest, servers: dict[str, str]) -> None:
        self.capsys: pytest.CaptureFixture[str] = request.getfixturevalue("capsys")
        self.name: Callable[[str], str] = request.getfixturevalue("unique_name")
        self.servers = servers
        self._request = request
        self._redis: redis.Redis | None = None

    @property
    def redis(self) -> redis.Redis:
        if self._redis is None:
            self._redis = self._request.getfixturevalue("redis_client")
        return self._redis

    @property
    def kafka_admin(self) -> Any:
        return self._request.getfixturevalue("kafka_admin")


RUNS: dict[str, Callable[[_Ctx, list[str]], None]] = {
    "leaderboard": _leaderboard,
    "meta": _meta,
    "season": _season,
    "topics": _topics,
    "check": _check,
    "simulate": _simulate,
}
"""The short commands, each run and its effect seen on the session's servers."""


@pytest.mark.parametrize("command", sorted(RUNS))
def test_a_short_command_reaches_the_servers_its_environment_names(
    command: str, request: pytest.FixtureRequest, servers: dict[str, str], env_only
) -> None:
    ctx = _Ctx(request, servers)
    needs = AUDIT[command]
    env_only({s: servers[s] for s in needs})
    RUNS[command](ctx, [])  # the environment only
    env_only({KAFKA: DEAD_KAFKA, REDIS: DEAD_REDIS})
    RUNS[command](ctx, [item for s in needs for item in (FLAGS[s], servers[s])])  # flags win


def test_rebuild_runs_with_the_servers_and_pool_from_the_environment_only(
    servers: dict[str, str], kafka_admin, unique_name, tmp_path: Path
) -> None:
    """docs/operations.md's `adr rebuild` as written: the consumer's environment names the
    servers, the namespace, topic and group; no flag. Then the flags win over a dead one."""
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    producer = Producer({"bootstrap.servers": servers[KAFKA]})
    for i in range(6):
        event = kill_event(id=f"e{i}", arena="a1", attacker=f"p{i % 3}", victim=f"p{(i + 1) % 3}",
                           ts=1_000_000 + i * 60_000)  # fmt: skip
        producer.produce(topic, encode_kill_event(event), key=b"a1")
    assert producer.flush(30) == 0
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ADR_", KAFKA, REDIS))}
    clean |= {k: os.environ[k] for k in ("ADR_COMPILED",) if k in os.environ}
    client = redis.Redis.from_url(servers[REDIS])

    def rebuild(env: dict[str, str], *flags: str) -> dict[str, Any]:
        ns, group = unique_name("ns"), unique_name("g")
        env = {**clean, **env, "ADR_NAMESPACE": ns, "ADR_TOPIC": topic, "ADR_GROUP": group}
        done = subprocess.run([sys.executable, "-m", "adr_cli.main", "rebuild", *flags],
                              env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        rebuilt = [json.loads(line) for line in done.stderr.splitlines() if '"rebuilt"' in line]
        assert rebuilt and rebuilt[-1]["namespace"] == ns, done.stderr[-3000:]
        assert client.get(Keys(ns).layout) == b"2"  # switched on in the environment's Redis
        assert client.exists(Keys(ns).player("p0"))
        return rebuilt[-1]

    assert rebuild(dict(servers))["offsets"] == {"0": 6}
    dead = {KAFKA: DEAD_KAFKA, REDIS: DEAD_REDIS}
    flags = ("--bootstrap-servers", servers[KAFKA], "--redis-url", servers[REDIS])
    assert rebuild(dead, *flags)["offsets"] == {"0": 6}
    client.close()
