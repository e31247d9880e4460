"""The atomic write's contract is declared once (redis_layout/apply_contract.py): the script's
header is generated from it, the script names what it reads by it, and the plan the consumer
builds lays each player's items out in its order (checked against the player codec)."""

from __future__ import annotations

import re

from consumer._batch import View, rate_batch
from consumer._intake import Accepted
from engine import Params, activity_time, initial_snapshot
from redis_layout import Keys, apply_contract, scripts
from redis_layout.player_codec import FIELDS, script_items
from schemas import kill_event

TS = 1_790_000_000_000


def test_the_script_starts_with_the_header_generated_from_the_declaration() -> None:
    header = apply_contract.lua_header()
    assert scripts.APPLY.startswith(header)
    assert "local FIELD = {'mu', 'sigma', 'n', 'last_ts', 'tier', 'window', 'state'}" in header
    assert f"local PLAYER_ITEMS = {len(FIELDS) + 3}" in header  # FIELDS has ver; + id, 2 vers, act.
    assert f"local SECTIONS = {len(apply_contract.SECTIONS)}" in header
    assert FIELDS[:-1] == apply_contract.VALUE_FIELDS and FIELDS[-1] == "ver"


def test_the_script_body_names_every_key_section_and_player_item() -> None:
    """No position is written as a number in the body: each is one of the generated names."""
    body = scripts.APPLY.removeprefix(apply_contract.lua_header())
    assert not re.search(r"KEYS\[\d+\]", body)
    assert not re.search(r"section\(\d+\)", body)
    assert not re.search(r"P\[i(?: \+ \d+)?\]", body)
    for name in apply_contract.SECTIONS:
        assert f"S_{name.upper()}" in body, name
    for name in apply_contract.KEYS:
        assert f"K_{name.upper()}" in body, name
    for name in ("ID", "CHECKED_VER", "NEW_VER", "MU", "TIER", "ACTIVITY"):
        assert f"I_{name}" in body, name
    # the generated names, and the script's own locals, stay below Lua's 200 locals per function
    assert len(re.findall(r"^local ", scripts.APPLY, re.M)) < 150


def test_a_plans_players_are_laid_out_in_the_declared_item_order() -> None:
    params, keys = Params(), Keys("contract")
    events = [
        Accepted(0, i, kill_event(id=f"e{i}", arena="x", attacker=a, victim=b, ts=TS + i * 90_000))
        for i, (a, b) in enumerate([("a", "b"), ("b", "c"), ("a", "c")])
    ]
    view = View(
        players={p: (None, 0) for p in "abc"},
        cooldowns={keys.cooldown(a, b): None for a, b in [("a", "b"), ("b", "c"), ("a", "c")]},
        sigma_units_total=0,
        player_count=0,
        offsets={0: None},
        snapshot=initial_snapshot(params),
    )
    plan = rate_batch(events, {0: 3}, view, keys, params)
    width = len(apply_contract.PLAYER_ITEMS)
    assert len(plan.players) == width * len(plan.states) == width * 3
    for i, (player, (state, ver)) in enumerate(plan.states.items()):
        mine = plan.players[i * width : (i + 1) * width]
        items = dict(zip(apply_contract.PLAYER_ITEMS, mine, strict=True))
        assert items["id"] == player
        assert (items["checked_ver"], items["new_ver"]) == ("0", str(ver))
        values = tuple(items[f] for f in apply_contract.VALUE_FIELDS)
        assert values == script_items(state)
        since = activity_time(state, params)
        assert items["activity"] == ("" if since is None else str(since))
