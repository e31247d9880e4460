"""`adr calibrate` end to end on a real Redis and broker: one-shot runs, the tier-boundaries topic,
and two replicas running `--every` at once (one publish per interval)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
import redis
from _tierjob_support import (
    read_topic,
    write_random_players,
)
from confluent_kafka.admin import AdminClient, ConfigResource

from adr_cli.main import main
from engine import TIER_LABELS, Params
from redis_layout import Keys, decode_snapshot
from schemas import decode_tier_boundaries

PARAMS = Params()


@pytest.fixture
def ns(ns: str, redis_client: redis.Redis) -> str:
    """The namespace, holding 30 players who last played a minute ago."""
    write_random_players(
        redis_client, ns, PARAMS, 30, seed=12, last_ts=int(time.time() * 1000) - 60_000
    )
    return ns


def test_one_shot_publishes_to_redis_and_the_compacted_topic(
    capsys, redis_client: redis.Redis, redis_url: str, kafka_bootstrap: str, ns: str, unique_name
) -> None:  # type: ignore[no-untyped-def]
    topic = unique_name("tier-boundaries")
    argv = ["calibrate", "--redis-url", redis_url, "--bootstrap-servers", kafka_bootstrap]
    argv += ["--namespace", ns, "--topic", topic]

    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)

    version, stored = decode_snapshot(redis_client.hgetall(Keys.of(ns).snapshot)) or (0, None)
    assert summary["outcome"] == "published" and summary["version"] == version == 1
    assert stored is not None and summary["boundaries"] == list(stored.boundaries or ())
    (msg,) = read_topic(kafka_bootstrap, topic, 1)
    assert msg.key() == ns.encode()
    wire = decode_tier_boundaries(msg.value())
    assert (wire.version, wire.computed_at, wire.active_count) == (
        1,
        stored.taken_at,
        stored.active_count,
    )
    assert wire.mean_mu_active == stored.mean_mu_active and stored.active_count == 30
    assert wire.boundaries == list(stored.boundaries or ())
    assert wire.labels == list(TIER_LABELS) and wire.tier_shares == [1 / 15] * 15
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    config = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    entries = next(iter(config.values())).result(timeout=10)
    assert entries["cleanup.policy"].value == "compact"


def test_one_shot_while_another_replica_holds_the_lease_publishes_nothing(
    capsys, redis_client: redis.Redis, redis_url: str, kafka_bootstrap: str, ns: str, unique_name
) -> None:  # type: ignore[no-untyped-def]
    redis_client.set(Keys.of(ns).lease, "someone-else", px=30_000)
    argv = ["calibrate", "--redis-url", redis_url, "--bootstrap-servers", kafka_bootstrap]
    argv += ["--namespace", ns, "--topic", unique_name("tb")]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "not_holder"
    assert redis_client.exists(Keys.of(ns).snapshot) == 0


def test_bad_usage_exits_2(capsys, redis_url: str) -> None:  # type: ignore[no-untyped-def]
    assert main(["calibrate", "--redis-url", redis_url, "--every", "0"]) == 2
    assert main(["calibrate", "--redis-url", redis_url, "--param", "beta=2"]) == 2
    assert "beta" in capsys.readouterr().err


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _metric(port: int, name: str) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return None


def test_two_replicas_publish_once_per_interval(
    redis_client: redis.Redis, redis_url: str, kafka_bootstrap: str, ns: str, unique_name
) -> None:  # type: ignore[no-untyped-def]
    topic = unique_name("tb")
    every = 1.0
    ports = [_free_port(), _free_port()]
    procs = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "adr_cli", "calibrate", "--redis-url", redis_url),
                *("--bootstrap-servers", kafka_bootstrap, "--namespace", ns, "--topic", topic),
                *("--every", str(every), "--metrics-port", str(port), "--holder-id", f"r{i}"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ | {"PYTHONUNBUFFERED": "1"},
        )
        for i, port in enumerate(ports)
    ]
    try:
        deadline = time.monotonic() + 30
        while redis_client.hget(Keys.of(ns).snapshot, "version") is None:
            assert time.monotonic() < deadline, "no replica published"
            time.sleep(0.05)
        started = time.monotonic()
        time.sleep(4.5)
        held = [_metric(port, "adr_calibration_lease_held") for port in ports]
        elapsed = time.monotonic() - started
        for port in ports:  # both loops go round, the standby included: both healthy, ready
            for probe, text in (("healthz", "ok"), ("readyz", "ready last_run_ok=1")):
                url = f"http://127.0.0.1:{port}/{probe}"
                with urllib.request.urlopen(url, timeout=5) as reply:
                    assert reply.status == 200 and reply.read().decode().strip() == text
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        logs = [proc.communicate(timeout=20)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    published = [
        [json.loads(line) for line in log.splitlines() if '"msg": "published"' in line]
        for log in logs
    ]
    # One replica published every interval; the other never did.
    assert sorted(len(p) > 0 for p in published) == [False, True]
    assert sorted(held) == [0.0, 1.0]
    versions = [entry["version"] for entry in published[0] + published[1]]
    total = len(versions)
    assert versions == list(range(1, total + 1))
    assert elapsed / every - 1 <= total - 1 <= elapsed / every + 1
    final = decode_snapshot(redis_client.hgetall(Keys.of(ns).snapshot))
    assert final is not None and final[0] == total
    messages = read_topic(kafka_bootstrap, topic, total)
    assert [decode_tier_boundaries(m.value()).version for m in messages] == versions


def test_a_broker_outage_still_publishes_to_redis_and_exits_1(
    capfd, caplog, redis_client: redis.Redis, redis_url: str, ns: str
) -> None:  # type: ignore[no-untyped-def]
    argv = ["calibrate", "--redis-url", redis_url, "--bootstrap-servers", "127.0.0.1:1"]
    argv += ["--namespace", ns, "--kafka-timeout", "1.5"]
    assert main(argv) == 1
    out, err = capfd.readouterr()
    summary = json.loads(out)
    assert summary["outcome"] == "published" and summary["topic_error"]
    assert decode_snapshot(redis_client.hgetall(Keys.of(ns).snapshot)) is not None
    # librdkafka's own lines about the refused connection go through the job's JSON logger
    # (throttled), not raw to the process's stderr as "%3|<time>|FAIL|...".
    assert not [line for line in err.splitlines() if line.startswith("%")]
    assert any(r.name == "adr.tierjob.kafka" for r in caplog.records)


def test_a_namespace_being_rebuilt_is_refused_until_the_switch(
    capsys, redis_client: redis.Redis, redis_url: str, kafka_bootstrap: str, ns: str, unique_name
) -> None:  # type: ignore[no-untyped-def]
    """`adr rebuild` writes a namespace behind `{ns}:layout` = "rebuilding": a tier job started
    meanwhile must not publish a snapshot of the partial pool (the readers' check, exit 5)."""
    keys = Keys.of(ns)
    redis_client.set(keys.layout, "rebuilding")
    topic = unique_name("tb")
    argv = ["calibrate", "--redis-url", redis_url, "--bootstrap-servers", kafka_bootstrap]
    argv += ["--namespace", ns, "--topic", topic]
    assert main(argv) == 5
    captured = capsys.readouterr()
    assert captured.out == ""
    assert redis_client.exists(keys.snapshot, keys.lease) == 0  # nothing read, nothing written

    # `--every`: each run is refused and counted, the loop goes on; after the switch it publishes
    port = _free_port()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "adr_cli", "calibrate", "--redis-url", redis_url),
            *("--bootstrap-servers", kafka_bootstrap, "--namespace", ns, "--topic", topic),
            *("--every", "0.5", "--metrics-port", str(port)),
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                refused = _metric(port, 'adr_errors_swallowed_total{where="layout"}')
            except OSError:
                refused = None
            if refused is not None and refused >= 2:
                break
            assert time.monotonic() < deadline and proc.poll() is None, "no refused run"
            time.sleep(0.1)
        assert redis_client.exists(keys.snapshot, keys.lease) == 0
        redis_client.set(keys.layout, "2")  # the rebuild's switch
        while redis_client.hget(keys.snapshot, "version") is None:
            assert time.monotonic() < deadline + 30, "nothing published after the switch"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, log = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert "unknown layout" in log


def test_a_rebuild_claiming_the_namespace_while_the_lease_is_taken_is_seen(
    redis_client: redis.Redis, ns: str
) -> None:  # type: ignore[no-untyped-def]
    """The race: the first check passes, a rebuild claims the namespace before the lease is
    taken; the check holding the lease refuses, publishes nothing and gives the lease back."""
    from redis_layout.layout import UnknownLayout
    from tierjob import Calibrator, Config

    keys = Keys.of(ns)
    calibrator = Calibrator(redis_client, Config(namespace=ns, params=PARAMS))
    take = calibrator.lease.hold

    def rebuild_claims_first() -> bool:
        redis_client.set(keys.layout, "rebuilding", nx=True)
        return take()

    calibrator.lease.hold = rebuild_claims_first  # type: ignore[method-assign]
    with pytest.raises(UnknownLayout):
        calibrator.run_once()
    assert redis_client.exists(keys.snapshot, keys.lease) == 0
