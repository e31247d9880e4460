"""JSON-lines logging to stderr for every `adr` process: ts, level, logger, msg, extra fields."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any, Final

from runtime import redact_text

REPEAT_INTERVAL_S: Final = 10.0
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object; `extra={...}` fields become top-level keys."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        # The last line of defence: a URL or setting with a password that reached a log call
        # (an exception's text, say) leaves the process masked.
        return redact_text(json.dumps(out, default=str))


LEVELS: Final = ("debug", "info", "warning", "error")
LEVEL_ENV: Final = "ADR_LOG_LEVEL"


def add_log_level_argument(parser: Any) -> None:
    """`--log-level` (env ADR_LOG_LEVEL; default info), for every `adr` subcommand."""
    import os

    default = os.environ.get(LEVEL_ENV, "info").lower()
    parser.add_argument(
        "--log-level",
        choices=LEVELS,
        default=default if default in LEVELS else "info",
        help=f"least severe log line written to stderr (env {LEVEL_ENV}; default info)",
    )


def setup(level: int = logging.INFO) -> None:
    """Route the root logger to stderr as JSON lines (idempotent: the first call's level holds,
    so `adr` sets the level from --log-level before a subcommand calls this again)."""
    root = logging.getLogger()
    for handler in root.handlers:
        if isinstance(handler.formatter, JsonFormatter):
            return
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A StreamHandler on whatever `sys.stderr` is when it writes, not the one it was made with:
    where sys.stderr is replaced (pytest's capture between tests, a daemonizing wrapper), the
    lines follow it instead of failing on a closed stream ("--- Logging error ---")."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass  # always the current sys.stderr


class RepeatThrottle(logging.Filter):
    """Passes the first line of a kind, then at most one per `interval_s`, carrying how many of
    that kind it held back (`repeated`). Debug lines, asked for explicitly, always pass.

    Meant for the loggers of Kafka clients: while a broker is down librdkafka retries its
    connection every few tens of milliseconds and reports each failure twice (a log line and an
    error callback): unthrottled, that is about 40 lines a second for as long as it lasts. A kind
    is the line's level and template with its first two arguments (librdkafka's facility and
    client name) and its `code`, if any.
    """

    def __init__(
        self, interval_s: float = REPEAT_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._clock = clock
        self._kinds: dict[tuple[object, ...], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno <= logging.DEBUG:
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        kind = (record.levelno, record.msg, *args[:2], getattr(record, "code", None))
        now = self._clock()
        last, held = self._kinds.get(kind, (float("-inf"), 0))
        if now - last < self._interval_s:
            self._kinds[kind] = (last, held + 1)
            return False
        self._kinds[kind] = (now, 0)
        if held:
            record.repeated = held
        return True


def kafka_logger(name: str) -> logging.Logger:
    """The logger a Kafka client's `logger` setting gets: librdkafka's lines as JSON lines like
    every other, with a RepeatThrottle (attached once, however often this is called)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RepeatThrottle) for f in logger.filters):
        logger.addFilter(RepeatThrottle())
    return logger
