"""The machine-readable schemas: JSON Schema generated from the Structs, one file per format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import msgspec

from schemas.kill_event import KillEvent
from schemas.rating_change import RatingChange
from schemas.tier_boundaries import TierBoundaries

SCHEMA_DIR: Final = Path(__file__).resolve().parent
_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

# file stem -> (Struct, topic); the version is each Struct's `v`.
FORMATS: Final[dict[str, tuple[type[msgspec.Struct], str]]] = {
    "kill_event": (KillEvent, "kill-events"),
    "rating_change": (RatingChange, "rating-changes"),
    "tier_boundaries": (TierBoundaries, "tier-boundaries"),
}
VERSION: Final = 1


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of format `name`, generated from its Struct."""
    cls, topic = FORMATS[name]
    generated = msgspec.json.schema(cls)
    body: dict[str, Any] = generated["$defs"][cls.__name__]
    return {
        "$schema": _DIALECT,
        "$id": f"urn:adr-stream:schema:{name}:v{VERSION}",
        "x-topic": topic,
        "x-encoding": "msgpack map; JSON Schema types: integer = msgpack int, "
        "number = float64, string = UTF-8 str, object = map",
        **body,
    }


def schema_path(name: str) -> Path:
    """Where the committed schema of format `name` lives."""
    return SCHEMA_DIR / f"{name}.v{VERSION}.schema.json"


def render(name: str) -> str:
    """The exact text committed in `schema_path(name)`."""
    return json.dumps(json_schema(name), indent=2, ensure_ascii=False) + "\n"
