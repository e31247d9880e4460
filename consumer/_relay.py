"""The outbox relay: rating changes written by the atomic batch write -> Kafka, at least once.

Each outbox entry holds one batch's rating changes (`m`: msgpack array of [player, message]).
Entries are read through a Redis stream consumer group, so instances sharing a namespace never
send the same entry twice while alive. An entry's way is all here: read (XREADGROUP), decoded,
produced, settled, acknowledged (XACK and XDEL) only after Kafka confirmed every message of it.
What keeps the group in order off that way (its creation, the claims of entries left idle, the
quarantine, the backlog) is consumer/_outbox.py's: an entry read by an instance that then died is
claimed by another after `outbox_claim_idle_ms` and sent again: the only way a duplicate (same
`id`) reaches `rating-changes`.

How an entry is confirmed ("settled"), without a Python call per delivered message: the producer
reports failed messages only (`delivery.report.only.error`, consumer/_kafka.py; the client keeps
librdkafka reporting every message to its C callback, which frees the message's state and skips
the Python callback on success), and success is read off the producer's queue. Why that is safe:
(1) `len(producer)` counts every message from `produce()` until librdkafka destroys it; (2) it
destroys a message only after serving its delivery report through `poll` on the calling thread,
which runs this module's failure callback first (a failed message marks its entry); (3) so if
`len(producer)` is 0 just after a `poll`, every message produced before that was delivered or
its entry is marked. The entries produced in full by then settle together: acknowledged unless
marked. Nothing is assumed about the order of deliveries across messages or partitions, so
idempotence and `max.in.flight` play no part in it. The cost: entries settle only when the queue
is empty. It empties whenever the relay stops producing, and the relay does once
`relay_max_in_flight` sent messages are unsettled (it takes no new entries then and produces the
at most `relay_batch` it holds), so a busy queue delays settlement boundedly; a message that
never completes (`message.timeout.ms` is 0: a partition without a leader) delays every entry's
settlement, not only its own. A success report, should the producer be configured to send them,
is ignored.

While an entry waits for settlement (sent, not yet confirmed: "in flight") its owner keeps it
fresh in the group (XCLAIM ... JUSTID resets its idle time) and never claims it again itself, so
a slow or blocked broker delays rating changes but never duplicates them. An entry whose delivery
failed leaves the in-flight set when it is settled and is claimed again (by anyone) after
`outbox_claim_idle_ms`.

Each `pump` is bounded: it takes at most `relay_batch` entries, none while `relay_max_in_flight`
sent messages are unsettled, and stops producing after `relay_pump_ms` (a full local queue, a
down broker); what it read and has not produced yet is produced by the next pumps, in order.
(The bounds are the consumer's Config fields.)

When the broker refuses (consumer/_kafka_faults.py classifies every error, consumer/_degraded.py
reports it): a refusal of the topic (an ACL denies WRITE, the topic was deleted and the broker
does not create it) raised by `produce()` stops producing, with the message not sent, and the
relay tries again after a backoff (`backoff_initial_s` doubling to `backoff_max_s`), asking the
broker for the topic's metadata first so that a lifted refusal is seen at once; the same refusal
in a delivery report marks the entry, which is claimed and sent again. Either way the rating
changes wait in the outbox, ratings go on, and the path is reported degraded (metric, one log line
per cause, /readyz) until an entry settles delivered. A message the broker will never take (over
the producer's `message.max.bytes`) is quarantined alone when `produce()` refuses it, and its
entry goes on; one the broker refuses (over the topic's `max.message.bytes`) waits like any
failed delivery, until the operator raises the topic's limit. What neither waiting nor a new
producer can fix (an unsupported broker version, an invalid setting) raises KafkaUnrecoverable:
the process exits.
"""

from __future__ import annotations

import collections
import logging
import time
from typing import Any, Final

import msgspec
import redis
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from consumer._degraded import RATING_CHANGES
from consumer._errors import KafkaUnrecoverable
from consumer._kafka_faults import Action, Fault, classify
from consumer._metrics import Metrics
from consumer._outbox import CHUNK, GROUP, OutboxStream
from consumer._topic_watch import StuckWatch
from consumer.config import Config
from redis_layout import Keys
from runtime.kafka_produce import produce_waiting

_METADATA_TIMEOUT_S: Final = 1.0
"""How long a retry after a refusal of the topic waits for its metadata (the loop waits)."""
_ANY_PARTITION: Final = -1
"""librdkafka's RD_KAFKA_PARTITION_UA: the producer's partitioner picks by key, as by default."""
log = logging.getLogger("adr.consumer.relay")


class OutboxMessage(
    msgspec.Struct, array_like=True, gc=False, forbid_unknown_fields=True, frozen=True
):
    """One [player, rating-change bytes] pair of an entry, decoded as strictly as a tuple would
    be (exactly two items, a str and bytes); gc=False: the thousands a pump holds until the
    broker confirms them are never scanned by the garbage collector, where tuples would be."""

    player: str
    value: bytes


_ENTRY: Final = msgspec.msgpack.Decoder(list[OutboxMessage])


class _Entry:
    """Delivery bookkeeping of one outbox entry."""

    __slots__ = ("entry_id", "failed", "messages", "sent")

    def __init__(self, entry_id: bytes, messages: list[OutboxMessage]) -> None:
        self.entry_id = entry_id
        self.messages = messages
        self.sent = 0  # messages handed to the producer so far
        self.failed = False  # a failure was reported for one of them


class Relay:
    """The outbox relay of one rating pool (`keys`), to `config.rating_topic`, named
    `config.instance_id` in the group, bounded by `config.relay_batch` (entries per pump),
    `relay_max_in_flight`, `relay_pump_ms` and `outbox_claim_idle_ms`."""

    def __init__(
        self, client: redis.Redis, producer: Producer, keys: Keys, config: Config, metrics: Metrics
    ) -> None:
        self._outbox = OutboxStream(
            client, keys, config.instance_id, config.outbox_claim_idle_ms, metrics
        )
        """The group kept in order: created, entries kept and claimed, quarantine, backlog."""
        self._stream = keys.outbox
        self._producer = producer
        self._config = config
        self._metrics = metrics
        self._done: list[bytes] = []
        self._in_flight = 0  # messages produced, their entry not settled yet
        self._mine: dict[bytes, _Entry] = {}  # entries read and not settled yet
        self._unsent: collections.deque[_Entry] = collections.deque()  # read, not all produced
        self._produced: list[_Entry] = []  # produced in full, not settled yet
        self._next_claim = 0.0
        self._retry_at = 0.0  # after a refusal of the topic: no produce() before this
        self._backoff_s = 0.0
        self._stuck = StuckWatch(config.rating_topic, metrics)

    def use_producer(self, producer: Producer) -> None:
        """Switch to a new producer; what the old one did not confirm is claimed again later
        (the one case besides a crash that may send an entry twice)."""
        self._producer = producer
        self._in_flight = 0
        self._mine.clear()
        self._unsent.clear()
        self._produced.clear()

    @property
    def in_flight(self) -> int:
        """Rating changes handed to the producer whose entry is not settled yet."""
        return self._in_flight

    def pump(self) -> int:
        """Acknowledge what Kafka confirmed, keep this relay's unconfirmed entries its own, claim
        entries abandoned by others, read new ones (as room allows), then produce for at most
        `relay_pump_ms`; returns the entries taken."""
        self._producer.poll(0)
        self._settle()
        outbox = self._outbox
        pipe = outbox.pipeline()  # first: creating the group may fail, with nothing taken yet
        acked, self._done = self._done, []
        self._queue_acknowledge(pipe, acked)
        now = time.monotonic()
        claiming = now >= self._next_claim
        if claiming:
            self._next_claim = now + self._config.outbox_claim_idle_ms / 2000
            outbox.queue_keep(pipe, list(self._mine))
        room = self._room()
        if room > 0:
            pipe.xreadgroup(GROUP, self._config.instance_id, {self._stream: ">"}, count=room)
        try:
            replies: list[Any] = pipe.execute(raise_on_error=False) if len(pipe) else []
        except redis.RedisError:
            self._done = acked + self._done  # acknowledged on the next try
            raise
        if outbox.lost_group(replies):
            return 0
        failed = [r for r in replies if isinstance(r, Exception)]
        if failed:
            self._done = acked + self._done
            raise failed[0]
        taken = 0
        if room > 0:
            for _stream, items in replies[-1] or []:
                taken += self._take(items)
        if claiming and self._room() > 0:
            taken += self._claim_abandoned(self._room())
        self._produce(time.monotonic() + self._config.relay_pump_ms / 1000)
        self._producer.poll(0)
        # the producer's queue not drained: after a while, the broker is asked why
        self._stuck.check(self._producer, len(self._producer) > 0)
        return taken

    def _queue_acknowledge(self, pipe: Any, ids: list[bytes]) -> None:
        """XACK and XDEL `ids`: Kafka confirmed all of them."""
        for i in range(0, len(ids), CHUNK):
            chunk = ids[i : i + CHUNK]
            pipe.xack(self._stream, GROUP, *chunk)
            pipe.xdel(self._stream, *chunk)

    def _quarantine_message(self, entry_id: bytes, message: OutboxMessage, fault: Fault) -> None:
        """One rating change the producer refuses for good goes to the quarantine stream
        (consumer/_outbox.py), reported; the rest of its entry goes on, so no relay stops on it
        again."""
        error = f"{fault.code}: {fault.error}"
        self._outbox.quarantine_message(entry_id, message.player, message.value, error)
        self._metrics.degraded.failed(
            RATING_CHANGES, self._config.rating_topic, fault, sample=entry_id.decode()
        )
        log.error(
            "rating change refused by the producer, moved to quarantine",
            extra={"entry": entry_id.decode(), "player": message.player, "error": fault.error,
                   "cause": fault.cause.value},
        )  # fmt: skip

    def _room(self) -> int:
        """How many more entries may be taken: none while `relay_max_in_flight` messages are
        unsettled, and at most `relay_batch` read and not yet produced."""
        if self._in_flight >= self._config.relay_max_in_flight:
            return 0
        return max(0, self._config.relay_batch - len(self._unsent))

    def _claim_abandoned(self, count: int) -> int:
        """Claim entries idle for `outbox_claim_idle_ms` (their reader died, or their delivery
        failed); skip this relay's own in-flight entries, which it is still sending."""
        items = self._outbox.claim_abandoned(count)
        return self._take([e for e in items if e[0] not in self._mine])

    def _take(self, items: list[tuple[bytes, dict[bytes, bytes]]]) -> int:
        for entry_id, fields in items:
            try:
                messages = _ENTRY.decode(fields[b"m"])
            except (KeyError, msgspec.DecodeError, RecursionError) as exc:
                self._outbox.quarantine_entry(entry_id, fields, f"{type(exc).__name__}: {exc}")
                continue
            entry = _Entry(entry_id, messages)
            self._mine[entry_id] = entry
            if entry.messages:
                self._unsent.append(entry)
            else:
                del self._mine[entry_id]
                self._done.append(entry_id)
        return len(items)

    def _produce(self, deadline: float) -> None:
        """Hand the unsent messages to the producer, in order, until done or `deadline` (a full
        local queue: the broker is slow or down), none before the retry time after a refusal of
        the topic."""
        unsent = self._unsent
        if not unsent:
            return
        if self._retry_at:
            if time.monotonic() < self._retry_at:
                return
            self._refresh_metadata()
        while unsent:
            if not self._produce_entry(unsent[0], deadline):
                return  # the next pump goes on from here
            self._produced.append(unsent.popleft())

    def _produce_entry(self, entry: _Entry, deadline: float) -> bool:
        """Hand the rest of `entry` to the producer; False if `deadline` came first. What was
        handed over counts as sent even when the producer refuses a message (KafkaException),
        so that a later pump never produces it twice."""
        produce, topic = self._producer.produce, self._config.rating_topic
        on_failure = self._on_failure(entry)
        messages = entry.messages
        i = entry.sent
        try:
            for i in range(entry.sent, len(messages)):
                message = messages[i]
                try:  # the common case in one call; a full local queue waits in produce_waiting
                    # positional (topic, value, key, partition, on_delivery): a keyword argument
                    # costs the client's argument parsing ~0.3 µs per message
                    produce(topic, message.value, message.player, _ANY_PARTITION, on_failure)
                except BufferError:
                    queued = produce_waiting(
                        self._producer, topic, message.value, message.player,
                        on_delivery=on_failure, deadline=deadline, on_wait=self._metrics.tick,
                    )  # fmt: skip
                    if not queued:
                        return False
                except KafkaException as exc:
                    fault = classify(exc)
                    if fault.action is Action.SET_ASIDE:
                        self._quarantine_message(entry.entry_id, message, fault)
                        continue
                    if fault.action is Action.EXIT:
                        raise KafkaUnrecoverable(self._config.rating_topic, fault) from exc
                    if fault.fatal:
                        raise  # the pipeline makes new clients (consumer/_lifecycle.py)
                    self._topic_refused(entry, fault)
                    return False  # this message not sent: the next try starts at it
            i = len(messages)
            self._retry_at = 0.0
            return True
        finally:
            self._in_flight += i - entry.sent
            entry.sent = i

    def _topic_refused(self, entry: _Entry, fault: Fault) -> None:
        """`produce()` refused the topic itself (not authorized, missing): report it, and
        produce nothing before a backoff has passed."""
        config = self._config
        self._metrics.degraded.failed(
            RATING_CHANGES, config.rating_topic, fault, sample=entry.entry_id.decode()
        )
        self._backoff_s = min(
            config.backoff_max_s, max(config.backoff_initial_s, self._backoff_s * 2)
        )
        self._retry_at = time.monotonic() + self._backoff_s

    def _refresh_metadata(self) -> None:
        """Ask the broker about the rating topic before producing again after a refusal of it:
        librdkafka keeps a topic's error until its next metadata refresh (minutes), so a
        refusal lifted meanwhile would still be raised by `produce()`."""
        try:
            self._producer.list_topics(self._config.rating_topic, timeout=_METADATA_TIMEOUT_S)
        except KafkaException as exc:
            self._metrics.swallowed.labels("relay_metadata").inc()
            log.debug("rating topic metadata", extra={"error": str(exc)})

    def _on_failure(self, entry: _Entry) -> Any:
        topic = self._config.rating_topic
        sample = entry.entry_id.decode()

        def failed(err: KafkaError | None, _msg: Message) -> None:
            if err is None:
                return  # a success report (not asked for): settlement reads the queue instead
            # Whatever the cause, the entry stays pending in the group: claimed and sent again
            # later. Even a message over the topic's max.message.bytes (SET_ASIDE when the
            # producer itself refuses it) waits here: raising the topic's limit, which the
            # operator can do at run time, lets it through (as for dead letters).
            entry.failed = True
            self._metrics.swallowed.labels("relay_delivery").inc()
            self._metrics.degraded.failed(RATING_CHANGES, topic, classify(err), sample=sample)

        return failed

    def _settle(self) -> None:
        """Settle the entries produced in full once the producer's queue is empty (just after
        a `poll`): each was delivered, or a failure was reported for one of its messages (see
        the module's docstring). The delivered ones are acknowledged with the next pump."""
        if not self._produced or len(self._producer) > 0:
            return
        delivered = False
        for entry in self._produced:
            if self._mine.get(entry.entry_id) is entry:
                del self._mine[entry.entry_id]
            if not entry.failed:
                self._done.append(entry.entry_id)
                delivered = True
        self._produced = []
        if delivered:
            self._backoff_s = 0.0
            self._metrics.degraded.recovered(RATING_CHANGES, self._config.rating_topic)
        self._in_flight = self._unsent[0].sent if self._unsent else 0

    def _acknowledge(self) -> None:
        """What was settled delivered, acknowledged in a round trip of its own."""
        ids, self._done = self._done, []
        if not ids:
            return
        try:
            pipe = self._outbox.pipeline()
            self._queue_acknowledge(pipe, ids)
            pipe.execute()
        except redis.RedisError:
            self._done = ids + self._done  # acknowledged on the next try
            raise

    def drain(self, timeout_s: float) -> None:
        """Produce what was read, wait for Kafka to confirm everything sent, then acknowledge
        it (at most `timeout_s`; the rest is claimed by another instance later)."""
        deadline = time.monotonic() + timeout_s
        self._produce(deadline)
        self._producer.poll(0)
        self._settle()
        while self._produced and time.monotonic() < deadline:
            self._producer.poll(0.1)
            self._settle()
            self._metrics.tick()
        self._acknowledge()

    def backlog(self) -> int:
        """Outbox entries (batches) not yet acknowledged."""
        return self._outbox.backlog()
