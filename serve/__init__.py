"""`adr serve`: the read-only HTTP API over a rating pool's leaderboards (docs/api.md), its page
(serve/static), and the rating-history reader that fills the profiles' history (history.py, the
`adr history` process with history_cli.py), and seasons (seasons.py: `adr season`, with
season_cli.py, archives a season's final standings, which the API serves), and the studio's
per-player metadata (meta.py: `adr meta`, with meta_cli.py, writes it; every answer carries it).

Exceptions: `ServeError` (root) ← `BadCursor` (a page cursor this server did not write),
`SeasonError` (a bad season id, or a season archived already).
"""

from serve._app import create_app
from serve._config import Config
from serve._cursor import decode_cursor, encode_cursor
from serve._errors import BadCursor, ServeError

__all__ = ["BadCursor", "Config", "ServeError", "create_app", "decode_cursor", "encode_cursor"]
