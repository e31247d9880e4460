"""Start time and memory of the local Kafka broker (and redis-server), as the tests get them.

    python bench/stack_broker.py [--runs 5] [--messages 200000]
    ADR_KAFKA_CDS=off python bench/stack_broker.py     # the same without the CDS archive

Per run: a fresh LocalStack, time to a broker answering metadata (including formatting KRaft
storage), resident memory a few seconds after start, and after a produce/consume burst; then
the time a controlled shutdown takes. Prints one line per run and the medians.
"""

from __future__ import annotations

import argparse
import statistics
import time

from confluent_kafka import Consumer, Producer

from runtime.kafka_produce import produce_waiting
from stack import LocalStack, TopicAdmin
from stack._procs import pid_rss_bytes

MIB = 2**20


def _burst(bootstrap: str, messages: int) -> float:
    """Produce and consume ``messages`` 200-byte records; return the seconds it took."""
    topic = TopicAdmin(bootstrap).create(f"bench-{time.time_ns()}", partitions=4)
    started = time.perf_counter()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(messages):
        produce_waiting(producer, topic, b"x" * 200, str(i % 64).encode())
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush(60)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe([topic])
    seen = 0
    while seen < messages:
        batch = consumer.consume(10_000, 1.0)
        seen += sum(1 for m in batch if m.error() is None)
    consumer.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--settle", type=float, default=3.0, help="seconds before measuring RSS")
    args = parser.parse_args()
    starts, idle, busy, stops = [], [], [], []
    for run in range(1, args.runs + 1):
        stack = LocalStack()
        try:
            t0 = time.perf_counter()
            bootstrap = stack.kafka_bootstrap()
            start_s = time.perf_counter() - t0
            time.sleep(args.settle)
            pid = stack.kafka.pid
            assert pid is not None
            idle_mib = (pid_rss_bytes(pid) or 0) / MIB
            burst_s = _burst(bootstrap, args.messages)
            busy_mib = (pid_rss_bytes(pid) or 0) / MIB
        finally:
            t1 = time.perf_counter()
            stack.stop()
            stop_s = time.perf_counter() - t1
        starts.append(start_s)
        idle.append(idle_mib)
        busy.append(busy_mib)
        stops.append(stop_s)
        print(f"run {run}: start {start_s:.2f} s, rss idle {idle_mib:.0f} MiB, "
              f"rss after {args.messages} msgs ({burst_s:.1f} s) {busy_mib:.0f} MiB, "
              f"stop {stop_s:.2f} s", flush=True)  # fmt: skip
    med = statistics.median
    print(
        f"median of {args.runs}: start {med(starts):.2f} s, rss idle {med(idle):.0f} MiB, "
        f"rss busy {med(busy):.0f} MiB, stop {med(stops):.2f} s; max rss {max(busy):.0f} MiB"
    )


if __name__ == "__main__":
    main()
