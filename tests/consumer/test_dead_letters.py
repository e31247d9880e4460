"""Bad input goes to the dead-letter topic with its reason; the good events around it all apply."""

from __future__ import annotations

import time

import consumer_support as S
import msgspec

from engine import Params
from schemas import MAX_MESSAGE_BYTES, encode_kill_event, kill_event

_ENC = msgspec.msgpack.Encoder()

PARAMS = Params()


def _bad_messages(now: int) -> list[tuple[str, bytes]]:
    """(reason, bytes): one of each kind of malformed kill event the issue names, and more."""
    good = {"v": 1, "id": "x", "arena": "arena-0", "attacker": "p1", "victim": "p2", "ts": now}
    return [
        ("undecodable", b"\xc1\x00\xff not msgpack"),
        ("not_a_map", _ENC.encode([1, 2, 3])),
        ("missing_field", _ENC.encode({k: v for k, v in good.items() if k != "victim"})),
        ("wrong_type", _ENC.encode({**good, "ts": "yesterday"})),
        ("unknown_version", _ENC.encode({**good, "v": 2})),
        ("self_kill", _ENC.encode({**good, "victim": "p1"})),
        ("ts_out_of_range", _ENC.encode({**good, "ts": now - 8 * 86_400_000})),
        ("ts_out_of_range", _ENC.encode({**good, "ts": now + 10 * 60_000})),
        ("bad_id", _ENC.encode({**good, "attacker": ""})),
        ("too_large", _ENC.encode({**good, "extra": {"pad": "x" * MAX_MESSAGE_BYTES}})),
    ]


def test_malformed_events_are_dead_lettered_with_their_reason_and_the_rest_applies(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, consumer_config
) -> None:
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    now = time.time_ns() // 1_000_000
    good = S.events(3_000, players=200, arenas=10, seed=3)
    bad = _bad_messages(now)
    # Interleave: a bad message after every 300 good ones, a good one right before and after.
    stream: list[tuple[bytes, bytes]] = []
    reasons_in_order = []
    for i, event in enumerate(good):
        stream.append((event.arena.encode(), encode_kill_event(event)))
        if i % 300 == 150 and bad:
            reason, raw = bad.pop(0)
            stream.append((b"arena-0", raw))
            reasons_in_order.append((reason, raw))
    assert not bad
    S.produce(kafka_bootstrap, topic, stream)

    config = consumer_config(
        redis_url, ns, topic, metrics_host="127.0.0.1", metrics_port=0, batch_size=100
    )
    consumer = S.start_threaded(config, PARAMS, serve_metrics=True)
    try:
        S.wait_applied(client, keys, topic, {0: len(stream)}, 120, alive=consumer.thread.is_alive)
        S.wait_outbox_empty(client, keys, 30)
        base = f"http://127.0.0.1:{consumer.pipeline.http.server_address[1]}"
        status, ready = S.http_get(base + "/readyz")
        assert status == 200, ready
        assert S.http_get(base + "/healthz")[0] == 200
        lag = 'adr_consumer_lag{partition="0"} 0.0'
        S.wait_until(lambda: lag in S.http_get(base + "/metrics")[1], 15, "the lag gauge")
        status, text = S.http_get(base + "/metrics")
        assert status == 200
        assert S.http_get(base + "/nope")[0] == 404
    finally:
        consumer.stop()

    dead = S.read_topic(kafka_bootstrap, f"{topic}-dlq", expect=len(reasons_in_order))
    got = [(dict(m.headers())["reason"].decode(), m.value()) for m in dead]
    assert got == reasons_in_order  # original bytes, in order, each with its reason
    assert all(dict(m.headers())["source_topic"].decode() == topic for m in dead)

    book = S.replay(good, PARAMS, S.SNAPSHOT)
    S.assert_redis_equals_replay(client, keys, book, PARAMS, exact=True)

    for reason in {r for r, _ in reasons_in_order}:
        want = sum(1 for r, _ in reasons_in_order if r == reason)
        assert f'adr_events_dead_lettered_total{{reason="{reason}"}} {float(want)}' in text
    assert f"adr_events_consumed_total {float(len(stream))}" in text
    assert f"adr_events_counted_total {float(book.counted)}" in text
    assert f"adr_events_duplicate_total {float(book.duplicates)}" in text
    for name in (
        "adr_batch_size_bucket", "adr_batch_duration_seconds_bucket",
        "adr_event_to_commit_seconds_bucket", 'adr_consumer_lag{partition="0"}',
        "adr_redis_write_seconds_bucket", "adr_redis_conflict_retries_total",
        "adr_outbox_backlog", "adr_rebalances_total",
    ):  # fmt: skip
        assert name in text, name
    client.close()


def test_a_kill_event_that_decodes_is_not_dead_lettered() -> None:
    # The generator's events are valid by construction; guards the interleaving above.
    e = kill_event(id="e", arena="a", attacker="p1", victim="p2", ts=time.time_ns() // 10**6)
    from schemas import decode_kill_event

    assert decode_kill_event(encode_kill_event(e), e.ts) == e
