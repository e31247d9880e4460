"""The consumer's atomic batch write (scripts/apply.lua) as a contract declared once.

The write is one EVALSHA whose keys and argument sections are positional on the wire. Their
order is declared here, and only here: scripts/__init__.py generates apply.lua's header (the
Lua names of every key, section and player item) from these tuples, and the consumer's Store
builds the call by name from them (consumer/_store.py). A new player field touches the player
codec (player_codec.FIELDS and its values), the script's use of it, and nothing else: the
header and the per-player item count follow from FIELDS.

Evolution: the script and the client are built from the same declaration, so adding, removing
or reordering an entry changes both at once; a running consumer always sends the script it
loaded (EVALSHA of the generated source), so two releases never read each other's layout.
"""

from __future__ import annotations

from typing import Final

from redis_layout.player_codec import FIELDS

VALUE_FIELDS: Final = tuple(f for f in FIELDS if f != "ver")
"""The player hash's fields the write sets from the client's values, in FIELDS order (`ver` is
set from the player's new ver)."""

PLAYER_ITEMS: Final = ("id", "checked_ver", "new_ver", *VALUE_FIELDS, "activity")
"""Per changed player, its items in the players section (one msgpack array of all players' items,
each a msgpack str): the player id, the ver the batch read ("0": no hash yet; checked like a
compare-and-set), its new ver, the hash values (player_codec.script_items), and its activity
time ("" = none: not in {ns}:activity). ADR's items: its leaderboard score is `mu`, and a player is
ranked once placed in a tier (its `tier` item is not empty)."""

SCORED_PLAYER_ITEMS: Final = (*PLAYER_ITEMS, "score")
"""The items of a pool whose model is not ADR (engine.RatingModel): PLAYER_ITEMS, then the
leaderboard score, the model's display rating as text ("" = not ranked). ADR's pools send
PLAYER_ITEMS only, so ADR's write carries no item it does not use (its score is `mu`): the
script's header says which of the two a pool's write was loaded for (`lua_header`)."""

SECTIONS: Final = (
    "players",
    "offset_checks",
    "tier_counts",
    "pop",
    "cooldowns",
    "offsets",
    "outbox",
    "watermarks",
    "sweep",
    "event_ids",
    "epoch",
    "season",
)
"""The argument sections after the player key prefix, in order (apply.lua says what each holds);
ARGV carries each section's length first, then the sections."""

KEYS: Final = (
    "offsets",
    "outbox",
    "lb",
    "activity",
    "pop",
    "tier_counts",
    "watermarks",
    "cooldown_due",
    "due_buckets",
    "epoch",
    "season_schedule",
)
"""KEYS of the call, in order: the pool's keys the script touches by name (the others it builds
from the prefixes in ARGV)."""


def lua_header(scored: bool = False) -> str:
    """apply.lua's generated first lines: `FIELD` (VALUE_FIELDS), `PLAYER_ITEMS` and the 0-based
    offset of each player item (`I_<NAME>`), `SECTIONS` and each section's number
    (`S_<NAME>`), and each key's index in KEYS (`K_<NAME>`). `scored`: the write of a pool whose
    model is not ADR (SCORED_PLAYER_ITEMS; `I_SCORE` is false in ADR's header)."""
    items = SCORED_PLAYER_ITEMS if scored else PLAYER_ITEMS
    lines = [
        "-- generated from redis_layout/apply_contract.py (do not edit here)",
        "local FIELD = {" + ", ".join(f"'{f}'" for f in VALUE_FIELDS) + "}",
        f"local PLAYER_ITEMS = {len(items)}",
        *(f"local I_{name.upper()} = {i}" for i, name in enumerate(items)),
        *(() if scored else ("local I_SCORE = false",)),
        f"local SECTIONS = {len(SECTIONS)}",
        *(f"local S_{name.upper()} = {i}" for i, name in enumerate(SECTIONS, 1)),
        *(f"local K_{name.upper()} = {i}" for i, name in enumerate(KEYS, 1)),
    ]
    return "\n".join(lines) + "\n"
