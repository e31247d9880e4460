"""The documents (schemas/*.md), the committed JSON Schemas and the decoders' Structs agree."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

import schemas
from schemas._jsonschema import FORMATS, SCHEMA_DIR, render, schema_path

# How each document type is spelled in JSON Schema (schemas/README.md, "Types on the wire").
_SCALARS = {"integer": "int", "number": "float64", "string": "str", "object": "map"}


def _doc_type(prop: dict[str, Any]) -> str:
    """The document's spelling of a JSON Schema property's type."""
    if "anyOf" in prop:
        kinds = [_doc_type(p) for p in prop["anyOf"]]
        assert kinds[-1] == "nil", prop
        return f"{' or '.join(kinds[:-1])} or nil"
    if "enum" in prop:
        (kind,) = {type(x) for x in prop["enum"]}
        return {int: "int", str: "str"}[kind]
    if prop.get("type") == "null":
        return "nil"
    if prop.get("type") == "array":
        return f"array of {_doc_type(prop['items'])}"
    return _SCALARS[prop["type"]]


def _table(path: Path) -> list[dict[str, str]]:
    """The first Markdown table of `path`, rows as {header: cell} with backticks stripped."""
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| field |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for ln in lines[start + 2 :]:
        if not ln.startswith("|"):
            break
        cells = [c.strip().strip("`") for c in ln.strip("|").split("|")]
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


@pytest.mark.parametrize("name", list(FORMATS))
def test_committed_json_schema_is_generated_from_the_struct(name: str) -> None:
    # Compared as JSON values: key order or whitespace of another msgspec release is no drift.
    committed = json.loads(schema_path(name).read_text(encoding="utf-8"))
    assert committed == json.loads(render(name)), f"{name} is stale: run `python -m schemas`"


@pytest.mark.parametrize("name", list(FORMATS))
def test_document_table_matches_struct_and_json_schema(name: str) -> None:
    cls, _topic = FORMATS[name]
    rows = _table(SCHEMA_DIR / f"{name}.md")
    committed = json.loads(schema_path(name).read_text(encoding="utf-8"))
    fields = msgspec.structs.fields(cls)

    assert [r["field"] for r in rows] == [f.encode_name for f in fields]
    assert list(committed["properties"]) == [f.encode_name for f in fields]
    for row, field in zip(rows, fields, strict=True):
        prop = committed["properties"][field.encode_name]
        assert row["type"] == _doc_type(prop), field.name
        assert (row["required"] == "yes") is field.required, field.name
        assert (field.encode_name in committed["required"]) is field.required, field.name
        assert row["since"] == "1", field.name
        # A byte limit in the document is the JSON Schema's maxLength (a character bound).
        byte_limit = re.search(r"1–(\d+) bytes UTF-8", row["limits"])
        if byte_limit:
            if prop.get("type") == "array":
                prop = prop["items"]
            assert prop["minLength"] == 1 and prop["maxLength"] == int(byte_limit.group(1))
        minimum = re.fullmatch(r"≥ (\d+)(?:,.*)?", row["limits"])
        if minimum:
            assert prop["minimum"] == int(minimum.group(1)), field.name
    assert rows[0]["field"] == "v" and rows[0]["limits"] == "= 1"
    assert committed["properties"]["v"]["enum"] == [1]


def test_readme_lists_every_reason_in_precedence_order() -> None:
    text = (SCHEMA_DIR / "README.md").read_text(encoding="utf-8")
    section = text.split("## Rejections", 1)[1].split("##", 1)[0]
    listed = re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)
    assert listed == [r.value for r in schemas.Reason]


def test_readme_limits_are_the_code_constants() -> None:
    text = (SCHEMA_DIR / "README.md").read_text(encoding="utf-8")
    assert f"**{schemas.MAX_MESSAGE_BYTES} bytes**" in text
    assert f"**1–{schemas.MAX_ID_BYTES} bytes of UTF-8**" in text
    assert f"max_age = {schemas.DEFAULT_MAX_AGE_MS // 1000} s" in text
    assert f"max_future = {schemas.DEFAULT_MAX_FUTURE_MS // 1000} s" in text
    assert schemas.MAX_RATING_CHANGE_ID_BYTES == 73
