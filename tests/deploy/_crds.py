"""The operators' resources against their CRDs' own schemas (vendored in tests/deploy/crds/).

The API server validates a custom resource with its CRD's openAPIV3Schema and, with strict field
validation (kubectl's default since 1.27), refuses fields the schema does not declare. jsonschema
(draft 4, OpenAPI 3.0's dialect) reads the same schema (it ignores the `x-kubernetes-*`
keywords); `strict` adds that refusal: `additionalProperties: false` on every object schema
that declares properties and neither `additionalProperties` nor
`x-kubernetes-preserve-unknown-fields`. Object metadata is the Kubernetes ObjectMeta, which a
CRD's schema leaves open; kubernetes_validate checks it.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate

CRDS = Path(__file__).resolve().parent / "crds"


def strict(schema: Any) -> Any:
    """`schema` refusing undeclared fields, as the API server's strict field validation does."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items() if k != "properties"}
    if isinstance(out.get("pattern"), str) and "(?i)" in out["pattern"]:
        # Go's RE2 takes an inline flag anywhere; Python's re only at the start.
        out["pattern"] = "(?i)" + out["pattern"].replace("(?i)", "")
    if "properties" in schema:
        out["properties"] = {k: strict(v) for k, v in schema["properties"].items()}
        open_ended = "additionalProperties" in schema or schema.get(
            "x-kubernetes-preserve-unknown-fields"
        )
        if not open_ended:
            out["additionalProperties"] = False
    return out


@functools.cache
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in sorted(CRDS.glob("*.json")):
        group, kind, version = path.stem.split("_")
        schema = json.loads(path.read_text())
        schema.pop("x-adr-source")
        out[(f"{group}/{version}", kind)] = strict(schema)
    return out


def crd_kinds() -> set[tuple[str, str]]:
    return set(_schemas())


def validate(obj: dict[str, Any], kubernetes_version: str) -> None:
    """Raise jsonschema.ValidationError (or kubernetes_validate's) unless `obj` is valid."""
    schema = _schemas().get((obj["apiVersion"], obj["kind"]))
    assert schema is not None, f"no CRD schema for {obj['apiVersion']} {obj['kind']}: vendor one"
    # A CRD schema is OpenAPI 3.0's dialect of JSON Schema draft 4 (boolean exclusiveMinimum).
    jsonschema.Draft4Validator(schema).validate(obj)
    meta = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": copy.deepcopy(obj["metadata"])}
    kubernetes_validate.validate(meta, kubernetes_version, strict=True)
