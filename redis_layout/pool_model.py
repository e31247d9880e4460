"""The pool's rating model, `{ns}:model` (docs/leaderboards.md, "Compatibility").

A pool runs one model with one set of parameters (engine.MODELS; `adr consume --model`): its
player hashes hold that model's state, its leaderboard that model's display rating. The first
consumer of a pool records which, `stamp_model` (SET NX of `model_stamp`: the model's name and a
digest of its parameters); every later one compares and refuses another (`ModelMismatch`, exit 2,
before it consumes anything), so two models never write one pool. Readers read the name
(`pool_model`): a pool without the key was written by ADR (releases before the key)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from redis_layout._errors import LayoutError
from redis_layout.keys import Keys
from redis_layout.layout import REBUILDING, rebuilding_reason

DEFAULT_MODEL: Final = "adr"
"""What a pool without `{ns}:model` runs: every release before the key ran ADR only."""


class ModelMismatch(LayoutError):
    """The pool records another model (or other parameters) than this process runs."""

    what = "the pool runs another model"
    """The consumer's log message for it (consumer/cli.py)."""

    def __init__(self, key: str, found: str, wanted: str) -> None:
        super().__init__(
            f"{key} records {found}, this process runs {wanted}: one pool runs one model "
            "with one set of parameters; use another namespace to rate with another "
            "(docs/operations.md, Switching a pool's model)"
        )
        self.key = key
        self.found = found
        self.wanted = wanted


class PoolRebuilding(ModelMismatch):
    """`{ns}:layout` is REBUILDING: `adr rebuild` is writing the namespace and records the
    pool's model only at its end, so no process can check its model against the pool's yet. A
    ModelMismatch, so that a consumer refuses it at start as it refuses another model (exit 2),
    with a message that says why."""

    what = "the pool is being rebuilt"

    def __init__(self, key: str, wanted: str) -> None:
        LayoutError.__init__(self, f"{rebuilding_reason(key)}; this process runs {wanted}")
        self.key = key
        self.found = REBUILDING
        self.wanted = wanted


def model_stamp(name: str, parameters: Mapping[str, Any]) -> str:
    """`{ns}:model`'s value: JSON {"model": name, "params": the first 16 hex digits of SHA-256
    over the parameters as sorted JSON (floats in their shortest exact form, other values such as
    fractions as their text), "parameters": those parameters} (the tier job builds the model
    from them to read its display rating)."""
    canonical = json.dumps(dict(parameters), sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:16]
    given = json.loads(canonical)
    return json.dumps({"model": name, "params": digest, "parameters": given}, separators=(",", ":"))


def pool_model(client: Any, keys: Keys) -> str:
    """A reader's view: the name of the pool's model (DEFAULT_MODEL where none is recorded)."""
    return pool_model_parameters(client, keys)[0]


def pool_model_parameters(client: Any, keys: Keys) -> tuple[str, dict[str, Any]]:
    """The pool's model and the parameters it records ({} where none is recorded: ADR's);
    ModelMismatch for a value that is no model stamp (not JSON, no name, `parameters` not an
    object), as every reader refuses it."""
    raw = client.get(keys.model)
    if raw is None:
        return DEFAULT_MODEL, {}
    name = _name(keys.model, raw)
    parameters = json.loads(raw).get("parameters", {})
    if not isinstance(parameters, dict):  # null, a list...: no stamp a release writes
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        raise ModelMismatch(keys.model, repr(text), "a model stamp")
    return name, parameters


def stamp_model(client: Any, keys: Keys, stamp: str) -> None:
    """The writer's check before it consumes: record `stamp` unless the pool has a model (SET
    NX), then require the recorded one to be `stamp`; ModelMismatch otherwise. A pool written
    before the key (its `{ns}:pop` exists, no `{ns}:model`) is ADR's: only ADR may stamp it.
    A namespace `adr rebuild` is writing (`{ns}:layout` REBUILDING) is refused first
    (PoolRebuilding), whatever the model, and nothing is written to it."""
    wanted = _name(keys.model, stamp)
    layout = client.get(keys.layout)
    if (layout.decode(errors="replace") if isinstance(layout, bytes) else layout) == REBUILDING:
        raise PoolRebuilding(keys.layout, stamp)
    if client.get(keys.model) is None and wanted != DEFAULT_MODEL and client.exists(keys.pop):
        raise ModelMismatch(keys.model, f"none (a pool {DEFAULT_MODEL} wrote before it)", stamp)
    client.set(keys.model, stamp, nx=True)
    raw = client.get(keys.model)
    found = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    if found != stamp:
        raise ModelMismatch(keys.model, found, stamp)


def _name(key: str, raw: bytes | str) -> str:
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    try:
        name = json.loads(text)["model"]
    except (ValueError, KeyError, TypeError):
        raise ModelMismatch(key, repr(text), "a model stamp") from None
    if not isinstance(name, str):
        raise ModelMismatch(key, repr(text), "a model stamp")
    return name
