"""One classification of Kafka errors (consumer/_kafka_faults.py), the degraded paths it feeds
(consumer/_degraded.py) and the rate-limited summary lines (consumer/_log_summary.py).

The real broker's refusals are in test_kafka_refusals.py (ACLs, a deleted topic) and
test_dead_letters_undeliverable.py; here: every error code the clients can report maps to a
cause of the bounded set and an action, and the summaries bound their lines whatever comes."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException
from hypothesis import given
from hypothesis import strategies as st

from consumer._dead_letters import REASONS
from consumer._degraded import DEAD_LETTERS, KILL_EVENTS, RATING_CHANGES
from consumer._kafka_faults import CAUSES, Action, Cause, classify
from consumer._log_summary import LogSummary
from consumer._metrics import Metrics

ALL_CODES = sorted(
    {
        v
        for n in dir(KafkaError)
        if n.lstrip("_").isupper() and isinstance(v := getattr(KafkaError, n), int)
    }
)
"""Every error code the client library names."""


@pytest.mark.parametrize(
    ("code", "cause", "action"),
    [
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, Cause.NOT_AUTHORIZED, Action.WAIT),
        (KafkaError.GROUP_AUTHORIZATION_FAILED, Cause.NOT_AUTHORIZED, Action.WAIT),
        (KafkaError.CLUSTER_AUTHORIZATION_FAILED, Cause.NOT_AUTHORIZED, Action.WAIT),
        (KafkaError.SASL_AUTHENTICATION_FAILED, Cause.AUTHENTICATION, Action.WAIT),
        (KafkaError.UNKNOWN_TOPIC_OR_PART, Cause.TOPIC_MISSING, Action.WAIT),
        (KafkaError._UNKNOWN_TOPIC, Cause.TOPIC_MISSING, Action.WAIT),
        (KafkaError._UNKNOWN_PARTITION, Cause.TOPIC_MISSING, Action.WAIT),
        (KafkaError.MSG_SIZE_TOO_LARGE, Cause.TOO_LARGE, Action.SET_ASIDE),
        (KafkaError.RECORD_LIST_TOO_LARGE, Cause.TOO_LARGE, Action.SET_ASIDE),
        (KafkaError.INVALID_RECORD, Cause.INVALID_RECORD, Action.SET_ASIDE),
        (KafkaError._MSG_TIMED_OUT, Cause.TIMED_OUT, Action.WAIT),
        (KafkaError.REQUEST_TIMED_OUT, Cause.TIMED_OUT, Action.WAIT),
        (KafkaError._TRANSPORT, Cause.BROKER_UNAVAILABLE, Action.WAIT),
        (KafkaError._ALL_BROKERS_DOWN, Cause.BROKER_UNAVAILABLE, Action.WAIT),
        (KafkaError.NOT_LEADER_FOR_PARTITION, Cause.BROKER_UNAVAILABLE, Action.WAIT),
        (KafkaError.NOT_ENOUGH_REPLICAS, Cause.NOT_ENOUGH_REPLICAS, Action.WAIT),
        (KafkaError.THROTTLING_QUOTA_EXCEEDED, Cause.QUOTA, Action.WAIT),
        (KafkaError.PRODUCER_FENCED, Cause.FENCED, Action.RENEW),
        (KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, Cause.FENCED, Action.RENEW),
        (KafkaError.FENCED_INSTANCE_ID, Cause.FENCED, Action.RENEW),
        (KafkaError.UNSUPPORTED_VERSION, Cause.UNSUPPORTED, Action.EXIT),
        (KafkaError._UNSUPPORTED_FEATURE, Cause.UNSUPPORTED, Action.EXIT),
        (KafkaError.INVALID_REQUIRED_ACKS, Cause.UNSUPPORTED, Action.EXIT),
        (KafkaError.INVALID_SESSION_TIMEOUT, Cause.OTHER, Action.WAIT),
    ],
)
def test_each_error_has_its_cause_and_action(code: int, cause: Cause, action: Action) -> None:
    fault = classify(KafkaError(code))
    assert (fault.cause, fault.action) == (cause, action)
    assert fault.code == KafkaError(code).name()
    assert fault.retriable == (action is Action.WAIT)
    assert fault.fatal == (action in (Action.RENEW, Action.EXIT))
    assert classify(KafkaException(KafkaError(code))) == fault  # what produce()/consume() raise


@pytest.mark.parametrize("code", ALL_CODES)
def test_every_code_maps_into_the_bounded_label_set(code: int) -> None:
    fault = classify(KafkaError(code))
    assert fault.cause.value in CAUSES
    assert classify(KafkaError(code, fatal=True)).fatal  # librdkafka's fatal flag wins


def test_a_fatal_error_renews_the_client_unless_no_client_can_help() -> None:
    fenced = classify(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, fatal=True))
    assert fenced.action is Action.RENEW
    assert classify(KafkaError(KafkaError._FATAL)).action is Action.RENEW
    assert classify(KafkaError(KafkaError.UNSUPPORTED_VERSION, fatal=True)).action is Action.EXIT


def test_anything_else_waits_as_other() -> None:
    for err in (None, ValueError("x"), KafkaException()):
        fault = classify(err)
        assert (fault.cause, fault.action) == (Cause.OTHER, Action.WAIT)


def test_the_dead_letter_reasons_are_the_causes() -> None:
    assert REASONS == CAUSES


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _summary(interval_s: float = 30.0) -> tuple[LogSummary, _Records, _Clock]:
    logger = logging.getLogger(f"test.summary.{id(object())}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    records, clock = _Records(), _Clock()
    logger.addHandler(records)
    return LogSummary(logger, "summary", logging.WARNING, interval_s, clock), records, clock


def test_the_first_of_a_kind_is_written_at_once_then_one_line_per_interval() -> None:
    summary, records, clock = _summary(30.0)
    summary.add(1, "e-1", reason="undecodable")
    assert [(r.reason, r.count, r.total, r.sample) for r in records.records] == [
        ("undecodable", 1, 1, "e-1")
    ]
    for i in range(17_113):  # a deleted topic's burst: no line more
        clock.now = i / 1000
        summary.add(1, f"e-{i}", reason="undecodable")
        summary.flush()
    assert len(records.records) == 1
    clock.now = 30.0
    summary.flush()
    last = records.records[-1]
    assert (last.count, last.total, last.sample, last.window_s) == (17_113, 17_114, "e-17112", 30)
    summary.add(2, None, reason="id_reused")  # another kind: its own first line at once
    assert (records.records[-1].reason, records.records[-1].count) == ("id_reused", 2)
    clock.now = 120.0
    summary.flush()  # nothing new: nothing written
    assert len(records.records) == 3
    summary.add(4, "e-x", reason="id_reused")
    summary.flush(final=True)  # stopping: the remainder at once
    assert [(r.reason, r.count, r.total) for r in records.records[3:]] == [("id_reused", 4, 6)]


@given(
    st.lists(
        st.tuples(
            st.floats(0, 5, allow_nan=False),
            st.sampled_from(["a", "b", "c"]),
            st.integers(0, 50),
        ),
        max_size=200,
    )
)
def test_summaries_count_every_event_once_within_a_bounded_number_of_lines(steps) -> None:
    """Whatever comes: the counts written add up to what was added (after a final flush), and
    each kind gets at most one line per interval plus its first."""
    summary, records, clock = _summary(10.0)
    added: dict[str, int] = {}
    for dt, kind, n in steps:
        clock.now += dt
        summary.add(n, f"id-{kind}", kind=kind)
        added[kind] = added.get(kind, 0) + n
        summary.flush()
    summary.flush(final=True)  # the remainder (`+= 10.0` may leave 9.999… in floats)
    written: dict[str, int] = {}
    for r in records.records:
        written[r.kind] = written.get(r.kind, 0) + r.count
        assert r.count > 0 and "payload" not in r.__dict__
    assert written == {k: v for k, v in added.items() if v}
    for kind in written:
        lines = sum(1 for r in records.records if r.kind == kind)
        assert lines <= 2 + clock.now / 10.0


def test_a_degraded_path_is_shown_until_it_works_again() -> None:
    metrics = Metrics()
    degraded = metrics.degraded
    fault = classify(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    for _ in range(3):
        degraded.failed(RATING_CHANGES, "ratings", fault, sample="1-0")
    gauge = metrics.kafka_degraded.labels(RATING_CHANGES, "ratings", "not_authorized")
    assert gauge._value.get() == 1
    assert metrics.produce_failures.labels("ratings", "not_authorized")._value.get() == 3
    assert metrics.health.detail("degraded") == "rating_changes:ratings:not_authorized"
    assert metrics.health.up("consume")  # rating goes on: still ready
    missing = classify(KafkaError(KafkaError._UNKNOWN_TOPIC))
    degraded.failed(RATING_CHANGES, "ratings", missing)  # the cause changes: the gauge follows
    assert gauge._value.get() == 0
    assert metrics.kafka_degraded.labels(RATING_CHANGES, "ratings", "topic_missing")._value.get()
    degraded.failed(KILL_EVENTS, "kills", fault)
    assert not metrics.health.up("consume") and not metrics.ready()
    assert metrics.consume_failures.labels("kills", "not_authorized")._value.get() == 1
    degraded.failed(DEAD_LETTERS, "dlq", missing)
    assert metrics.health.detail("degraded") == (
        "dead_letters:dlq:topic_missing,kill_events:kills:not_authorized,"
        "rating_changes:ratings:topic_missing"
    )
    for path, topic in ((KILL_EVENTS, "kills"), (RATING_CHANGES, "ratings"), (DEAD_LETTERS, "dlq")):
        degraded.recovered(path, topic)
    assert metrics.health.detail("degraded") is None and metrics.health.up("consume")
    assert degraded.cause(RATING_CHANGES, "ratings") is None
    assert all(
        s.value == 0 for s in metrics.kafka_degraded.collect()[0].samples
    )  # every gauge back at 0
