"""Exactly once across kill -9, Redis and broker restarts, and two consumers sharing players."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import consumer_support as S
import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from consumer_servers import DurableRedis, RestartableBroker

from engine import Params
from redis_layout import Keys
from runtime.kafka_produce import produce_waiting
from schemas import decode_rating_change

pytestmark = pytest.mark.integration  # starts servers of its own

CLAIM_IDLE_MS = "1000"


def _received_ids(bootstrap: str, topic: str) -> list[str]:
    return [decode_rating_change(m.value()).id for m in S.read_topic(bootstrap, topic)]


def test_kill_9_at_random_moments_loses_nothing_and_applies_nothing_twice(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    # Six kills at random points of progress, each of which can land anywhere in a batch's
    # read -> write -> relay -> commit cycle; that is what a kill breaks, and n only sets how
    # many batches (1,000 events each) lie between two kills. 30,000 events over 3,000 players
    # keep players recurring across every restart (~20 kills each, as 100,000 over 10,000 did).
    n = 30_000
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    params = Params()
    events = S.events(n, players=3_000, arenas=200, seed=23)
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    cmd = S.consume_cmd(
        kafka_bootstrap, redis_url, ns, topic, unique_name("g"),
        "--group-instance-id", "c1", "--outbox-claim-idle-ms", CLAIM_IDLE_MS,
    )  # fmt: skip
    log = tmp_path / "consumer.log"
    rng = random.Random(5)
    proc = S.start_process(cmd, str(log))
    kills: list[int] = []
    # Kill at random points of progress, not of time: the run's speed must not decide how many.
    for target in sorted(rng.sample(range(n // 20, n - n // 20), 6)):
        applied = 0
        while applied < target and proc.poll() is None:
            time.sleep(0.01)
            applied = S.applied_offsets(client, keys, topic).get(0, 0)
        if applied >= n:
            break
        S.sigkill(proc)
        kills.append(applied)
        proc = S.start_process(cmd, str(log))
    assert len(kills) >= 5, f"the run ended before 5 kills: {kills}"
    assert len(set(kills)) >= 3, f"kills did not land at different moments: {kills}"
    S.wait_applied(client, keys, topic, {0: n}, 150, alive=lambda: proc.poll() is None)
    S.wait_outbox_empty(client, keys, 60)
    S.stop_gracefully(proc, log)

    book = S.replay(events, params, S.SNAPSHOT)
    S.assert_redis_equals_replay(client, keys, book, params, exact=True)
    received = _received_ids(kafka_bootstrap, f"{topic}-ratings")
    assert set(received) == S.change_ids(book.counted_ids)  # every id, and nothing else
    client.close()


SESSION_TIMEOUT_MS = 6000


@pytest.mark.parametrize(
    "broker_down_s",
    [
        pytest.param(2, id="broker-back-within-the-session-timeout"),
        pytest.param(12, id="broker-back-after-the-session-timeout"),
    ],
)
def test_redis_and_broker_restarts_mid_run_lose_nothing(
    tmp_path: Path, broker_down_s: float
) -> None:
    """Within the session timeout the member keeps its partition across the broker restart;
    after it, the member's session has expired, so its partition is revoked and it must rejoin
    the group and resume by itself."""
    n = 40_000
    redis_server = DurableRedis(tmp_path / "redis")
    broker = RestartableBroker(tmp_path / "kafka")
    log = tmp_path / "consumer.log"
    proc = None
    try:
        redis_server.start()
        broker.start()
        bootstrap = broker.bootstrap
        topic = "kill-events"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            f.result()
        keys = Keys("restarts")
        client = redis.Redis.from_url(redis_server.url)
        S.publish_snapshot(client, keys, S.SNAPSHOT)
        params = Params()
        events = S.events(n, players=4_000, arenas=100, seed=31)

        producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
             "message.timeout.ms": 300_000}
        )  # fmt: skip
        done = threading.Event()

        def publish() -> None:  # a steady game-server load through both restarts
            for i, (key, value) in enumerate(S.encoded(events)):
                produce_waiting(producer, topic, value, key)
                if i % 200 == 0:
                    producer.poll(0)
                    time.sleep(0.08)
            producer.flush(300)
            done.set()

        threading.Thread(target=publish, daemon=True).start()
        cmd = S.consume_cmd(
            bootstrap, redis_server.url, "restarts", topic, "g",
            "--group-instance-id", "c1", "--outbox-claim-idle-ms", CLAIM_IDLE_MS,
            "--session-timeout-ms", str(SESSION_TIMEOUT_MS),
        )  # fmt: skip
        proc = S.start_process(cmd, str(log))

        def applied() -> int:
            return S.applied_offsets(client, keys, topic).get(0, 0)

        S.wait_until(lambda: applied() >= n // 5, 120, "a fifth applied")
        redis_server.restart(down_s=2)
        before = applied()
        S.wait_until(lambda: applied() >= before + n // 5, 120, "progress after Redis restart")
        assert not done.is_set(), "the load ended before the broker restart"
        broker.restart(down_s=broker_down_s)
        assert done.wait(300), "the publisher did not finish"
        S.wait_applied(client, keys, topic, {0: n}, 150, alive=lambda: proc.poll() is None)
        S.wait_outbox_empty(client, keys, 60)
        S.stop_gracefully(proc, log)
        proc = None

        book = S.replay(events, params, S.SNAPSHOT)
        S.assert_redis_equals_replay(client, keys, book, params, exact=True)
        received = _received_ids(bootstrap, f"{topic}-ratings")
        assert set(received) == S.change_ids(book.counted_ids)
        logged = log.read_text()
        assert "redis unavailable, retrying" in logged  # the outage was seen and survived
        lines = [json.loads(line) for line in logged.splitlines() if line.startswith("{")]
        said = [line["msg"] for line in lines if line["logger"] == "adr.consumer"]
        if broker_down_s * 1000 > SESSION_TIMEOUT_MS:  # the path this case is for was taken
            assert said.count("partitions assigned") > 1, said
        # librdkafka retries every few tens of ms while the broker is down; unthrottled that
        # was ~40 lines a second (770 in the long outage), throttled it is a few per kind.
        kafka_noise = [line for line in lines if line["logger"] == "adr.consumer.kafka"]
        assert len(kafka_noise) <= 60, len(kafka_noise)
        client.close()
    finally:
        if proc is not None and proc.poll() is None:
            S.sigkill(proc)
        broker.stop()
        redis_server.stop()


def test_two_consumers_sharing_players_count_every_event_once(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, tmp_path: Path
) -> None:
    n = 30_000
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name, partitions=4)
    params = Params()
    # 300 players in 40 arenas over 4 partitions: every player plays in every partition.
    events = S.one_arena_per_pair(S.events(n, players=300, arenas=40, seed=41))
    S.produce(kafka_bootstrap, topic, S.encoded(events))
    group = unique_name("g")
    procs = []
    for i in (1, 2):
        cmd = S.consume_cmd(kafka_bootstrap, redis_url, ns, topic, group, "--batch-size", "200")
        procs.append(S.start_process(cmd, str(tmp_path / f"consumer{i}.log")))
    try:
        ends = S.end_offsets(kafka_bootstrap, topic, 4)
        S.wait_applied(client, keys, topic, ends, 300, alive=lambda: procs[0].poll() is None)
        S.wait_outbox_empty(client, keys, 60)
    finally:
        for i, proc in enumerate(procs, start=1):
            S.stop_gracefully(proc, tmp_path / f"consumer{i}.log")
    logs = "".join((tmp_path / f"consumer{i}.log").read_text() for i in (1, 2))
    assert '"partitions assigned"' in logs

    counted = set(S.replay(events, params, S.SNAPSHOT).counted_ids)
    want_n: dict[str, int] = {}
    for e in events:
        if e.id in counted:
            want_n[e.attacker] = want_n.get(e.attacker, 0) + 1
            want_n[e.victim] = want_n.get(e.victim, 0) + 1
    stored = S.redis_players(client, keys)
    assert {p: s.n for p, (s, _ver) in stored.items()} == want_n
    pop = client.hgetall(keys.pop)
    assert int(pop[b"count"]) == len(want_n)
    total = (int(pop[b"sigma_hi"]) << 32) + int(pop[b"sigma_lo"])
    from engine import sigma_units

    assert total == sum(sigma_units(s.sigma, params) for s, _ver in stored.values())
    received = _received_ids(kafka_bootstrap, f"{topic}-ratings")
    assert set(received) == S.change_ids(counted)
    assert len(received) == len(set(received))  # no crash, so no duplicate either
    client.close()
