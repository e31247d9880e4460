"""Write schemas/vectors/rating_change.v1.json: golden rating-change messages for readers.

The bytes come from the `msgpack` package (`msgpack.packb` of the fields in the v1 order, floats
as float64), never from schemas/rating_change.py (the code the vectors test). Run `python -m
schemas.vectors.generate_rating_change` after changing a vector; `--check` only reports whether
the file is up to date (a test runs it).

Each vector: `name`, `about`, `hex` (the message), `meaning` (its fields in JSON), `verdict`
(`valid`/`invalid`) and `canonical` (true: exactly the bytes a v1 producer writes for it, the
fields at their default left out: `seq` 0, `epoch` 0, `model` nil). They show the optional
`model` (issue 28): an ADR change has no `model` key, another model's names it, and only Elo's
may carry `sigma_after` 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

import msgpack

PATH: Final = Path(__file__).with_name("rating_change.v1.json")
ORDER: Final = (
    "v", "id", "player", "role", "arena", "source_id", "ts", "mu_before", "mu_after",
    "sigma_after", "tier_before", "tier_after", "seq", "epoch", "model",
)  # fmt: skip
DEFAULTS: Final = {"seq": 0, "epoch": 0, "model": None}
BASE: Final[dict[str, Any]] = {
    "v": 1, "id": "e1:attacker", "player": "p1", "role": "attacker", "arena": "a1",
    "source_id": "e1", "ts": 1_764_680_400_000, "mu_before": 1000.0, "mu_after": 1012.5,
    "sigma_after": 331.25, "tier_before": None, "tier_after": "3M", "seq": 7, "epoch": 0,
    "model": None,
}  # fmt: skip


def _message(fields: dict[str, Any]) -> bytes:
    """The fields in the v1 order, those at their default left out (as a v1 producer)."""
    ordered = {k: fields[k] for k in ORDER if k in fields and fields[k] != DEFAULTS.get(k, ...)}
    packed: bytes = msgpack.packb(ordered, use_bin_type=True, use_single_float=False)
    return packed


def _vector(name: str, about: str, verdict: str, **changes: Any) -> dict[str, Any]:
    fields = {**BASE, **changes}
    return {
        "name": name,
        "about": about,
        "hex": _message(fields).hex(),
        "meaning": fields,
        "verdict": verdict,
        "canonical": True,
    }


def vectors() -> list[dict[str, Any]]:
    return [
        _vector("valid/adr", "an ADR pool's change: no model key, its bytes as before it", "valid"),
        _vector(
            "valid/trueskill",
            "a TrueSkill pool's change names its model",
            "valid",
            model="trueskill",
            mu_before=25.0,
            mu_after=27.5,
            sigma_after=7.25,
        ),
        _vector(
            "valid/elo-sigma-zero",
            "Elo keeps no uncertainty: sigma_after 0",
            "valid",
            model="elo",
            mu_before=1500.0,
            mu_after=1516.0,
            sigma_after=0.0,
            tier_after=None,
        ),
        _vector(
            "invalid/adr-sigma-zero", "sigma_after 0 is Elo's only", "invalid", sigma_after=0.0
        ),
        _vector("invalid/model-too-long", "a model name is 1-16 bytes", "invalid", model="m" * 17),
    ]


def render() -> str:
    return json.dumps({"format": "rating_change v1", "vectors": vectors()}, indent=2) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        return 0 if PATH.exists() and PATH.read_text(encoding="utf-8") == text else 1
    PATH.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
