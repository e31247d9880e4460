"""`adr` entry point: dispatches to one module per subcommand.

Each subcommand module exposes ``add_arguments(parser)`` and ``run(args) -> int`` and is imported
only when its subcommand is used, so ``adr replay`` never imports Kafka or Redis clients.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import logging
import sys
from collections.abc import Sequence

from runtime import compiled, logs

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "replay": ("adr_cli.replay", "rate a file of kill events offline with the engine"),
    "rebuild": ("adr_cli.rebuild", "rebuild a pool from the kill-events log (fresh namespace)"),
    "consume": ("consumer.cli", "run the Kafka consumer: kill events -> ratings in Redis"),
    "simulate": ("loadgen.cli", "play game servers: publish simulated kill events"),
    "calibrate": ("tierjob.cli", "take the population snapshot and publish tier boundaries"),
    "leaderboard": ("leaderboard.cli", "read the live leaderboard from Redis"),
    "serve": ("serve.cli", "serve the leaderboard HTTP API and page (read-only)"),
    "season": ("serve.season_cli", "close a season: archive its standings, start the next"),
    "history": ("serve.history_cli", "keep each player's recent rating changes for adr serve"),
    "meta": ("serve.meta_cli", "set, get, delete or prune players' metadata (display name...)"),
    "evaluate": ("evaluation.cli", "run the paper's Section 10 protocol against baselines"),
    "check": ("adr_cli.check", "judge kill-event messages (file, hex lines, topic sample, DLQ)"),
    "topics": ("adr_cli.topics", "create or check the four Kafka topics and their settings"),
    "stack": ("stack.cli", "start/stop a local Kafka broker and Redis server (no Docker)"),
    "demo": ("stack.demo", "run the whole pipeline end to end with a live leaderboard"),
}

EXIT_USAGE = 2
# subcommand -> (the optional dependencies it needs, the extra that installs them)
EXTRAS: dict[str, tuple[frozenset[str], str]] = {
    "evaluate": (frozenset({"numpy", "matplotlib", "trueskill"}), "eval"),
}


class MissingExtra(SystemExit):
    """A subcommand whose optional dependencies are not installed: a message, exit status 2."""

    def __init__(self, name: str, missing: str) -> None:
        extra = EXTRAS[name][1]
        print(
            f"adr {name}: needs the '{extra}' extra ({missing} is not installed): "
            f"pip install 'adr-stream[{extra}]'",
            file=sys.stderr,
        )
        super().__init__(EXIT_USAGE)


DISTRIBUTION = "adr-stream"


def version() -> str:
    """`adr-stream X.Y.Z (compiled build)`: the installed distribution's version (pyproject's,
    via its metadata) and which build runs (runtime/compiled.py: compiled, or the pure sources)."""
    build = "compiled build" if compiled.state() == "compiled" else "pure build"
    try:
        return f"{DISTRIBUTION} {importlib.metadata.version(DISTRIBUTION)} ({build})"
    except importlib.metadata.PackageNotFoundError:  # the sources on PYTHONPATH, not installed
        return f"{DISTRIBUTION} (not installed: no package metadata; {build})"


def _add_version(parser: argparse.ArgumentParser) -> None:
    """--version on this parser and on every subcommand under it (`adr leaderboard top`)."""
    if "--version" not in parser._option_string_actions:
        parser.add_argument(
            "--version", action="version", version=version(), help="print the version and exit"
        )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _add_version(child)


class NotInThisInstall(SystemExit):
    """A subcommand whose package this installation leaves out (the service image carries no
    stack/, loadgen/ or evaluation/): a message, exit status 2, no traceback."""

    def __init__(self, name: str, package: str) -> None:
        print(
            f"adr {name}: not in this installation (no '{package}' package; the service image "
            "carries consume, calibrate, leaderboard, check, topics and replay): run it from a "
            "source install (pip install -e '.[dev]') or, for simulate, the image's "
            "'simulator' target",
            file=sys.stderr,
        )
        super().__init__(EXIT_USAGE)


def _load(module_name: str):  # type: ignore[no-untyped-def]
    return importlib.import_module(module_name)


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adr",
        description="adr-stream: Adaptive Dynamic Rating for free-for-all arenas.",
    )
    _add_version(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        _add_version(sp)
        # Import only the chosen subcommand's module: keeps `adr --help` and `adr replay` light.
        if name == wanted:
            try:
                module = _load(module_name)
            except ModuleNotFoundError as exc:
                top = (exc.name or "").partition(".")[0]
                if name in EXTRAS and top in EXTRAS[name][0]:
                    raise MissingExtra(name, top) from exc
                if top == module_name.partition(".")[0]:
                    raise NotInThisInstall(name, top) from exc
                raise
            module.add_arguments(sp)
            _add_version(sp)
            logs.add_log_level_argument(sp)
            sp.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    compiled.activate()  # ADR_COMPILED=0 before any subcommand imports engine or consumer
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    logs.setup(getattr(logging, args.log_level.upper()))
    try:
        return int(args._run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
