"""The Kafka clients' log lines: repeats of one kind are throttled, nothing else is."""

from __future__ import annotations

import logging

import pytest

from runtime.logs import REPEAT_INTERVAL_S, RepeatThrottle, kafka_logger


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _librdkafka_line(level: int, fac: str, client: str, text: str) -> logging.LogRecord:
    """A record as confluent-kafka's log callback makes it: `"%s [%s] %s", fac, name, buf`."""
    return logging.LogRecord(
        "adr.consumer.kafka", level, __file__, 0, "%s [%s] %s", (fac, client, text), None
    )


def _error_report(code: str) -> logging.LogRecord:
    record = logging.LogRecord(
        "adr.consumer.kafka",
        logging.WARNING,
        __file__,
        0,
        "kafka client error (retrying)",
        (),
        None,
    )
    record.code = code
    return record


def test_repeats_pass_once_per_interval_and_say_how_many_were_held() -> None:
    clock = _Clock()
    throttle = RepeatThrottle(10.0, clock)
    refused = [
        _librdkafka_line(logging.ERROR, "FAIL", "rdkafka#consumer-1", f"refused (after {i}ms)")
        for i in range(6)
    ]
    assert throttle.filter(refused[0])
    assert not hasattr(refused[0], "repeated")
    clock.now += 0.25
    assert not throttle.filter(refused[1])
    clock.now += 9.5
    assert not throttle.filter(refused[2])
    assert not throttle.filter(refused[3])
    clock.now += 0.25  # 10 s after the first line that passed
    assert throttle.filter(refused[4])
    assert refused[4].repeated == 3  # type: ignore[attr-defined]
    clock.now += 10.0
    assert throttle.filter(refused[5])
    assert not hasattr(refused[5], "repeated")  # nothing held since the last one


def test_kinds_are_throttled_apart() -> None:
    throttle = RepeatThrottle(10.0, _Clock())
    lines = [
        _librdkafka_line(logging.ERROR, "FAIL", "rdkafka#consumer-1", "refused"),
        _librdkafka_line(logging.ERROR, "FAIL", "rdkafka#producer-2", "refused"),
        _librdkafka_line(logging.WARNING, "FAIL", "rdkafka#consumer-1", "refused"),
        _librdkafka_line(logging.ERROR, "REQTMOUT", "rdkafka#consumer-1", "timed out"),
        _error_report("_TRANSPORT"),
        _error_report("_ALL_BROKERS_DOWN"),
        _error_report("_FATAL"),
    ]
    assert all(throttle.filter(line) for line in lines)
    assert not any(throttle.filter(line) for line in lines)


def test_debug_lines_are_never_throttled() -> None:
    throttle = RepeatThrottle(10.0, _Clock())
    lines = [_librdkafka_line(logging.DEBUG, "CGRPSTATE", "rdkafka#consumer-1", "up")] * 50
    assert all(throttle.filter(line) for line in lines)


@pytest.mark.parametrize("name", ["adr.consumer.kafka", "adr.simulate.kafka", "adr.tierjob.kafka"])
def test_the_kafka_loggers_throttle_an_outage_worth_of_lines(
    caplog: pytest.LogCaptureFixture, name: str
) -> None:
    """200 identical failures in a burst (5 s of librdkafka reconnecting) leave one line."""
    # Each module attaches the throttle to its Kafka logger when imported.
    import loadgen.cli  # noqa: F401
    import tierjob._publish  # noqa: F401

    logger = logging.getLogger(name)
    assert kafka_logger(name) is logger  # asking again attaches no second throttle
    assert sum(isinstance(f, RepeatThrottle) for f in logger.filters) == 1
    assert REPEAT_INTERVAL_S >= 5
    caplog.set_level(logging.INFO)
    for i in range(200):
        logger.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#test-1", f"refused ({i}ms)")
    kept = [r for r in caplog.records if r.name == name]
    assert len(kept) == 1
