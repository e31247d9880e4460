"""Every flag of every subcommand has a one-line description, and every subcommand documents its
exit status, as `--help` shows them (the parsers `adr` really builds)."""

from __future__ import annotations

import argparse
import re

import pytest

from adr_cli.main import SUBCOMMANDS, build_parser

_ONLY_ENV_AND_DEFAULT = re.compile(r"^\s*\([^)]*\)\s*$")


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser([name])
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices[name]


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_flag_says_what_it_is_for(name: str) -> None:
    try:
        parser = _subparser(name)
    except ModuleNotFoundError as exc:  # an optional extra (evaluate) not installed here
        pytest.skip(str(exc))
    for sub in _parsers(parser):
        for action in sub._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            where = f"{sub.prog} {action.option_strings or action.dest}"
            assert action.help, f"{where}: no help"
            assert not _ONLY_ENV_AND_DEFAULT.match(action.help), f"{where}: no description"


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_subcommand_documents_its_exit_status(name: str) -> None:
    try:
        parser = _subparser(name)
    except ModuleNotFoundError as exc:
        pytest.skip(str(exc))
    assert re.search(r"exit (status|codes)", parser.epilog or "", re.IGNORECASE), name


def test_a_missing_extra_is_named_not_a_traceback() -> None:
    import subprocess
    import sys

    probe = (
        "import sys; sys.modules['numpy'] = None; sys.modules['matplotlib'] = None\n"
        "from adr_cli.main import main\n"
        "sys.exit(main(['evaluate', '--out', '/tmp/x']))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 2
    assert "pip install 'adr-stream[eval]'" in done.stderr
    assert "Traceback" not in done.stderr


def _leaf_commands() -> list[list[str]]:
    """Every command line prefix `adr` accepts: each subcommand and its own subcommands."""
    found: list[list[str]] = [[]]
    for name in sorted(SUBCOMMANDS):
        try:
            parser = _subparser(name)
        except ModuleNotFoundError:
            continue
        found.append([name])
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found.extend([name, child] for child in action.choices)
    return found


@pytest.mark.parametrize("command", _leaf_commands(), ids=" ".join)
def test_every_command_prints_the_package_version(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`adr --version`, `adr check --version`, `adr topics create --version`...: the installed
    distribution's version from its metadata, on stdout, exit 0."""
    import importlib.metadata

    argv = [*command, "--version"]
    with pytest.raises(SystemExit) as exited:
        build_parser(argv).parse_args(argv)
    assert exited.value.code == 0
    expected = importlib.metadata.version("adr-stream")
    out = capsys.readouterr().out.strip()
    assert out in (f"adr-stream {expected} (compiled build)", f"adr-stream {expected} (pure build)")


def test_the_version_is_pyprojects() -> None:
    import importlib.metadata
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert importlib.metadata.version("adr-stream") == pyproject["project"]["version"]


@pytest.mark.parametrize("name", ["simulate", "stack", "evaluate"])
def test_a_development_command_left_out_of_the_image_is_named_not_a_traceback(name: str) -> None:
    """The service image has no stack/, loadgen/, evaluation/: `adr simulate` there says so."""
    import subprocess
    import sys

    top = SUBCOMMANDS[name][0].partition(".")[0]
    probe = (
        f"import sys; sys.modules[{top!r}] = None\n"
        "from adr_cli.main import main\n"
        f"sys.exit(main([{name!r}, '--help']))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert f"adr {name}: not in this installation (no '{top}' package" in done.stderr
    assert "Traceback" not in done.stderr
