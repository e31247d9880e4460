"""`adr topics create|check`: the four topics with the partitions, replication and configs the
pipeline relies on, created or checked against a broker.

Who and when: the platform team runs `adr topics create` once per environment before the first
deploy (and again after adding a rating pool's topics); `adr topics check` runs in CI/CD before
every deploy and after any change to the broker or the consumer's replica count.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Mapping
from typing import Any, Final

from runtime import RuntimeConfigError, add_kafka_arguments, kafka_settings_from_args, redact_text
from runtime.kafka_settings import Broker
from runtime.logs import kafka_logger

log = logging.getLogger("adr.topics")
KAFKA_LOG: Final = kafka_logger("adr.topics.kafka")
"""librdkafka's own lines (a refused connection, say), as JSON log lines like every other."""

EXIT_OK: Final = 0
EXIT_MISMATCH: Final = 1
EXIT_USAGE: Final = 2
EXIT_BROKER: Final = 3
_TIMEOUT_S: Final = 30.0
_DAY_MS: Final = 86_400_000
_DLQ_HEADROOM_BYTES: Final = 64 * 1024
"""A dead letter is the original value plus its reason and original headers."""
_BROKER_DEFAULT_MAX_MESSAGE_BYTES: Final = 1_048_588


@dataclasses.dataclass(frozen=True, slots=True)
class TopicSpec:
    """What one topic must look like."""

    role: str
    name: str
    partitions: int
    replication: int
    config: Mapping[str, str]
    exact_partitions: bool = True
    """False: more partitions are fine (nothing is keyed by partition count)."""


@dataclasses.dataclass(frozen=True, slots=True)
class TopicState:
    """What the broker has: partitions, the smallest replica count, the topic's configs."""

    partitions: int
    replication: int
    config: Mapping[str, str]


def replication(args: argparse.Namespace, brokers: int | None) -> int:
    """--replication-factor, capped at the brokers the cluster has (a one-broker development
    stack cannot hold 3 replicas: creating would fail), with a warning when it is."""
    wanted = int(args.replication_factor)
    if brokers is None or brokers < 1 or wanted <= brokers:
        return wanted
    log.warning(
        "replication factor capped at the broker count",
        extra={"replication_factor": wanted, "brokers": brokers, "used": brokers},
    )
    return brokers


def specs(args: argparse.Namespace, rf: int | None = None) -> list[TopicSpec]:
    """The four topics, from the flags (`rf`: the replication factor `replication` fitted to
    the cluster; default --replication-factor)."""
    rf = args.replication_factor if rf is None else rf
    insync = str(min(2, rf))
    kill_max = str(args.max_message_bytes)
    common = {"min.insync.replicas": insync}
    return [
        TopicSpec("kill-events", args.kill_topic, args.partitions, rf, {
            **common, "cleanup.policy": "delete", "retention.ms": str(args.kill_retention_ms),
            "max.message.bytes": kill_max}),
        TopicSpec("rating-changes", args.rating_topic, args.partitions, rf, {
            **common, "cleanup.policy": "delete", "retention.ms": str(7 * _DAY_MS)}),
        TopicSpec("tier-boundaries", args.tier_topic, 1, rf, {
            **common, "cleanup.policy": "compact"}),
        TopicSpec("kill-events-dlq", args.dlq_topic, 1, rf, {
            **common, "cleanup.policy": "delete", "retention.ms": str(30 * _DAY_MS),
            "max.message.bytes": str(args.max_message_bytes + _DLQ_HEADROOM_BYTES)},
            exact_partitions=False),
    ]  # fmt: skip


def problems(spec: TopicSpec, state: TopicState | None, consumer_replicas: int) -> list[str]:
    """Every way `state` falls short of `spec`, each a sentence an operator can act on."""
    if state is None:
        return [f"{spec.name}: missing (run `adr topics create`)"]
    found = []
    if spec.exact_partitions and state.partitions != spec.partitions:
        found.append(
            f"{spec.name}: {state.partitions} partitions, expected {spec.partitions} "
            "(changing the count moves arenas to other partitions: plan it as a migration)"
        )
    elif state.partitions < spec.partitions:
        found.append(f"{spec.name}: {state.partitions} partitions, expected >= {spec.partitions}")
    if spec.role == "kill-events" and state.partitions < consumer_replicas:
        found.append(
            f"{spec.name}: {state.partitions} partitions for {consumer_replicas} consumer "
            f"replicas: {consumer_replicas - state.partitions} replicas would sit idle"
        )
    if state.replication < spec.replication:
        found.append(
            f"{spec.name}: replication factor {state.replication}, expected {spec.replication}"
        )
    for key, want in spec.config.items():
        have = state.config.get(key)
        if key == "max.message.bytes":
            if have is not None and int(have) < int(want):
                found.append(f"{spec.name}: {key}={have}, expected >= {want}")
        elif have != want:
            found.append(f"{spec.name}: {key}={have}, expected {want}")
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `adr topics`."""
    parser.epilog = (
        "exit status: 0 every topic as specified; 1 a topic is missing or differs (check) or "
        "could not be created (create); 2 usage; 3 no broker answered"
    )
    add = parser.add_argument
    add("action", choices=("create", "check"), help="create missing topics, or only check")
    Broker.add_arguments(parser)
    add("--partitions", type=int, default=12,
        help="partitions of kill-events and rating-changes (default 12)")  # fmt: skip
    add("--replication-factor", type=int, default=3, help="replicas per partition (default 3; "
        "capped at the cluster's broker count, with a warning); min.insync.replicas is set to "
        "min(2, this)")  # fmt: skip
    add("--consumer-replicas", type=int, default=1,
        help="consumer replicas planned; more than kill-events' partitions is flagged")  # fmt: skip
    add("--kill-retention-ms", type=int, default=-1, help="kill-events retention "
        "(default -1: forever; the log is what `adr replay` and a rebuild start from)")  # fmt: skip
    add("--max-message-bytes", type=int, default=_BROKER_DEFAULT_MAX_MESSAGE_BYTES,
        help="largest kill-events message (the dead-letter topic gets 64 KiB more)")  # fmt: skip
    add("--kill-topic", default="kill-events", help="name of the kill-events topic")
    add("--rating-topic", default="rating-changes", help="name of the rating-changes topic")
    add("--tier-topic", default="tier-boundaries", help="name of the tier-boundaries topic")
    add("--dlq-topic", default="kill-events-dlq", help="name of the dead-letter topic")
    add("--timeout-s", type=float, default=_TIMEOUT_S,
        help=f"how long to wait for each broker answer (default {_TIMEOUT_S:g})")  # fmt: skip
    add_kafka_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Create and/or check; one JSON line per topic on stdout."""

    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    if args.partitions < 1 or args.replication_factor < 1 or args.consumer_replicas < 0:
        print("adr topics: partitions and replication must be >= 1", file=sys.stderr)
        return EXIT_USAGE
    if not args.timeout_s > 0:
        print("adr topics: --timeout-s must be > 0", file=sys.stderr)
        return EXIT_USAGE
    admin = None
    try:
        bootstrap = Broker.from_args(args).bootstrap_servers
        kafka = kafka_settings_from_args(args)
        conf: dict[str, Any] = kafka.apply({}, {"bootstrap.servers": bootstrap})
        conf["logger"] = KAFKA_LOG
        admin = AdminClient(conf)
        return _create_or_check(admin, args)
    except RuntimeConfigError as exc:
        print(f"adr topics: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (KafkaException, TimeoutError) as exc:
        print(f"adr topics: no broker answered: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_BROKER
    finally:
        if admin is not None:
            # An admin client hands librdkafka's lines to KAFKA_LOG only when polled.
            admin.poll(0)


def _create_or_check(admin: Any, args: argparse.Namespace) -> int:
    """One JSON line per topic on stdout; the exit status."""
    timeout = args.timeout_s
    brokers = len(admin.list_topics(timeout=timeout).brokers)
    wanted = specs(args, replication(args, brokers))
    states = _describe(admin, wanted, timeout)
    failed = False
    for spec in wanted:
        state = states.get(spec.name)
        status = "ok"
        if state is None and args.action == "create":
            error = _create(admin, spec, timeout)
            if error:
                print(
                    json.dumps(
                        {"topic": spec.name, "role": spec.role, "status": "failed", "error": error}
                    )
                )
                failed = True
                continue
            state = _describe_created(admin, spec, timeout)
            status = "created"
        found = problems(spec, state, args.consumer_replicas)
        if found:
            status, failed = ("missing" if state is None else "mismatch"), True
        line: dict[str, Any] = {"topic": spec.name, "role": spec.role, "status": status}
        if state is not None:
            line.update(partitions=state.partitions, replication=state.replication)
        print(json.dumps({**line, "problems": found}), flush=True)
    return EXIT_MISMATCH if failed else EXIT_OK


def _describe(admin: Any, wanted: list[TopicSpec], timeout: float) -> dict[str, TopicState]:
    from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

    metadata = admin.list_topics(timeout=timeout)
    present = [s.name for s in wanted if s.name in metadata.topics]
    resources = [ConfigResource("topic", name) for name in present]
    configs = admin.describe_configs(resources) if resources else {}
    states = {}
    for resource, future in configs.items():
        entries = future.result(timeout=timeout)
        topic = metadata.topics[resource.name]
        states[resource.name] = TopicState(
            partitions=len(topic.partitions),
            replication=min(len(p.replicas) for p in topic.partitions.values()),
            config={key: str(entry.value) for key, entry in entries.items()},
        )
    return states


def _describe_created(admin: Any, spec: TopicSpec, timeout: float) -> TopicState | None:
    """The new topic's state, once the broker's metadata lists it (it lags the create reply)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        state = _describe(admin, [spec], timeout).get(spec.name)
        if state is not None or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def _create(admin: Any, spec: TopicSpec, timeout: float) -> str:
    """Create `spec`; '' on success, else the broker's reason."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    topic = NewTopic(spec.name, num_partitions=spec.partitions,
                     replication_factor=spec.replication, config=dict(spec.config))  # fmt: skip
    future = admin.create_topics([topic], operation_timeout=timeout)[spec.name]
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        return str(exc.args[0].str() if exc.args else exc)
    return ""
