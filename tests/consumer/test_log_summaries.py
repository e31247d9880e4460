"""What the consumer logs about the events it does not rate: one summary line per reason, not
one per event, with counts and a sample id, never the payload (consumer/_log_summary.py).

Before: 5 log lines in 4 minutes with 1 dead letter and 1,377 late events, none about either."""

from __future__ import annotations

import time

import consumer_support as S

from engine import Params
from schemas import encode_kill_event, kill_event

HOUR_MS = 3_600_000
MARKER = b"PAYLOAD-BYTES-7731"
"""In every undecodable message: no log line may carry it."""


def test_dead_letters_and_late_events_are_summarized_per_reason_with_a_sample_id(
    kafka_bootstrap: str, redis_url: str, kafka_admin, unique_name, consumer_config
) -> None:
    topic, ns, keys, client = S.pool_on_topic(kafka_admin, redis_url, unique_name)
    now = time.time_ns() // 1_000_000
    good = S.events(600, players=100, arenas=5, seed=91, start_ms=now - 5 * 60_000)
    # 40 events three hours behind the partition's newest: late (lateness 1 h), not rated
    late = [
        kill_event(id=f"late-{i}", arena="arena-0", attacker="p1", victim="p2",
                   ts=now - 3 * HOUR_MS + i)
        for i in range(40)
    ]  # fmt: skip
    # 25 messages that do not decode, and 5 that come from the future (ts_out_of_range)
    stream = [(e.arena.encode(), encode_kill_event(e)) for e in good]
    stream += [(b"arena-0", b"\xc1" + MARKER + str(i).encode()) for i in range(25)]
    future = [
        kill_event(id=f"future-{i}", arena="arena-1", attacker="p3", victim="p4",
                   ts=now + HOUR_MS)
        for i in range(5)
    ]  # fmt: skip
    # an id counted before, reused for another kill: refused while rating (id_reused)
    reused = kill_event(id=good[5].id, arena="arena-2", attacker="p7", victim="p8", ts=now)
    stream += [(e.arena.encode(), encode_kill_event(e)) for e in (*late, *future, reused)]
    S.produce(kafka_bootstrap, topic, stream)

    config = consumer_config(redis_url, ns, topic, batch_size=50)
    with S.capture_logs() as lines:
        consumer = S.start_threaded(config, Params())
        try:
            S.wait_applied(client, keys, topic, {0: len(stream)}, 120, consumer.thread.is_alive)
            metrics = consumer.pipeline.metrics
            sample = metrics.registry.get_sample_value
            assert sample("adr_events_late_total") == 40
            assert sample("adr_events_dead_lettered_total", {"reason": "undecodable"}) == 25
            assert sample("adr_events_dead_lettered_total", {"reason": "ts_out_of_range"}) == 5
            assert sample("adr_events_dead_lettered_total", {"reason": "id_reused"}) == 1
        finally:
            consumer.stop()
    client.close()

    undecodable = lines.about("events dead-lettered", reason="undecodable")
    assert 1 <= len(undecodable) <= 2  # the first at once; the rest at most one per 30 s
    assert sum(r.count for r in undecodable) == 25 == undecodable[-1].total  # all, at the stop
    assert undecodable[0].sample == f"{topic}/0@600"  # where: it has no event id
    out_of_range = lines.about("events dead-lettered", reason="ts_out_of_range")
    # refused by the decoder: located by partition@offset like an undecodable message (the
    # dead letter's source_offset header finds it); refused after decoding: by its event id
    assert out_of_range and out_of_range[0].sample == f"{topic}/0@{600 + 25 + 40}"
    reused_lines = lines.about("events dead-lettered", reason="id_reused")
    assert [(r.count, r.sample) for r in reused_lines] == [(1, good[5].id)]  # the event id
    late_lines = lines.about("late events counted, not rated")
    assert late_lines and late_lines[0].sample.startswith("late-")
    assert len(late_lines) <= 2
    for r in lines.records:  # never the payload
        assert MARKER.decode() not in r.getMessage() + repr(r.__dict__)
    # no line per event
    assert len(lines.records) < 40, [r.getMessage() for r in lines.records]
