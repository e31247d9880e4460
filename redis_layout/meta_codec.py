"""Per-player metadata of a pool (`{ns}:meta`): the studio's small JSON object per player (display
name, country, avatar...), which `adr meta` writes and `adr serve` returns with every row.

Layout (version 1): one hash per pool, `{ns}:meta`, field = the player id, value = `1:` and the
object as compact JSON with its keys sorted (`1:{"country":"DE","display_name":"Ann"}`). One hash,
not one key per player: a page of the board reads its rows' metadata with one HMGET, the pool
keeps its one hash tag (one cluster slot), and one key is one ACL rule for the writer's user.
It is kept apart from the player hashes on purpose: the consumer's write never reads or writes it
(its cost does not change), and the studio's writer cannot touch the ratings.

Limits (checked when written and again when read, since anything with the writer's password
could write past the codec): an object of at most `MAX_FIELDS` fields, each name 1-`MAX_NAME_BYTES`
of `[A-Za-z0-9_.-]`, each value a string of at most `MAX_STRING_BYTES` bytes of UTF-8, an integer
within ±2**53 (exact in JavaScript), a finite number, true, false or null; no nested objects or
lists; the whole encoded value at most `MAX_VALUE_BYTES`.

Evolution: a reader that meets a version prefix it does not know raises UnknownMetaVersion (the
API then answers the row without metadata, counted, rather than fail the page); a new version is
added beside the old, readers first, as for the pool's layout (redis_layout/layout.py).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Final, TypeAlias

import msgspec

from redis_layout._errors import CorruptValue, LayoutError

META_VERSION: Final = 1
MAX_FIELDS: Final = 16
MAX_NAME_BYTES: Final = 32
MAX_STRING_BYTES: Final = 256
MAX_VALUE_BYTES: Final = 1024
"""The stored value's bytes, prefix included: at most 1 KiB per player (a million players with
metadata: about 1 GB at the limit, typically a tenth of it)."""
SAFE_INT: Final = 2**53

MetaValue: TypeAlias = str | int | float | bool | None
Meta: TypeAlias = dict[str, MetaValue]

_NAME: Final = re.compile(rf"[A-Za-z0-9_.-]{{1,{MAX_NAME_BYTES}}}")
_PREFIX: Final = f"{META_VERSION}:".encode()
_DECODER: Final = msgspec.json.Decoder()


class BadMeta(LayoutError, ValueError):
    """Metadata that breaks a limit or is not a JSON object of scalars: the reason."""


class UnknownMetaVersion(LayoutError):
    """A stored value of a metadata layout version this release does not know."""


def check_meta(value: object) -> Meta:
    """`value` as metadata if it keeps every limit, else BadMeta saying which it breaks."""
    if not isinstance(value, dict):
        raise BadMeta(f"metadata must be a JSON object, not {_kind(value)}")
    if len(value) > MAX_FIELDS:
        raise BadMeta(f"metadata has {len(value)} fields: at most {MAX_FIELDS}")
    for name, item in value.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise BadMeta(
                f"field name {_shown(name)}: must be 1-{MAX_NAME_BYTES} of A-Z a-z 0-9 _ . -"
            )
        if isinstance(item, str):
            try:
                size = len(item.encode("utf-8"))
            except UnicodeEncodeError:
                raise BadMeta(f"field {name}: not valid Unicode (a lone surrogate)") from None
            if size > MAX_STRING_BYTES:
                raise BadMeta(
                    f"field {name}: a string of {size} bytes (UTF-8): at most {MAX_STRING_BYTES}"
                )
        elif isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, int):
            if not -SAFE_INT <= item <= SAFE_INT:
                raise BadMeta(f"field {name}: an integer beyond ±2**53")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise BadMeta(f"field {name}: not a finite number")
        else:
            raise BadMeta(
                f"field {name}: {_kind(item)}: a value is a string, number, true, false or null"
            )
    return value


def encode_meta(value: Mapping[str, object]) -> bytes:
    """The stored form of `value` (checked): `1:` and compact JSON, keys sorted."""
    meta = check_meta(dict(value))
    encoded = _PREFIX + msgspec.json.encode(meta, order="sorted")
    if len(encoded) > MAX_VALUE_BYTES:
        raise BadMeta(f"metadata of {len(encoded)} bytes encoded: at most {MAX_VALUE_BYTES}")
    return encoded


def parse_meta_json(text: str | bytes) -> Meta:
    """A writer's JSON text as checked metadata (BadMeta: not JSON, not an object, a field named
    twice, a limit broken)."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if len(raw) > 4 * MAX_VALUE_BYTES:  # no need to parse a megabyte to refuse it
        raise BadMeta(f"metadata of {len(raw)} bytes: at most {MAX_VALUE_BYTES} encoded")
    repeated: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        found = dict(items)
        if len(found) != len(items):
            repeated.append(next(n for i, (n, _) in enumerate(items) if n in dict(items[:i])))
        return found

    try:
        value = json.loads(raw, object_pairs_hook=pairs)
    except (ValueError, RecursionError) as exc:
        raise BadMeta(f"metadata is not JSON: {str(exc)[:80]}") from None
    if repeated:
        raise BadMeta(f"metadata names the field {_shown(repeated[-1])} twice")
    encode_meta(check_meta(value))  # the size limit of the stored form
    return value  # type: ignore[no-any-return]


def decode_meta(raw: bytes, key: str = "") -> Meta:
    """A stored value as metadata: UnknownMetaVersion for another layout version, CorruptValue
    for a value that breaks the limits (written past the codec)."""
    version, sep, body = raw.partition(b":")
    if not sep or not version.isdigit():
        raise CorruptValue("meta", key, "no version prefix")
    if int(version) != META_VERSION:
        raise UnknownMetaVersion(
            f"{key}: metadata layout version {int(version)}: this release reads {META_VERSION}"
        )
    if len(raw) > MAX_VALUE_BYTES:
        raise CorruptValue("meta", key, f"{len(raw)} bytes: at most {MAX_VALUE_BYTES}")
    try:
        return check_meta(_DECODER.decode(body))
    except (msgspec.DecodeError, BadMeta) as exc:
        raise CorruptValue("meta", key, str(exc)) from None


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _shown(name: object) -> str:
    text = repr(name)
    return text if len(text) <= 40 else text[:37] + "..."
