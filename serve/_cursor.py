"""Page cursors: an opaque token naming a position in the board's order, (μ, player id) of the
last row of the previous page (docs/api.md, "Pages").

The token is URL-safe base64 (no padding) of a msgpack array `[1, mu, player]`; 1 is the token's
version. A server decodes only the versions it wrote; anything else is a BadCursor (a 400), never a
read. A cursor carries no secret and needs none: whatever position it names, the page is the rows
after that position, which anyone may read.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Final

import msgspec

from serve._errors import BadCursor

VERSION: Final = 1
MAX_CURSOR_CHARS: Final = 200
"""A version-1 cursor of a 64-byte id is under 110 characters; anything much longer is not one."""

_DECODER: Final = msgspec.msgpack.Decoder(tuple[int, float, str])


def encode_cursor(mu: float, player: str) -> str:
    raw = msgspec.msgpack.encode((VERSION, mu, player))
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_cursor(token: str, max_id_bytes: int) -> tuple[float, str]:
    """(μ, player) of a cursor; BadCursor with the reason if it is not one this server wrote."""
    if len(token) > MAX_CURSOR_CHARS:
        raise BadCursor(f"bad cursor: longer than {MAX_CURSOR_CHARS} characters")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        version, mu, player = _DECODER.decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise BadCursor("bad cursor: not a cursor of this API (start again without one)") from None
    if version != VERSION:
        raise BadCursor(f"bad cursor: version {version} (this server writes {VERSION})")
    if not math.isfinite(mu) or not player or len(player.encode()) > max_id_bytes:
        raise BadCursor("bad cursor: its position is out of range")
    return mu, player
