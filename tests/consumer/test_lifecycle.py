"""The batch lifecycle (consumer/_lifecycle.py) on in-memory fakes (tests/consumer/
lifecycle_fakes.py): the write-ahead's order, the flush on revoke, the rewind when Redis holds
less than it acknowledged, a dead-letter stop cutting a batch, and batch splits that do not
matter. No server: the Pipeline receives fake clients; the same paths against a real broker
and redis-server are in test_pipelining.py, test_redis_behind.py and
test_dead_letters_undeliverable.py.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st
from lifecycle_fakes import Fakes, fakes

from consumer._metrics import Metrics
from consumer.config import Config
from consumer.pipeline import Pipeline
from engine import Params, Snapshot, new_player
from schemas import decode_rating_change, encode_kill_event, kill_event

TOPIC = "kill-events"
SNAPSHOT = Snapshot(
    taken_at=None,
    mean_mu_active=1012.5,
    boundaries=tuple(1400.0 - 25.0 * k for k in range(14)),
    active_count=500,
)
PLAYERS = ("a", "b", "c", "d", "e")


def _pipeline(cache_players: int = 1000) -> tuple[Pipeline, Fakes]:
    config = Config(topic=TOPIC, state_cache_players=cache_players)
    metrics = Metrics()
    made = fakes(TOPIC, SNAPSHOT, metrics)
    pipeline = Pipeline(config, Params(), metrics, made.clients)
    pipeline._subscribe()
    return pipeline, made


def _kill(fake: Fakes, partition: int, i: int, a: str, b: str, ts: int) -> Any:
    event = kill_event(id=f"e{i}", arena="x", attacker=a, victim=b, ts=ts)
    return fake.kafka.append(partition, b"x", encode_kill_event(event))


def _now() -> int:
    return time.time_ns() // 1_000_000 - 600_000


START = _now() - 3_600_000


def _stream(fake: Fakes, n: int, partitions: int = 1, start: int = START) -> list[Any]:
    """n kills over `partitions`, 71 s apart (beyond the cooldown), from `start`."""
    out = []
    for i in range(n):
        a, b = PLAYERS[i % 5], PLAYERS[(i * 2 + 1) % 5]
        if a == b:
            b = PLAYERS[(i + 1) % 5]
        out.append(_kill(fake, i % partitions, i, a, b, start + i * 71_000))
    return out


def _at(trace: list[tuple[Any, ...]], entry: tuple[Any, ...]) -> int:
    return trace.index(entry)


class TracedRating:
    """The lifecycle's rating step, recording each rating in the trace."""

    def __init__(self, inner: Any, trace: list[tuple[Any, ...]]) -> None:
        self.inner, self.trace = inner, trace

    def __call__(self, events: Any, batch_offsets: Any, view: Any, **settings: Any) -> Any:
        self.trace.append(("rate", dict(batch_offsets)))
        return self.inner(events, batch_offsets, view, **settings)


def test_the_next_batch_is_rated_before_the_write_ahead_is_confirmed_then_committed_and_emitted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipeline, fake = _pipeline()
    monkeypatch.setattr(
        pipeline.lifecycle, "rate_step", TracedRating(pipeline.lifecycle.rate_step, fake.trace)
    )
    fake.kafka.assign_group([0])
    messages = _stream(fake, 4)
    fake.trace.clear()
    pipeline.lifecycle.process(messages[:2])
    assert fake.store.held.offsets == {}  # held back, not written
    assert ("write", {0: 2}) not in fake.trace
    pipeline.lifecycle.process(messages[2:])
    t = fake.trace
    # batch 2's read goes out with batch 1's write behind it; batch 2 is rated meanwhile, then
    # batch 1 is confirmed, committed and emitted; batch 2 is held.
    assert _at(t, ("write", {0: 2})) < _at(t, ("rate", {0: 4})) < _at(t, ("confirmed", {0: 2}))
    assert _at(t, ("confirmed", {0: 2})) < _at(t, ("commit", {0: 2})) < len(t) - 1
    assert t[-1] == ("emit",)
    assert ("write", {0: 4}) not in t and fake.store.held.offsets == {0: 2}
    fake.trace.clear()
    pipeline.flush()
    assert fake.trace == [
        ("write", {0: 4}),
        ("confirmed", {0: 4}),
        ("commit", {0: 4}),
        ("emit",),
    ]
    assert fake.kafka.commits == [{0: 2}, {0: 4}]
    assert pipeline.partitions.positions == {0: 4}


def test_a_write_ahead_that_conflicts_is_redone_before_its_commit() -> None:
    """Another instance moves a player the held batch changed: the write ahead is refused, the
    held batch is rated and written again, then committed, and the batch behind rated afresh."""
    pipeline, fake = _pipeline()
    fake.kafka.assign_group([0])
    messages = _stream(fake, 4)
    pipeline.lifecycle.process(messages[:2])
    _state, ver = fake.store.held.players.get("a", (None, 0))
    fake.store.held.players["a"] = (new_player(Params()), ver + 7)  # someone else wrote a
    fake.trace.clear()
    pipeline.lifecycle.process(messages[2:])
    t = fake.trace
    assert pipeline.metrics.conflicts._value.get() == 1
    assert t.count(("write", {0: 2})) == 2 and t.count(("confirmed", {0: 2})) == 1
    assert _at(t, ("confirmed", {0: 2})) < _at(t, ("commit", {0: 2}))
    pipeline.flush()
    assert fake.store.held.offsets == {0: 4}
    assert fake.kafka.commits == [{0: 2}, {0: 4}]


def _counts(pipeline: Pipeline) -> tuple[float, float, float]:
    m = pipeline.metrics
    return (m.consumed._value.get(), m.counted._value.get(), m.duplicate._value.get())


@pytest.mark.parametrize("held", [True, False], ids=["write-ahead", "flush"])
def test_a_write_whose_reply_is_lost_after_it_ran_counts_its_events_once(held: bool) -> None:
    """The connection drops after the script ran: the redo's read finds the batch applied and
    writes nothing new, and the batch's counted and duplicate events are those of the write
    that ran (not zero, not twice)."""
    runs = []
    for lose in (0, 1):
        pipeline, fake = _pipeline()
        fake.kafka.assign_group([0])
        # a-b three times 1 s apart: one counted, two repeats inside the cooldown; then c-d
        messages = [_kill(fake, 0, i, "a", "b", START + i * 1000) for i in range(3)]
        messages += [_kill(fake, 0, 3 + i, "c", "d", START + 200_000 * (i + 1)) for i in range(2)]
        pipeline.lifecycle.process(messages[:3])
        fake.store.lose_replies = lose
        if held:
            pipeline.lifecycle.process(
                messages[3:]
            )  # the first batch's write goes out ahead of this read
        else:
            pipeline.flush()
            pipeline.lifecycle.process(messages[3:])
        pipeline.flush()
        assert fake.store.held.offsets == {0: 5}
        assert fake.store.lose_replies == 0
        runs.append((_counts(pipeline), _ratings(fake)))
    assert runs[1] == runs[0]
    assert runs[0][0] == (5.0, 3.0, 2.0)


def test_a_revoke_flushes_the_held_batch_before_the_partitions_go() -> None:
    pipeline, fake = _pipeline()
    fake.kafka.assign_group([0, 1])
    messages = _stream(fake, 6, partitions=2)
    pipeline.lifecycle.process(messages)
    assert fake.store.held.offsets == {}
    fake.trace.clear()
    fake.kafka.revoke_group([0, 1])
    assert fake.trace[:4] == [
        ("write", {0: 3, 1: 3}),
        ("confirmed", {0: 3, 1: 3}),
        ("commit", {0: 3, 1: 3}),
        ("emit",),
    ]
    assert fake.trace[4] == ("unassign",)
    assert pipeline.lifecycle.held is None
    assert pipeline.assigned == set() and pipeline.partitions.positions == {}
    assert pipeline.partitions.confirmed == {}


@pytest.mark.parametrize("held", [False, True], ids=["fresh read", "behind a write ahead"])
def test_redis_behind_drops_the_cache_and_reassigns_at_the_stored_offsets(held: bool) -> None:
    """Redis restarted from an older state (offsets 2 where this instance wrote 4): the batch in
    hand, the one held and the cache are dropped, the partition is assigned again at 2, and
    what comes again from the log ends where an undisturbed run ends."""
    pipeline, fake = _pipeline()
    fake.kafka.assign_group([0])
    messages = _stream(fake, 8)
    pipeline.lifecycle.process(messages[:2])
    pipeline.flush()
    earlier = fake.store.saved()  # offsets {0: 2}
    pipeline.lifecycle.process(messages[2:4])
    pipeline.flush()
    assert fake.store.held.offsets == {0: 4} and len(pipeline.lifecycle.cache) > 0
    if held:
        pipeline.lifecycle.process(messages[4:6])  # held, computed on what Redis is about to lose
    fake.store.lose_to(earlier)
    fake.trace.clear()
    pipeline.lifecycle.process(messages[6 if held else 4 :])
    assert pipeline.metrics.redis_rewinds._value.get() == 1
    assert ("assign", {0: 2}) in fake.trace
    # the epoch is raised before anything is read (and so applied) again
    assert _at(fake.trace, ("raise epoch",)) < _at(fake.trace, ("assign", {0: 2}))
    assert fake.store.held.epoch >= START
    assert pipeline.lifecycle.held is None and len(pipeline.lifecycle.cache) == 0
    assert pipeline.partitions.confirmed == {0: 2}
    assert fake.store.held.offsets == {0: 2}  # the write held back never applied
    again = fake.kafka.consume(100)
    assert [m.offset() for m in again] == list(range(2, 8))
    pipeline.lifecycle.process(again)
    pipeline.flush()

    reference, ref = _pipeline()
    ref.kafka.assign_group([0])
    _stream(ref, 8)
    reference.lifecycle.process(ref.kafka.consume(100))
    reference.flush()
    assert fake.store.held.offsets == ref.store.held.offsets == {0: 8}
    assert _ratings(fake) == _ratings(ref)


def test_an_epoch_that_went_back_is_a_rewind_and_the_next_changes_carry_a_higher_one() -> None:
    """Redis lost a raise of the epoch (and nothing else this instance wrote): the offsets say
    nothing, the epoch read lower than seen does; it is raised again above the lost one."""
    pipeline, fake = _pipeline()
    fake.kafka.assign_group([0])
    messages = _stream(fake, 6)
    pipeline.lifecycle.process(messages[:2])
    pipeline.flush()
    fake.store.held.epoch = lost = 10**14  # raised by another instance, seen here ...
    pipeline.lifecycle.process(messages[2:4])
    pipeline.flush()
    assert pipeline.partitions.epoch.seen == lost
    fake.store.held.epoch = 0  # ... then lost with a failover
    pipeline.lifecycle.process(messages[4:])
    assert pipeline.metrics.redis_rewinds._value.get() == 1
    pipeline.lifecycle.process(fake.kafka.consume(100))
    pipeline.flush()
    assert fake.store.held.epoch == lost + 1
    last = decode_rating_change(fake.store.held.outbox[-1][-1][1])
    assert last.epoch == lost + 1


def test_a_redis_behind_the_committed_offsets_at_assignment_raises_the_epoch_first() -> None:
    """Commits follow Redis: stored 2 where the group committed 5 (recording epoch 10**14) means
    Redis lost writes while no instance ran; the epoch goes above the recorded one before the
    partition is read. Committed offsets that cannot be read raise it too (safe for readers)."""
    pipeline, fake = _pipeline()
    fake.store.held.offsets = {0: 2}
    recorded = 10**14
    fake.kafka.committed = lambda tps, timeout=-1: [  # type: ignore[method-assign]
        TopicPartition(TOPIC, tp.partition, 5, metadata=str(recorded)) for tp in tps
    ]
    fake.kafka.assign_group([0])
    assert _at(fake.trace, ("raise epoch",)) < _at(fake.trace, ("assign", {0: 2}))
    assert fake.store.held.epoch == recorded + 1
    metrics = pipeline.metrics
    assert metrics.epoch_raises.labels("assignment")._value.get() == 1
    assert metrics.redis_rewinds._value.get() == 1  # alerted as lost writes

    def unknown(tps: Any, timeout: float = -1) -> Any:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))

    fake.kafka.committed = unknown  # type: ignore[method-assign]
    fake.kafka.assign_group([0])
    assert fake.store.held.epoch > recorded + 1
    assert metrics.epoch_raises.labels("committed_unknown")._value.get() == 1
    assert metrics.redis_rewinds._value.get() == 1

    fake.kafka.committed = lambda tps, timeout=-1: [  # type: ignore[method-assign]
        TopicPartition(TOPIC, tp.partition, 2) for tp in tps
    ]
    raised = fake.store.held.epoch
    fake.kafka.assign_group([0])  # Redis holds what the group committed: nothing to raise
    assert fake.store.held.epoch == raised


def test_an_undelivered_dead_letter_cuts_the_batch_at_it_and_stops_its_partition() -> None:
    pipeline, fake = _pipeline()
    fake.kafka.assign_group([0, 1])
    ts = _now()
    batch = [
        _kill(fake, 0, 1, "a", "b", ts),
        fake.kafka.append(0, b"x", b"\x80 not an event"),  # offset 1: rejected
        _kill(fake, 0, 2, "c", "d", ts + 1),  # after the stop: not applied
        _kill(fake, 1, 3, "d", "e", ts + 2),  # another partition: applied
        fake.kafka.append(1, b"x", b"\x80 not an event"),  # delivered: dead-lettered
    ]
    fake.dead_letters.undeliverable = {(0, 1)}
    pipeline.lifecycle.process(batch)
    pipeline.flush()
    assert fake.store.held.offsets == {0: 1, 1: 2}
    assert set(fake.store.held.players) == {"a", "b", "d", "e"}
    assert fake.dead_letters.delivered == [(1, 1, "undecodable")]
    assert 0 in fake.kafka.paused and 1 not in fake.kafka.paused
    assert fake.kafka.commits[-1] == {0: 1, 1: 2}
    assert not pipeline.metrics.ready()  # /readyz names the stopped partition


def _ratings(fake: Fakes) -> dict[str, tuple[float, float, int, int]]:
    return {p: (s.mu, s.sigma, s.n, ver) for p, (s, ver) in fake.store.held.players.items()}


@settings(max_examples=40, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=1, max_value=23), max_size=8, unique=True),
    flushes=st.sets(st.integers(min_value=0, max_value=8)),
    cache_players=st.sampled_from([0, 1000]),
)
def test_any_split_into_batches_ends_with_the_same_state_and_commits(
    cuts: list[int], flushes: set[int], cache_players: int
) -> None:
    """However a stream is cut into batches (and wherever a batch is written at once instead of
    held), Redis ends with the state and offsets of one batch, and Kafka's last commit of each
    partition is its next offset; commits never go back."""
    pipeline, fake = _pipeline(cache_players)
    fake.kafka.assign_group([0, 1])
    messages = _stream(fake, 24, partitions=2)
    bounds = [0, *sorted(cuts), 24]
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        pipeline.lifecycle.process(messages[lo:hi])
        if i in flushes:
            pipeline.flush()
    pipeline.flush()

    reference, ref = _pipeline()
    ref.kafka.assign_group([0, 1])
    reference.lifecycle.process(_stream(ref, 24, partitions=2))
    reference.flush()
    assert fake.store.held.offsets == ref.store.held.offsets == {0: 12, 1: 12}
    assert {p: s[:3] for p, s in _ratings(fake).items()} == {
        p: s[:3] for p, s in _ratings(ref).items()
    }
    last: dict[int, int] = {}
    for commit in fake.kafka.commits:
        for partition, offset in commit.items():
            assert offset >= last.get(partition, 0)
            last[partition] = offset
    assert last == {0: 12, 1: 12}
    emitted = sorted(c for entry in fake.store.held.outbox for c in entry)
    assert emitted == sorted(c for entry in ref.store.held.outbox for c in entry)


def test_a_fatal_client_error_writes_the_held_batch_and_renews_the_clients_in_one_handler() -> None:
    """A fatal error reported by a Kafka client's callback surfaces as FatalClientError at the
    next client call; the pipeline's one handler writes the batch held (its offsets reach
    Redis), drops the batch in hand (it comes again from Redis's offsets) and renews the
    clients."""
    pipeline, fake = _pipeline()
    fake.kafka.assign_group([0])
    messages = _stream(fake, 4)
    pipeline.lifecycle.process(messages[:2])  # held, not written
    renewed: list[int] = []

    def new_kafka() -> Any:
        renewed.append(1)
        pipeline.request_stop()  # one round of the loop is enough
        return fake.kafka, fake.clients.producer

    pipeline.clients.new_kafka = new_kafka
    pipeline.clients.errors(KafkaError(KafkaError._FATAL, "fenced", fatal=True))
    pipeline.run(serve_metrics=False, signals=False)
    assert renewed == [1] and pipeline.clients.errors.fatal is None
    assert pipeline.metrics.swallowed.labels("kafka_fatal")._value.get() == 1
    assert fake.store.held.offsets == {0: 2}  # the held batch; the batch read with the error: not
    assert fake.kafka.commits[-1] == {0: 2}
