"""``adr demo``: the whole pipeline end to end, with a live leaderboard on stdout.

Servers: ``KAFKA_BOOTSTRAP_SERVERS`` / ``REDIS_URL`` (or their ``_FILE`` forms) when set, else a
local stack started here.
Then it creates the topics and runs ``adr simulate`` (game servers), ``adr consume`` (ratings)
``adr calibrate --every`` (tiers), ``adr history`` (rating histories) and ``adr serve`` (the
leaderboard API and page, whose address it prints on stdout) as child processes, and prints
``adr leaderboard top N`` every few seconds until Ctrl-C, SIGTERM or ``--duration``. Everything
it started, it stops. Children's logs (JSON lines) go to files whose paths are printed on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Final

from redis_layout import Keys
from runtime import (
    KafkaSettings,
    RuntimeConfigError,
    add_kafka_arguments,
    connect,
    env_value,
    kafka_settings_from_args,
    redact_url,
)
from stack._errors import StackError
from stack._local import LocalStack
from stack._ports import LOOPBACK, free_port
from stack._procs import log_tail, spawn, stop_pid
from stack._topics import TopicAdmin
from stack.secured import SecuredStack

EXIT_OK = 0
EXIT_FAILED = 1
_REDIS_ROLE = {
    "consume": "consumer",
    "calibrate": "tierjob",
    "serve": "reader",
    "history": "history",
}
"""Which ACL user's Redis URL each child gets (deploy/redis/acl-users.acl)."""
_CHILD_STOP_TIMEOUT_S = 20.0


@dataclass
class _Child:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path


class _Stop(BaseException):
    """Raised in the main loop by SIGTERM/SIGHUP, like KeyboardInterrupt is by SIGINT (and like
    it not an Exception, so that no `except Exception` on the way swallows the stop)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``adr demo``."""
    parser.epilog = (
        "exit status: 0 stopped by Ctrl-C, SIGTERM or --duration; 1 a server or a child process "
        "failed (its log is kept and named)"
    )
    add = parser.add_argument
    add("--duration", type=float, default=0.0, help="seconds to run; 0 = until Ctrl-C (default)")
    add("--namespace", default=os.environ.get("ADR_NAMESPACE", "adr-demo"),
        help="Redis namespace (env ADR_NAMESPACE; default adr-demo)")  # fmt: skip
    add("--topic-prefix", default="", help="prefix for the four topic names (default none)")
    add("--partitions", type=int, default=4, help="partitions of the kill-events topic")
    add("--arenas", type=int, default=20, help="simulated arenas")
    add("--players", type=int, default=1000, help="simulated players")
    add("--rate", type=float, default=300.0, help="simulated kill events per second")
    add("--seed", type=int, default=1, help="seed of the simulation")
    add("--secured", action="store_true", help="run against a local secured stack: Kafka over "
        "SASL_SSL (SCRAM), Redis over TLS with client certificates and ACL users")  # fmt: skip
    add("--calibrate-every", type=float, default=10.0, help="seconds between tier calibrations")
    add("--refresh", type=float, default=2.0, help="seconds between leaderboard refreshes")
    add("--top", type=int, default=10, help="rows of the leaderboard")
    add_kafka_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Run the demo; 0 when stopped by the user or ``--duration``, 1 when a part failed."""
    workdir = Path(tempfile.mkdtemp(prefix="adr-demo-"))
    local: LocalStack | None = None
    children: list[_Child] = []
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise _Stop(signum)

    for sig in previous:
        signal.signal(sig, on_signal)
    status = EXIT_FAILED
    secured: SecuredStack | None = None
    try:
        kafka = kafka_settings_from_args(args)
        bootstrap, redis_url = servers_from_env(os.environ)
        urls = dict.fromkeys(("consumer", "tierjob", "reader", "history"), redis_url)
        if args.secured:
            _say("starting a secured Kafka broker (SASL_SSL) and redis-server (TLS, ACL) ...")
            secured = SecuredStack(workdir / "secured", args.namespace)
            secured.start()
            bootstrap = secured.bootstrap
            kafka = KafkaSettings({**kafka.settings, **secured.kafka_settings()})
            urls = {role: secured.redis_url(role) for role in urls}
        elif not (bootstrap and redis_url):
            local = LocalStack(workdir / "stack")
            _say("starting a local Kafka broker and redis-server (no Docker) ...")
            bootstrap = bootstrap or local.kafka_bootstrap()
            redis_url = redis_url or local.redis_url()
            urls = dict.fromkeys(urls, redis_url)
            for name, pid in (("kafka", local.kafka.pid), ("redis-server", local.redis.pid)):
                if pid is not None:
                    _say(f"{name}: pid {pid}, logs in {local.workdir}")
        _say(f"Kafka {bootstrap}, Redis {redact_url(urls['consumer'])}, "
             f"namespace {args.namespace!r}")  # fmt: skip
        topics = _create_topics(bootstrap, kafka, args)
        metrics_port = free_port()
        secrets = _write_secrets(workdir / "secrets", kafka, urls)
        children = _start_children(args, bootstrap, secrets, topics, workdir / "logs", metrics_port)
        status = _watch(args, urls["reader"], children, metrics_port)
    except (KeyboardInterrupt, _Stop):
        status = EXIT_OK
    except (StackError, RuntimeConfigError) as e:
        _say(f"error: {e}")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        with contextlib.suppress(KeyboardInterrupt, _Stop):
            _stop_all(children, local)
            if secured is not None:
                secured.stop()
        if status == EXIT_OK:
            with contextlib.suppress(OSError):
                _remove_tree(workdir)
        else:
            _say(f"logs kept in {workdir}")
    return status


def _say(text: str) -> None:
    print(f"adr demo: {text}", file=sys.stderr, flush=True)


def _topic_names(args: argparse.Namespace) -> dict[str, str]:
    p = args.topic_prefix
    return {
        "kill": f"{p}kill-events",
        "rating": f"{p}rating-changes",
        "tier": f"{p}tier-boundaries",
        "dlq": f"{p}kill-events-dlq",
    }


def _create_topics(
    bootstrap: str, kafka: KafkaSettings, args: argparse.Namespace
) -> dict[str, str]:
    names = _topic_names(args)
    admin = TopicAdmin(bootstrap, kafka.settings)
    admin.create(names["kill"], partitions=args.partitions, exist_ok=True)
    admin.create(names["rating"], partitions=args.partitions, exist_ok=True)
    admin.create(names["dlq"], partitions=1, exist_ok=True)
    admin.create(names["tier"], partitions=1, config={"cleanup.policy": "compact"}, exist_ok=True)
    return names


KAFKA_ENV: Final = "KAFKA_BOOTSTRAP_SERVERS"
REDIS_ENV: Final = "REDIS_URL"
_SERVER_VARIABLES: Final = frozenset({
    KAFKA_ENV, f"{KAFKA_ENV}_FILE", REDIS_ENV, f"{REDIS_ENV}_FILE", "ADR_KAFKA_CONFIG"
})  # fmt: skip
"""The operator's server variables, not passed to the children: they get the demo's own (a
child given both KAFKA_BOOTSTRAP_SERVERS and its _FILE form would refuse to start)."""


def servers_from_env(environ: Mapping[str, str]) -> tuple[str, str]:
    """(Kafka bootstrap servers, Redis URL) as every `adr` command reads them: the variable, or
    the file its `_FILE` form names (runtime.env_value; RuntimeConfigError where both are set
    or the file cannot be read); "" for one not set, which the demo's local stack then serves."""
    bootstrap = env_value(environ, KAFKA_ENV) or ""
    redis_url = env_value(environ, REDIS_ENV) or ""
    return bootstrap.strip(), redis_url.strip()


def _write_secrets(folder: Path, kafka: KafkaSettings, urls: dict[str, str]) -> dict[str, Path]:
    """The children's credentials as 0600 files (never argv, which `ps` shows to everyone)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    files = {"kafka": folder / "kafka.properties"}
    contents = {"kafka": "".join(f"{k}={v}\n" for k, v in kafka.settings.items())}
    for role, url in urls.items():
        files[role] = folder / f"{role}-redis-url"
        contents[role] = url + "\n"
    for role, path in files.items():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(contents[role])
    return files


def _start_children(
    args: argparse.Namespace,
    bootstrap: str,
    secrets: dict[str, Path],
    topics: dict[str, str],
    logs: Path,
    consume_port: int,
) -> list[_Child]:
    env = {k: v for k, v in os.environ.items() if k not in _SERVER_VARIABLES}
    env.update({
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "ADR_KAFKA_CONFIG_FILE": str(secrets["kafka"]),
        "ADR_NAMESPACE": args.namespace,
        "PYTHONUNBUFFERED": "1",
    })  # fmt: skip
    # -P: the installed package runs (the compiled build under scripts/demo), not a source tree
    # that happens to be the current directory.
    adr = [sys.executable, "-P", "-m", "adr_cli"]
    calibrate_port = free_port()
    while calibrate_port == consume_port:  # free_port may hand the same closed port out twice
        calibrate_port = free_port()
    serve_port = free_port()
    while serve_port in (consume_port, calibrate_port):
        serve_port = free_port()
    commands = {
        "consume": [
            *adr, "consume", "--namespace", args.namespace, "--topic", topics["kill"],
            "--rating-topic", topics["rating"], "--dlq-topic", topics["dlq"],
            "--group", f"{args.namespace}-consumer",
            "--metrics-port", str(consume_port), "--metrics-host", LOOPBACK,
        ],
        "calibrate": [
            *adr, "calibrate", "--namespace", args.namespace, "--topic", topics["tier"],
            "--every", str(args.calibrate_every),
            "--metrics-port", str(calibrate_port), "--metrics-host", LOOPBACK,
        ],
        "history": [
            *adr, "history", "--namespace", args.namespace, "--topic", topics["rating"],
            "--group", f"{args.namespace}-history", "--metrics-port", "0",
        ],
        "serve": [
            *adr, "serve", "--namespace", args.namespace,
            "--host", LOOPBACK, "--port", str(serve_port),
        ],
        "simulate": [
            *adr, "simulate", "--topic", topics["kill"],
            "--arenas", str(args.arenas), "--players", str(args.players),
            "--rate", str(args.rate), "--events", "0", "--seed", str(args.seed),
            "--partitions", str(args.partitions),
        ],
    }  # fmt: skip
    children = []
    for name, argv in commands.items():
        log = logs / f"{name}.log"
        child_env = {**env, "REDIS_URL_FILE": str(secrets.get(_REDIS_ROLE.get(name, ""), ""))}
        if name not in _REDIS_ROLE:
            child_env.pop("REDIS_URL_FILE")
        children.append(_Child(name, spawn(argv, log, tied_to_parent=True, env=child_env), log))
        _say(f"{name}: pid {children[-1].proc.pid}, log {log}")
    _say(f"metrics: consumer http://{LOOPBACK}:{consume_port}/metrics, "
         f"tier job http://{LOOPBACK}:{calibrate_port}/metrics")  # fmt: skip
    print(f"leaderboard page and API: http://{LOOPBACK}:{serve_port}/", flush=True)
    return children


def _watch(
    args: argparse.Namespace, redis_url: str, children: list[_Child], metrics_port: int
) -> int:
    started = time.monotonic()
    deadline = started + args.duration if args.duration > 0 else None
    clear = sys.stdout.isatty()
    client = connect(redis_url, args.namespace)
    try:
        while True:
            for child in children:
                code = child.proc.poll()
                if code is not None:
                    _say(f"{child.name} exited with {code}; last lines of {child.log}:")
                    print(log_tail(child.log, 2000), file=sys.stderr)
                    return EXIT_FAILED
            # the count first, then the board: a board read before the count could be empty
            # under "N placed players" in the first frames (players are only ever added to it,
            # but for a new season's start)
            placed = client.zcard(Keys(args.namespace).lb)
            board = _leaderboard(args, redis_url)
            header = (
                f"adr-stream demo: {time.monotonic() - started:5.0f} s, "
                f"{placed} placed players, namespace {args.namespace} (Ctrl-C stops)\n"
                f"{_consumer_counts(metrics_port)}"
            )
            out = ("\x1b[H\x1b[2J" if clear else "\n") + header + "\n" + board
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
            sys.stdout.flush()
            if deadline is not None and time.monotonic() >= deadline:
                return EXIT_OK
            pause = args.refresh
            if deadline is not None:
                pause = min(pause, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)
    finally:
        client.close()


_COUNTERS = (
    ("adr_events_consumed_total", "consumed"),
    ("adr_events_counted_total", "rated"),
    ("adr_events_duplicate_total", "duplicates"),
    ("adr_events_dead_lettered_total", "dead-lettered"),
)


def _consumer_counts(port: int) -> str:
    """One line of the consumer's own counters, read from its Prometheus endpoint."""
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/metrics", timeout=1) as r:
            text = r.read().decode()
    except OSError:
        return "events: (consumer metrics not up yet)"
    totals = dict.fromkeys((name for name, _ in _COUNTERS), 0.0)
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in totals:
            totals[name] += float(line.rsplit(" ", 1)[1])
    return "events: " + ", ".join(f"{totals[n]:.0f} {label}" for n, label in _COUNTERS)


def _leaderboard(args: argparse.Namespace, redis_url: str) -> str:
    """What ``adr leaderboard top N`` prints, run in-process (its module's own entry point)."""
    from leaderboard import cli as leaderboard

    parser = argparse.ArgumentParser(prog="adr leaderboard")
    leaderboard.add_arguments(parser)
    lb_args = parser.parse_args(
        ["--redis-url", redis_url, "--namespace", args.namespace, "top", str(args.top)]
    )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = leaderboard.run(lb_args)
    return out.getvalue() if code == 0 else f"(leaderboard: {err.getvalue().strip()})\n"


def _stop_all(children: list[_Child], local: LocalStack | None) -> None:
    # The load first, then the consumer (it commits what it applied), then the tier job.
    order = {"simulate": 0, "serve": 1, "consume": 2, "history": 3, "calibrate": 4}
    for child in sorted(children, key=lambda c: order.get(c.name, 9)):
        if child.proc.poll() is None:
            clean = stop_pid(child.proc.pid, timeout=_CHILD_STOP_TIMEOUT_S, popen=child.proc)
            _say(f"stopped {child.name}" + ("" if clean else " (killed)"))
    if local is not None:
        local.stop()
        _say("stopped the local Kafka broker and redis-server")


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
