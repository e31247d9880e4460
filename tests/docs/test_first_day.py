"""docs/game-servers.md's local quickstart, run line for line as written (extracted from the
doc, so the two cannot drift): a local broker and Redis, the topics, the consumer, two kills
published now, and alice's first rating read back within a minute of publishing. Also the
example builds of examples/README.md: each build line makes the binary the next line runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from engine import Params

REPO = Path(__file__).resolve().parents[2]
GAME_SERVERS = (REPO / "docs" / "game-servers.md").read_text()
EXAMPLES_README = (REPO / "examples" / "README.md").read_text()


def _sh_block_after(text: str, heading: str) -> str:
    """The first ```sh block after `heading` (a line of the document)."""
    rest = text.split(f"\n{heading}\n", 1)[1]
    match = re.search(r"^```sh\n(.*?)^```", rest, re.M | re.S)
    assert match is not None, f"no sh block after {heading!r}"
    return match.group(1)


QUICKSTART = _sh_block_after(GAME_SERVERS, "## Try it locally: a first rating within a minute")


def test_the_quickstart_uses_the_projects_commands() -> None:
    for command in ("adr stack up", "adr topics create", "adr consume", "adr leaderboard rank"):
        assert command in QUICKSTART, command
    assert "1764680400000" not in QUICKSTART


def _isolated_env(tmp_path: Path) -> dict[str, str]:
    """The user's fresh shell: no servers configured; the stack's state file and the metrics
    port apart from other stacks on this shared machine (the lines themselves unchanged)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL")}
    env.update(ADR_STACK_STATE=str(tmp_path / "stack" / "state.json"), ADR_METRICS_PORT="0")
    return env


@pytest.mark.integration
@pytest.mark.slow
def test_the_quickstart_gives_a_first_rating_within_a_minute(tmp_path: Path) -> None:
    # Tracing stamps each command with the time it ran; the trap stops what a failed run left.
    script = (
        "PS4='+ $(date +%s%3N) '\n"
        "trap 'set +e; kill $consumer 2>/dev/null; ./scripts/adr stack down >/dev/null 2>&1' EXIT\n"
        "set -x\n" + QUICKSTART
    )
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=REPO, env=_isolated_env(tmp_path),
        capture_output=True, text=True, timeout=420,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    rated = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert rated and rated[-1]["player"] == "alice", done.stdout
    assert rated[-1]["mu"] > Params().mu0, "a kill moves the attacker up"
    stamps = [
        (int(m.group(1)), m.group(2))
        for m in re.finditer(r"^\++ (\d{13}) (.*)$", done.stderr, re.M)
    ]
    published = next(t for t, cmd in stamps if "publish_kills.py" in cmd)
    answered = max(t for t, cmd in stamps if "leaderboard rank alice" in cmd)
    assert answered - published < 60_000, f"{(answered - published) / 1000:.1f} s"
    assert "adr stack: stopped kafka" in done.stderr
    # librdkafka's own lines went through loggers: none raw (`%4|...|GETPID|...`), here or in
    # the consumer's log, where every line is a JSON object (its config one too).
    assert not re.search(r"^%\d\|", done.stderr, re.M), done.stderr
    consume_log = Path("/tmp/adr-consume.log").read_text().splitlines()
    logged = [json.loads(line) for line in consume_log]
    started = next(x for x in logged if x["msg"] == "consumer started")
    assert isinstance(started["config"], dict)


def _build_lines() -> list[str]:
    block = _sh_block_after("\n" + EXAMPLES_README, "# Examples in other languages")
    return [line for line in block.splitlines() if line.strip()]


def test_the_go_build_line_makes_the_binary_the_next_line_runs(tmp_path: Path) -> None:
    """`go build ./cmd/...` builds nothing to run (several packages: results discarded); the
    README's `go build -o bin/ ./cmd/...` writes bin/publish, which the README's last line
    pipes an event stamped now into (-hex: no broker needed)."""
    if shutil.which("go") is None:
        pytest.skip("go not installed")
    lines = _build_lines()
    go_build = next(line for line in lines if "go build" in line)
    assert "-o bin/" in go_build
    run_line = lines[-1]
    assert "examples/go/bin/publish -hex" in run_line
    work = tmp_path / "repo"
    shutil.copytree(REPO / "examples" / "go", work / "examples" / "go",
                    ignore=shutil.ignore_patterns("bin"))  # fmt: skip
    for line in (go_build, run_line):
        done = subprocess.run(
            ["bash", "-e", "-c", line], cwd=work, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (line, done.stderr[-3000:])
    assert (work / "examples" / "go" / "bin" / "publish").is_file()
    assert re.fullmatch(r"[0-9a-f]+\n", done.stdout), done.stdout
    # The event stamped now is one the consumer accepts today (no --now-ms).
    import sys

    check = subprocess.run(
        [sys.executable, "-m", "adr_cli", "check", "--hex"], input=done.stdout,
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["verdict"] == "valid"


def test_the_game_server_docs_event_stamped_now_is_valid_today() -> None:
    """docs/game-servers.md's shell line for an event stamped now: the JSON it prints, packed
    as the page's message section says, gets a valid verdict with the consumer's defaults."""
    import sys

    import msgpack

    line = next(
        x for x in _sh_block_after(GAME_SERVERS, "## The message").splitlines() if "date" in x
    )
    printed = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=30)
    event = {"v": 1, **json.loads(printed.stdout)}
    check = subprocess.run(
        [sys.executable, "-m", "adr_cli", "check", "--hex"],
        input=msgpack.packb(event).hex() + "\n", capture_output=True, text=True, timeout=120,
        cwd=REPO,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
