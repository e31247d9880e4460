"""librdkafka writes its own log lines (a refused connection, a broker gone) straight to stderr
as raw `%3|...` text unless a client is given a Python logger: every Kafka client the code
makes passes one (runtime.logs.kafka_logger), so those lines are JSON log lines like the rest.
The CLI-level proof: tests/adr_cli/test_topics.py, test_librdkafkas_own_lines_are_json_log_lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("adr_cli", "consumer", "leaderboard", "loadgen", "runtime", "stack", "tierjob")
CLIENTS = {"Producer", "Consumer", "AdminClient"}


def _client_calls() -> list[tuple[str, ast.Call, ast.AST]]:
    """(file, call, the function around it) for every Producer/Consumer/AdminClient(...)."""
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for scope in ast.walk(tree):
                if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(scope):
                    if (
                        isinstance(node, ast.Call)
                        and isinstance(node.func, ast.Name)
                        and node.func.id in CLIENTS
                    ):
                        found.append((str(path.relative_to(REPO)), node, scope))
    return found


CALLS = _client_calls()


def test_the_scan_finds_the_clients() -> None:
    files = {f for f, _, _ in CALLS}
    assert {"adr_cli/topics.py", "adr_cli/check.py", "stack/_topics.py"} <= files


def _sets_a_logger(path: str, call: ast.Call, scope: ast.AST) -> bool:
    """The client's settings carry "logger", built in the call, its function, or the helper
    the call passes them through (consumer_settings(...)); or librdkafka is silenced."""
    module = ast.parse((REPO / path).read_text())
    texts = [ast.unparse(call), ast.unparse(scope)]
    for arg in call.args:
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name):
            for node in ast.walk(module):
                if isinstance(node, ast.FunctionDef) and node.name == arg.func.id:
                    texts.append(ast.unparse(node))
    return any("'logger'" in t for t in texts) or "'log_level': 0" in ast.unparse(call)


@pytest.mark.parametrize(
    ("path", "call", "scope"), CALLS, ids=[f"{f}:{c.lineno}" for f, c, _ in CALLS]
)
def test_every_kafka_client_logs_through_python(path: str, call: ast.Call, scope: ast.AST) -> None:
    assert _sets_a_logger(path, call, scope), f"{path}:{call.lineno}: no 'logger' setting"
