"""``adr stack up|down|status``: a local Kafka broker and redis-server that outlive the command.

``up`` prints ``KAFKA_BOOTSTRAP_SERVERS=...`` and ``REDIS_URL=...`` on stdout (a dotenv file:
``set -a; eval "$(adr stack up)"; set +a``); logs and progress go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from stack._errors import StackError
from stack._kafka import DEFAULT_HEAP_MB
from stack._local import LocalStack
from stack._ports import port_open
from stack._procs import pid_alive, pid_cmdline, pid_rss_bytes, stop_pid
from stack._provision import cache_root

EXIT_NOT_RUNNING = 3  # as LSB `status` does
_MARKERS = {"kafka": "kafka.Kafka", "redis": "redis-server"}


@dataclass
class _Server:
    name: str
    pid: int
    port: int
    log: str

    def running(self) -> bool:
        # Check the command line too: after a reboot the pid may belong to someone else.
        return pid_alive(self.pid) and any(_MARKERS[self.name] in a for a in pid_cmdline(self.pid))


def _state_path() -> Path:
    return Path(os.environ.get("ADR_STACK_STATE", cache_root() / "stack" / "state.json"))


def _load() -> tuple[list[_Server], Path | None]:
    path = _state_path()
    if not path.is_file():
        return [], None
    raw = json.loads(path.read_text())
    return [_Server(**s) for s in raw["servers"]], Path(raw["workdir"])


def _save(servers: list[_Server], workdir: Path) -> None:
    path = _state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"workdir": str(workdir), "servers": [asdict(s) for s in servers]}))
    tmp.replace(path)


def _env_lines(servers: list[_Server]) -> str:
    lines = []
    for s in servers:
        if s.name == "kafka":
            lines.append(f"KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:{s.port}")
        else:
            lines.append(f"REDIS_URL=redis://127.0.0.1:{s.port}/0")
    return "".join(line + "\n" for line in lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``adr stack``."""
    parser.epilog = (
        "exit status: 0 done (status: both running); 1 a server could not start or stop; "
        "2 usage; 3 status: not running"
    )
    parser.add_argument(
        "action",
        choices=("up", "down", "status"),
        help="start the servers in the background, stop them, or report them",
    )
    parser.add_argument(
        "--kafka-port", type=int, default=int(os.environ.get("ADR_KAFKA_PORT", "0")),
        help="broker port on 127.0.0.1 (env ADR_KAFKA_PORT; default: a free port)",
    )  # fmt: skip
    parser.add_argument(
        "--controller-port", type=int,
        default=int(os.environ.get("ADR_KAFKA_CONTROLLER_PORT", "0")),
        help="KRaft controller port (env ADR_KAFKA_CONTROLLER_PORT; default: a free port)",
    )  # fmt: skip
    parser.add_argument(
        "--redis-port", type=int, default=int(os.environ.get("ADR_REDIS_PORT", "0")),
        help="redis-server port on 127.0.0.1 (env ADR_REDIS_PORT; default: a free port)",
    )  # fmt: skip
    parser.add_argument(
        "--heap-mb", type=int, default=int(os.environ.get("ADR_KAFKA_HEAP_MB", DEFAULT_HEAP_MB)),
        help=f"broker heap in MiB (env ADR_KAFKA_HEAP_MB; default {DEFAULT_HEAP_MB})",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Dispatch ``up``, ``down`` or ``status``."""
    try:
        if args.action == "up":
            return _up(args)
        if args.action == "down":
            return _down()
        return _status()
    except StackError as e:
        print(f"adr stack: {e}", file=sys.stderr)
        return 1


def _up(args: argparse.Namespace) -> int:
    servers, _ = _load()
    if servers and all(s.running() for s in servers):
        print("adr stack: already running", file=sys.stderr)
        sys.stdout.write(_env_lines(servers))
        return 0
    if servers:
        _down()  # half-dead leftovers: clear them before starting afresh
    _state_path().parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="adr-stack-", dir=_state_path().parent))
    stack = LocalStack(
        workdir,
        kafka_port=args.kafka_port,
        controller_port=args.controller_port,
        redis_port=args.redis_port,
        heap_mb=args.heap_mb,
        tied_to_parent=False,
    )
    started = time.monotonic()
    try:
        stack.redis_url()
        stack.kafka_bootstrap()
    except BaseException:
        stack.kafka.stop()
        stack.redis.stop()
        print(f"adr stack: logs kept in {workdir}", file=sys.stderr)
        raise
    servers = [
        _Server("kafka", stack.kafka.pid or 0, stack.kafka.port, str(stack.kafka.log_path)),
        _Server("redis", stack.redis.pid or 0, stack.redis.port, str(stack.redis.log_path)),
    ]
    _save(servers, workdir)
    print(
        f"adr stack: up in {time.monotonic() - started:.1f} s; logs in {workdir}; "
        f"stop with `adr stack down`",
        file=sys.stderr,
    )
    sys.stdout.write(_env_lines(servers))
    return 0


def _down() -> int:
    servers, workdir = _load()
    if not servers:
        print("adr stack: nothing to stop", file=sys.stderr)
    for s in servers:
        if s.running():
            clean = stop_pid(s.pid, timeout=30)
            print(f"adr stack: stopped {s.name} (pid {s.pid}{'' if clean else ', killed'})",
                  file=sys.stderr)  # fmt: skip
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)
    _state_path().unlink(missing_ok=True)
    return 0


def _status() -> int:
    servers, _ = _load()
    running = [s for s in servers if s.running() and port_open(s.port)]
    for s in servers:
        rss = pid_rss_bytes(s.pid) if s in running else None
        state = f"running, pid {s.pid}, rss {rss / 2**20:.0f} MiB" if rss else "not running"
        print(f"adr stack: {s.name} on 127.0.0.1:{s.port}: {state}; log {s.log}", file=sys.stderr)
    if not servers or len(running) != len(servers):
        if not servers:
            print("adr stack: not running", file=sys.stderr)
        return EXIT_NOT_RUNNING
    sys.stdout.write(_env_lines(running))
    return 0
