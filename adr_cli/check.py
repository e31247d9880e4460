"""`adr check`: judge kill-event messages as the consumer would, and say why each is rejected.

For publishers, to test their bytes before production (a file of one raw message, or hex lines
on stdin), and for SREs, to read a topic sample, the dead letters included (their `reason` and
`source_*` headers are printed with them). One JSON line per message on stdout: where it came
from, `verdict` (`valid`/`invalid`), `reason` and `detail` (the dead-letter reason the consumer
would give it now), `content` (the msgpack decoded untyped, in the JSON form of
schemas/vectors: `{"$bin": hex}`, `{"$float": x}`, ...; null if not msgpack) and, for a topic,
`key` and `headers`. Nothing is committed or written anywhere: a topic is read with a
throwaway consumer group and manual assignment.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from adr_cli._errors import CliError
from runtime import add_kafka_arguments, kafka_settings_from_args, redact_text
from runtime.kafka_settings import Broker
from runtime.logs import kafka_logger
from schemas import (
    DEFAULT_MAX_AGE_MS,
    DEFAULT_MAX_FUTURE_MS,
    Limits,
    SchemaError,
    decode_kill_event,
)
from schemas.vectors.generate import meaning, unpack

EXIT_VALID: Final = 0
EXIT_INVALID: Final = 1
EXIT_USAGE: Final = 2
EXIT_UNREADABLE: Final = 3
EXIT_EMPTY: Final = 4
_METADATA_TIMEOUT_S: Final = 15.0
_DEFAULT_COUNT: Final = 10
_KAFKA_LOG: Final = kafka_logger("adr.check.kafka")


@dataclass(frozen=True, slots=True)
class Sample:
    """One message to judge: its bytes and where it came from (printed with the verdict)."""

    raw: bytes
    source: dict[str, Any]
    key: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def verdict(sample: Sample, now_ms: int, limits: Limits) -> dict[str, Any]:
    """The JSON line for one message: source, verdict, reason, detail, content (+ key, headers)."""
    try:
        content = meaning(unpack(sample.raw))
    except ValueError:
        content = None
    line: dict[str, Any] = {**sample.source}
    try:
        decode_kill_event(sample.raw, now_ms, limits)
        line.update(verdict="valid", reason=None, detail=None)
    except SchemaError as exc:
        line.update(verdict="invalid", reason=exc.reason.value, detail=exc.detail)
    line["content"] = content
    if "topic" in sample.source:
        line["key"] = None if sample.key is None else sample.key.decode("utf-8", "replace")
        line["headers"] = {
            name: None if value is None else value.decode("utf-8", "replace")
            for name, value in sample.headers
        }
    return line


def from_hex_lines(lines: Iterable[str], name: str) -> Iterator[Sample]:
    """One message per line of hex; blank lines and lines starting with '#' are skipped.

    Raises ValueError naming the line when one is not hex."""
    for number, text in enumerate(lines, 1):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            raw = bytes.fromhex(stripped)
        except ValueError:
            raise ValueError(f"{name}:{number}: not hex") from None
        yield Sample(raw, {"file": name, "line": number})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `adr check`."""
    parser.epilog = (
        "Input: FILE... (each one raw message), or stdin (one raw message; with --hex one "
        "message per line), or --topic. Exit status: 0 every message valid; 1 at least one "
        "invalid; 2 usage (bad flags, a line that is not hex); 3 a file or the broker could "
        "not be read; 4 nothing to check (no message in the input or read from --topic). "
        "The event-time window is the consumer's own default unless --max-age-s/"
        "--max-future-s say otherwise; judge the bytes written for a vector of "
        "schemas/vectors with --now-ms set to the file's now_ms."
    )
    add = parser.add_argument
    add("files", nargs="*", metavar="FILE",
        help="files to check, each one raw message ('-' = stdin; default stdin)")  # fmt: skip
    add("--hex", action="store_true",
        help="input is hex, one message per line ('#' lines and blank lines skipped)")  # fmt: skip
    add("--topic", default=None, help="check a sample of this topic instead of files")
    add("--count", type=int, default=_DEFAULT_COUNT,
        help=f"messages to read from --topic (default {_DEFAULT_COUNT})")  # fmt: skip
    add("--start", choices=("earliest", "latest"), default="earliest",
        help="read each partition's oldest messages, or its newest --count "
        "(default earliest)")  # fmt: skip
    add("--timeout-s", type=float, default=30.0,
        help="give up reading --topic after this long (default 30)")  # fmt: skip
    Broker.add_arguments(parser)
    add_kafka_arguments(parser)
    add("--now-ms", type=int, default=None,
        help="judge event times against this clock, ms (default: now; e.g. a vectors file's "
        "now_ms)")  # fmt: skip
    add("--max-age-s", type=float, default=DEFAULT_MAX_AGE_MS / 1000,
        help="oldest accepted event time before now, s (default: the consumer's, "
        f"{_days(DEFAULT_MAX_AGE_MS)})")  # fmt: skip
    add("--max-future-s", type=float, default=DEFAULT_MAX_FUTURE_MS / 1000,
        help="newest accepted event time after now, s (default: the consumer's, "
        f"{DEFAULT_MAX_FUTURE_MS // 1000})")  # fmt: skip


def _days(ms: int) -> str:
    """`604800 = 7 days`: the default age window in seconds, as the consumer's help says it."""
    seconds = ms // 1000
    return f"{seconds} = {seconds / 86_400:g} days" if seconds % 86_400 == 0 else str(seconds)


def run(args: argparse.Namespace) -> int:
    """Judge every message; one JSON line each on stdout; a summary line on stderr."""
    if args.count < 1 or args.max_age_s < 0 or args.max_future_s < 0:
        print("adr check: --count must be >= 1 and the window >= 0", file=sys.stderr)
        return EXIT_USAGE
    if args.topic and (args.files or args.hex):
        print("adr check: give FILEs/--hex or --topic, not both", file=sys.stderr)
        return EXIT_USAGE
    limits = Limits(round(args.max_age_s * 1000), round(args.max_future_s * 1000))
    try:
        samples = _topic_samples(args) if args.topic else _file_samples(args)
    except ValueError as exc:  # RuntimeConfigError is a ValueError
        print(f"adr check: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"adr check: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    except _BrokerError as exc:
        print(f"adr check: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    counts = {"valid": 0, "invalid": 0}
    for sample in samples:
        now_ms = time.time_ns() // 1_000_000 if args.now_ms is None else args.now_ms
        line = verdict(sample, now_ms, limits)
        counts[line["verdict"]] += 1
        sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    print(json.dumps({"checked": sum(counts.values()), **counts}), file=sys.stderr)
    if not sum(counts.values()):
        # An empty pipe (an encoder that printed nothing) must not pass as "all valid".
        print("adr check: nothing to check: no message in the input", file=sys.stderr)
        return EXIT_EMPTY
    return EXIT_INVALID if counts["invalid"] else EXIT_VALID


def _file_samples(args: argparse.Namespace) -> list[Sample]:
    samples: list[Sample] = []
    for name in args.files or ["-"]:
        if args.hex:
            if name == "-":
                samples.extend(from_hex_lines(sys.stdin, "-"))
            else:
                with open(name, encoding="utf-8") as f:
                    samples.extend(from_hex_lines(f, name))
        else:
            raw = sys.stdin.buffer.read() if name == "-" else _read_bytes(name)
            samples.append(Sample(raw, {"file": name}))
    return samples


def _read_bytes(name: str) -> bytes:
    with open(name, "rb") as f:
        return f.read()


class _BrokerError(CliError):
    """The topic could not be read (no broker, no such topic)."""


def _topic_samples(args: argparse.Namespace) -> list[Sample]:
    """Up to --count messages of --topic, by manual assignment (no group offsets touched)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    bootstrap = Broker.from_args(args).bootstrap_servers
    kafka = kafka_settings_from_args(args)
    ours = {
        "group.id": f"adr-check-{os.getpid()}-{time.monotonic_ns()}",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
    }
    try:
        consumer = Consumer(
            {**kafka.apply(ours, {"bootstrap.servers": bootstrap}), "logger": _KAFKA_LOG}
        )
    except KafkaException as exc:
        raise _BrokerError(redact_text(str(exc))) from None
    try:
        try:
            meta = consumer.list_topics(args.topic, timeout=_METADATA_TIMEOUT_S)
        except KafkaException as exc:
            raise _BrokerError(f"no broker answered: {redact_text(str(exc))}") from None
        topic = meta.topics.get(args.topic)
        if topic is None or topic.error is not None or not topic.partitions:
            raise _BrokerError(f"topic {args.topic!r} not found")
        assignment = []
        for p in sorted(topic.partitions):
            low, high = consumer.get_watermark_offsets(
                TopicPartition(args.topic, p), timeout=_METADATA_TIMEOUT_S
            )
            start = low if args.start == "earliest" else max(low, high - args.count)
            if start < high:
                assignment.append(TopicPartition(args.topic, p, start))
        return _read(consumer, assignment, args.count, args.timeout_s)
    finally:
        consumer.close()


def _read(consumer: Any, assignment: list[Any], count: int, timeout_s: float) -> list[Sample]:
    """Read the assigned partitions until `count` messages or each partition's end."""
    from confluent_kafka import KafkaError

    if not assignment:
        return []
    consumer.assign(assignment)
    pending = {tp.partition for tp in assignment}
    samples: list[Sample] = []
    deadline = time.monotonic() + timeout_s
    while pending and len(samples) < count and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is None:
            continue
        if m.error() is not None:
            if m.error().code() == KafkaError._PARTITION_EOF:
                pending.discard(m.partition())
                continue
            raise _BrokerError(redact_text(str(m.error())))
        samples.append(
            Sample(
                m.value() or b"",
                {"topic": m.topic(), "partition": m.partition(), "offset": m.offset()},
                m.key(),
                [(k, v if v is None else bytes(v)) for k, v in (m.headers() or [])],
            )
        )
    return samples
