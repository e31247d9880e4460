"""The Go and TypeScript leaderboard readers take or refuse a pool's `{NS}:model` stamp as the
engine does (`adr leaderboard` builds the model from it: engine.model_named with the stamp's
typed values): their declared table of each model's parameters (name, kind, default, rules) is
the engine's config, and on a grid of values per parameter, and of pairs the engine checks
together (Glicko-2's rd_max >= rd0), each reader answers as the engine's config constructor
does, and reads the same display_k. The end-to-end refusal (exit 3, as the shipped read-only
user) is tests/examples/test_readers_acl.py's."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine import MODELS, ParamError, model_named, model_parameters
from tests.examples._build import EXAMPLES, READERS, Missing

pytestmark = pytest.mark.integration  # builds the examples (as the other reader tests)

_TABLES = {
    "go": (
        EXAMPLES / "go/cmd/leaderboard/main.go",
        r"var modelParameters = map\[string\]\[\]\[2\]string\{\n(.*?)\n\}",
        r'\{"(\w+)", "([^"]*)"\}',
    ),
    "ts": (
        EXAMPLES / "ts/src/leaderboard.ts",
        r"const MODEL_PARAMETERS: Record<string, Record<string, string>> = \{\n(.*?)\n\};",
        r'(\w+): "([^"]*)"',
    ),
}
_OTHERS = [name for name in MODELS if name != "adr"]  # an adr pool's parameters are not read


def _table(lang: str) -> dict[str, list[tuple[str, str]]]:
    path, block_pattern, row_pattern = _TABLES[lang]
    block = re.search(block_pattern, path.read_text(), re.S)
    assert block, f"{path}: no table of model parameters"
    models = re.split(r'^\s*"?([\w-]+)"?: \{$', block.group(1), flags=re.M)[1:]
    return {
        name: re.findall(row_pattern, rows)
        for name, rows in zip(models[::2], models[1::2], strict=True)
    }


@pytest.mark.parametrize("lang", sorted(_TABLES))
def test_the_readers_table_is_the_engines_config(lang: str) -> None:
    """Every model other than adr, its config's fields in order, each field's kind (a name, an
    integer, a number) and default as the engine declares them; both readers the same table."""
    table = _table(lang)
    assert table == _table("go")
    assert sorted(table) == sorted(_OTHERS)
    for name in _OTHERS:
        engine = model_parameters(model_named(name))
        assert [p for p, _rule in table[name]] == list(engine)
        for p, rule in table[name]:
            kind, default, *_checks = rule.split(" ")
            value = engine[p]
            if isinstance(value, str):
                assert (kind, default) == ("name", value)
            else:
                want = "integer" if isinstance(value, int) else "number"
                assert (kind, float(default)) == (want, float(value)), (name, p)


# JSON texts of values for every parameter: numbers on each side of each bound the engine
# checks (0, 1, the default), -0, fractions for integers, values past float64's range (as a
# float and as an int), underflow, and values of other JSON types (text is no number in a stamp);
# NaN and Infinity are no JSON (the Go and TypeScript readers refuse the stamp), Python's json
# reads them (the engine refuses the value).
_VALUES = ["0", "-0", "-0.0", "1", "-1", "0.5", "1.5", "2", "1e-320", "1e-400", "1e308",
           "1e400", "-1e400", "1" + "0" * 400, "15.0", "9007199254740993", '"1"', '"0.5"',
           '"fixed"', '"fide"', '"uscf"', '"FIDE"', '""', "true", "false", "null", "[]", "{}",
           "0.0001", "1.0000000000000002", "0.9999999999999999", "351", "349",
           "NaN", "Infinity", "-Infinity"]  # fmt: skip
_PAIRS = {  # the parameters a rule checks together: values of both
    "glicko2": [("rd0", "rd_max", a, b) for a in ("100", "350", "400", "1e-300")
                for b in ("100", "350", "400", "99.99999999999999")],
}  # fmt: skip


def _stamp(name: str, members: str) -> str:
    """A {NS}:model text with these `parameters` members, as JSON text (values past Python's)."""
    return f'{{"model":"{name}","params":"0","parameters":{{{members}}}}}'


def _stamps() -> list[tuple[str, str]]:
    """(model, {NS}:model text) for every value of every parameter, alone and in pairs; the
    defaults (no parameters), and every parameter at its default."""
    out: list[tuple[str, str]] = []
    for name in _OTHERS:
        defaults = model_parameters(model_named(name))
        out.append((name, json.dumps({"model": name, "params": "0"})))
        out.append((name, json.dumps({"model": name, "params": "0", "parameters": defaults})))
        for p in defaults:
            for value in _VALUES:
                out.append((name, _stamp(name, f'"{p}":{value}')))
        for a, b, va, vb in _PAIRS.get(name, []):
            out.append((name, _stamp(name, f'"{a}":{va},"{b}":{vb}')))
    return out


def _engine_verdict(text: str) -> str:
    """`adr leaderboard`'s: the model built from the stamp's typed values (leaderboard/_board.py);
    any error but ParamError fails the test."""
    stamp = json.loads(text)
    try:
        model: Any = model_named(stamp["model"], stamp.get("parameters", {}), typed=True)
    except ParamError:
        return "refused"
    return f"ok {float(getattr(model.config, 'display_k', 0.0)) + 0.0!r}"


def _verdict(line: str) -> str:
    """ "ok K" or "refused"; K + 0.0: JSON's -0 is Python's int 0, Go's and JavaScript's -0.0,
    and mu - k*sigma is the same for both."""
    word, _, rest = line.partition(" ")
    return f"ok {float(rest) + 0.0!r}" if word == "ok" else word


def _go_verdicts(stamps: Path, tmp_path: Path) -> list[str]:
    try:
        READERS["go"]()  # the toolchain and the modules (a skip without them)
    except Missing as exc:
        pytest.skip(f"go reader example not built: {exc}")
    verdicts = tmp_path / "go.txt"
    done = subprocess.run(
        ["go", "test", "-mod=readonly", "-count=1", "-run", "^TestStampVerdicts$",
         "./cmd/leaderboard"],
        cwd=EXAMPLES / "go", capture_output=True, text=True, timeout=600,
        env={**os.environ, "ADR_STAMPS": str(stamps), "ADR_VERDICTS": str(verdicts)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return verdicts.read_text().splitlines()


_NODE = """
const { parseModel } = require(process.argv[1]);
const lines = require("fs").readFileSync(process.argv[2], "utf8").split("\\n").filter(Boolean);
for (const line of lines) {
  try { console.log(`ok ${parseModel("{adr}:model", line).displayK}`); }
  catch (err) { console.log(`refused ${err.message.replace(/\\n/g, " ")}`); }
}
"""


def _ts_verdicts(stamps: Path) -> list[str]:
    try:
        command = READERS["ts"]()
    except Missing as exc:
        pytest.skip(f"ts reader example not built: {exc}")
    done = subprocess.run(
        [command[0], "-e", _NODE, command[1], str(stamps)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize("lang", ["go", "ts"])
def test_each_reader_takes_or_refuses_a_stamp_as_the_engine_does(lang: str, tmp_path: Path) -> None:
    stamps = _stamps()
    path = tmp_path / "stamps.txt"
    path.write_text("".join(f"{text}\n" for _name, text in stamps))
    lines = _go_verdicts(path, tmp_path) if lang == "go" else _ts_verdicts(path)
    assert len(lines) == len(stamps)
    differ = [
        (text, engine, line)
        for (_name, text), line in zip(stamps, lines, strict=True)
        if _verdict(line) != (engine := _engine_verdict(text))
    ]
    assert differ == []
    refused = [line for line in lines if line.startswith("refused")]
    assert len(stamps) > len(refused) > len(stamps) // 3  # the grid has both answers
    for (_name, text), line in zip(stamps, lines, strict=True):
        if line.startswith("refused"):  # the reason names the parameter the engine refuses
            named = set(re.findall(r'"(\w+)":', text)) - {"model", "params", "parameters"}
            assert "{adr}:model" in line and any(p in line for p in named), line
