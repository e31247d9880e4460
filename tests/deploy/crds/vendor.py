"""Vendor a CRD's validation schema: `python tests/deploy/crds/vendor.py CRD.yaml [SOURCE]`.

Writes `<group>_<Kind>_<version>.json` beside this file for every served version of the
CustomResourceDefinition: its `openAPIV3Schema` as the API server validates objects with, less the
`description` texts (documentation only; they are most of a CRD's size). SOURCE (where the CRD
came from: repository, path and commit) is kept in the file as `x-adr-source`. tests/deploy
validates the rendered operator resources against these files (test_k8s.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent


def strip_descriptions(schema: Any) -> Any:
    """The schema without `description` keywords (a property *named* description is kept)."""
    if isinstance(schema, list):
        return [strip_descriptions(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: strip_descriptions(s) for name, s in value.items()}
        else:
            out[key] = strip_descriptions(value)
    return out


def main(crd_file: str, source: str = "") -> None:
    crd = yaml.safe_load(Path(crd_file).read_text())
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    for version in crd["spec"]["versions"]:
        if not version.get("served", False):
            continue
        schema = strip_descriptions(version["schema"]["openAPIV3Schema"])
        schema["x-adr-source"] = source or crd_file
        out = HERE / f"{group}_{kind}_{version['name']}.json"
        out.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
        print(out.name, out.stat().st_size)


if __name__ == "__main__":
    main(*sys.argv[1:3])
