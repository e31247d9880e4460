"""Redis refusing commands (OOM, READONLY, MASTERDOWN, BUSY, a key of the wrong type) is retried
with backoff and a log line naming the refusal, like a lost connection; the write script never
leaves a partial write behind; once the cause is gone the state equals the replay.

Each test owns its redis-server: they change its maxmemory, replication role and keys.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import consumer_support as S
import pytest
import redis
from consumer_servers import DurableRedis
from redis._parsers.base import BaseParser

from consumer._retry import REFUSALS, refusal, retriable
from engine import TIER_LABELS, Params
from redis_layout import Keys
from schemas import decode_rating_change
from stack import free_port

PARAMS = Params()


@pytest.mark.parametrize("code", sorted(REFUSALS))
def test_each_refusal_code_is_recognised_as_redis_parses_it(code: str) -> None:
    exc = BaseParser.parse_error(f"{code} something went wrong")
    assert refusal(exc) == code
    assert retriable(exc)


@pytest.mark.parametrize(
    "reply", ["ERR wrong number of arguments", "BUSYGROUP Consumer Group name already exists"]
)
def test_other_errors_are_not_retried(reply: str) -> None:
    exc = BaseParser.parse_error(reply)
    assert refusal(exc) is None
    assert not retriable(exc)


RETRIED = "redis refused the command, retrying"


def _said(log: Path) -> list[dict]:
    lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
    return [json.loads(line) for line in lines]


def _refused(log: Path, code: str) -> list[dict]:
    return [
        line
        for line in _said(log)
        if line.get("code") == code
        and line["msg"] in (RETRIED, "redis failed under a write, redoing its batch")
    ]


def _data_keys(client: redis.Redis, ns: str, keys: Keys) -> dict[bytes, bytes]:
    """Every key of the pool but the outbox (the relay creates its stream and group before any
    write), the snapshot, the layout version (stamped at assignment) and the pool's model
    (stamped at start), with its type."""
    skip = {k.encode() for k in (keys.outbox, keys.snapshot, keys.layout, keys.model)}
    return {k: client.type(k) for k in client.scan_iter(match=keys.match_all) if k not in skip}


@pytest.fixture
def own_redis(tmp_path: Path):
    server = DurableRedis(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


def test_oom_readonly_masterdown_and_busy_are_retried_and_nothing_is_lost(
    own_redis, kafka_bootstrap: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    server = own_redis
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, server.url, unique_name)
    events = S.events(4_000, players=300, arenas=20, seed=57)
    chunks = [events[i : i + 1_000] for i in range(0, len(events), 1_000)]
    log = tmp_path / "consumer.log"
    cmd = S.consume_cmd(
        kafka_bootstrap, server.url, ns, topic, unique_name("g"), "--batch-size", "200"
    )
    proc = S.start_process(cmd, str(log))
    alive = lambda: proc.poll() is None  # noqa: E731
    busy: threading.Thread | None = None

    def spin() -> None:  # a slow script: Redis answers BUSY to everyone else meanwhile
        other = redis.Redis.from_url(server.url)
        other.eval(
            "local stop = tonumber(redis.call('TIME')[1]) + 4 "
            "while tonumber(redis.call('TIME')[1]) < stop do end return 1",
            0,
        )
        other.close()

    def start_busy() -> None:
        nonlocal busy
        client.config_set("busy-reply-threshold", 100)
        busy = threading.Thread(target=spin, daemon=True)
        busy.start()

    dead_primary = free_port()
    phases = [
        # (code, make Redis refuse, let it accept again)
        (
            "OOM",
            lambda: (
                client.config_set("maxmemory-policy", "noeviction")
                and client.config_set("maxmemory", 1)
            ),
            lambda: client.config_set("maxmemory", 0),
        ),
        (
            "READONLY",
            lambda: client.replicaof("127.0.0.1", dead_primary),
            lambda: client.replicaof("NO", "ONE"),
        ),
        (
            "MASTERDOWN",
            lambda: (
                client.config_set("replica-serve-stale-data", "no")
                and client.replicaof("127.0.0.1", dead_primary)
            ),
            lambda: client.replicaof("NO", "ONE"),
        ),
        ("BUSY", start_busy, lambda: busy is not None and busy.join(30)),
    ]
    end = 0
    try:
        for (code, refuse, accept), chunk in zip(phases, chunks, strict=True):
            refuse()
            S.produce(kafka_bootstrap, topic, S.encoded(chunk))
            S.wait_until(lambda code=code: bool(_refused(log, code)), 60, f"a {code} log line")
            assert alive(), log.read_text()[-3000:]
            if code not in ("MASTERDOWN", "BUSY"):  # which refuse reads too
                # Refused writes wrote nothing: the partition has not moved past the last write.
                assert S.applied_offsets(client, keys, topic).get(0, 0) <= end
            accept()
            end += len(chunk)
            S.wait_applied(client, keys, topic, {0: end}, 120, alive=alive)
        S.wait_outbox_empty(client, keys, 60)
    except BaseException:
        S.sigkill(proc)
        raise
    S.stop_gracefully(proc, log)
    book = S.assert_as_replayed(client, keys, events, PARAMS)
    received = [
        decode_rating_change(m.value()).id
        for m in S.read_topic(kafka_bootstrap, f"{topic}-ratings")
    ]
    assert set(received) == S.change_ids(book.counted_ids)
    said = _said(log)
    refused = [line for line in said if line["msg"] == "redis refused the command, retrying"]
    assert {line["code"] for line in refused} >= {"OOM", "READONLY", "MASTERDOWN", "BUSY"}
    assert all(line["meaning"] and "retry_in_s" in line for line in refused)
    client.close()


@pytest.mark.parametrize(
    ("what", "plant", "remove"),
    [
        # a key the script writes after the players' hashes: without the check before the first
        # write, the players would be written and the offsets not
        ("lb", lambda c, k: c.set(k.lb, "planted"), lambda c, k: c.delete(k.lb)),
        ("outbox", lambda c, k: c.set(k.outbox, "planted"), lambda c, k: c.delete(k.outbox)),
        (
            "tier_count_not_integer",
            lambda c, k: c.hset(k.tier_counts, mapping=dict.fromkeys(TIER_LABELS, "x")),
            lambda c, k: c.delete(k.tier_counts),
        ),
        # A player's key of another type is corrupt state, not a refusal: its events are
        # dead-lettered and the rest goes on (tests/consumer/test_corrupt_state.py).
    ],
)
def test_a_key_of_the_wrong_type_leaves_no_partial_write_and_is_retried_until_removed(
    own_redis, kafka_bootstrap: str, kafka_admin, unique_name, tmp_path: Path, what, plant, remove
) -> None:
    server = own_redis
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, server.url, unique_name)
    events = S.events(1_500, players=50, arenas=10, seed=61)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    plant(client, keys)
    before = _data_keys(client, ns, keys)
    log = tmp_path / "consumer.log"
    cmd = S.consume_cmd(kafka_bootstrap, server.url, ns, topic, unique_name("g"))
    proc = S.start_process(cmd, str(log))
    try:
        code = "BADVALUE" if what == "tier_count_not_integer" else "WRONGTYPE"
        S.wait_until(lambda: len(_refused(log, code)) >= 2, 60, f"{code} retried")
        assert proc.poll() is None, log.read_text()[-3000:]
        # Nothing of any batch was written: the keys are the ones planted before the run.
        assert _data_keys(client, ns, keys) == before
        assert client.type(keys.outbox) != b"stream" or client.xlen(keys.outbox) == 0
        remove(client, keys)
        alive = lambda: proc.poll() is None  # noqa: E731
        S.wait_applied(client, keys, topic, {0: len(events)}, 120, alive=alive)
        S.wait_outbox_empty(client, keys, 60)
    except BaseException:
        S.sigkill(proc)
        raise
    S.stop_gracefully(proc, log)
    S.assert_as_replayed(client, keys, events, PARAMS)
    client.close()
