"""Rate one batch with a model other than ADR (pure: no I/O): `rate_batch`'s rules, generic.

consumer/_batch.py's `rate_batch` is ADR's loop, statically typed so that mypyc compiles its
calls into the model to native ones (ADR's throughput). A pool of another model
(`adr consume --model`, engine.RatingModel) is rated here instead, by the same rules in the same
order: already applied, late (per partition watermark), corrupt state, pool bound and refused
offsets, the event-id rule, the cooldown of §2.1, then the model's update. What differs is only
what the model owns: its states (any Struct), their hash values (`to_fields`, layout 2's fields),
the leaderboard score (its display rating, `SCORED_PLAYER_ITEMS`; ranked once placed in a tier,
as ADR's players are), the season soft reset (`RatingModel.season_step`, before a counted event
is rated; the board of the season (`Ranked`, shared with ADR's loop) ranks a placed player in
it: `RatingModel.in_season`) and the rating changes, which
name the model (schemas/rating_change.md, `model`). The pool's σ-sum S is ADR's: a model without
one has `units` 0, so S and its limbs stay 0.

Why the event loop is written twice, not once behind engine.RatingModel: one loop for every
model would call ADR through the Protocol, and a compiled call through a Protocol is a generic
Python call: that cost ADR's rating path 2,700 instructions per event (+3.9 %,
bench/rate_batch_instructions.py), against the ~1 % this project allows the hot path for sharing.
Nor can the loop be compiled once for every model: compiled, it checks every state it takes
from the View against its declared type (PlayerState). So the per-event loop stays ADR's own,
and what runs once per batch or per changed player is shared, compiled, from consumer/_batch.py
(`finish_plan`, `count_player`, `content_digest`, `POOL_FULL`, View and Plan); a rule changed in
one loop must be changed in the other (tests/consumer/test_model_pools.py and the contract suite
run both on the same cases).

This module is not compiled (runtime/compiled.py): the states it handles are not PlayerState, and
a compiled function would check every tuple it reads from the View against ADR's types.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container
from typing import Any, Final

import msgspec
from msgspec.structs import astuple

from consumer._batch import (
    POOL_FULL,
    Plan,
    Ranked,
    View,
    batch_season,
    content_digest,
    count_player,
    finish_plan,
)
from consumer._intake import Accepted
from consumer._stages import HASH_VALUES, NO_STAGES, RATE, StageTimer
from engine import DEFAULT_LATENESS_MS, Params, RatingModel, is_duplicate, tier_label
from redis_layout import Keys
from redis_layout.player_codec import float_text, model_items
from schemas import RatingChange, Role
from schemas.rating_change import VERSION as RATING_CHANGE_VERSION

_ENCODE: Final = msgspec.msgpack.Encoder().encode


def rate_model_batch(
    events: list[Accepted],
    batch_offsets: dict[int, int],
    view: View,
    keys: Keys,
    params: Params,
    model: RatingModel[Any],
    lateness_ms: int = DEFAULT_LATENESS_MS,
    max_players: int | None = None,
    refused: Container[tuple[int, int]] = (),
    stages: StageTimer = NO_STAGES,
) -> Plan:
    """`events` applied in order on top of `view` with `model` (consumer._batch.rate_batch's
    rules and Plan); `params` gives the pool's cooldown (§2.1, whatever the model)."""
    stages.start()
    plan = Plan(epoch=view.epoch)
    epoch = view.epoch
    states: dict[str, Any] = {}
    vers: dict[str, int] = {}
    watermarks = dict(view.watermarks)
    cooldowns = dict(view.cooldowns)
    ids = dict(view.event_ids)
    touched_pairs: dict[str, int] = {}
    total = view.sigma_units_total
    count = view.player_count
    newcomer = model.new_player()
    new_units = model.units(newcomer)
    name = model.name
    players = view.players
    seasons = view.seasons
    has_seasons = bool(seasons.starts)
    newest = -1  # the largest counted ts (the ladder's season)
    for item in events:
        applied_to = view.offsets.get(item.partition)
        if applied_to is not None and item.offset < applied_to:
            plan.already_applied += 1
            continue
        _v, event_id, arena, attacker, victim, ts = astuple(item.event)[:6]
        watermark = watermarks.get(item.partition)
        if watermark is not None and ts < watermark - lateness_ms:
            plan.late += 1
            if plan.late_sample is None:
                plan.late_sample = event_id
            continue
        pair = keys.cooldown(attacker, victim)
        corrupt = view.corrupt
        if corrupt and (attacker in corrupt or victim in corrupt or pair in corrupt):
            plan.rejected.append((item, "corrupt_state"))
            continue
        a, b = _current(attacker, states, players), _current(victim, states, players)
        joining = (a is None) + (b is None)
        if (item.partition, item.offset) in refused or (
            max_players is not None and count + joining > max_players
        ):
            plan.pool_full.append(item)
            plan.rejected.append((item, POOL_FULL))
            continue
        id_key = keys.event_id(event_id)
        seen = ids.get(id_key)
        if seen is not None:
            if seen == content_digest(arena, attacker, victim, ts):
                plan.duplicates += 1
                if watermark is None or ts > watermark:
                    watermarks[item.partition] = ts
            else:
                plan.rejected.append((item, "id_reused"))
            continue
        if watermark is None or ts > watermark:
            watermarks[item.partition] = ts
        pair_last = cooldowns.get(pair)
        if is_duplicate(pair_last, ts, params):  # §2.1
            plan.duplicates += 1
            continue
        if a is None:
            a = newcomer
        if b is None:
            b = newcomer
        added = joining * new_units
        rated_a, rated_b = a, b
        try:
            if has_seasons:  # a season's soft reset at the player's first event of it
                rated_a = model.season_step(a, ts, seasons)
                rated_b = model.season_step(b, ts, seasons)
                added += model.units(rated_a) - model.units(a)
                added += model.units(rated_b) - model.units(b)
            outcome = model.rate(
                rated_a, rated_b, ts, total + added, count + joining, view.snapshot, pair_last
            )
        except ArithmeticError:  # a stored state its codec let through
            plan.rejected.append((item, "corrupt_state"))
            plan.unratable += 1
            continue
        count += joining
        total += added + outcome.sigma_units_delta
        new_a, new_b = outcome.attacker, outcome.victim
        states[attacker] = new_a
        states[victim] = new_b
        cooldowns[pair] = ts
        touched_pairs[pair] = ts
        digest = ids[id_key] = content_digest(arena, attacker, victim, ts)
        plan.event_ids.append((id_key, digest, ts))
        plan.counted += 1
        plan.counted_ts.append(ts)
        if ts > newest:
            newest = ts
        changes: tuple[tuple[str, Role, Any, Any], ...] = (
            (attacker, "attacker", a, new_a),
            (victim, "victim", b, new_b),
        )
        for player, role, old, new in changes:
            seq = vers[player] = vers.get(player, players[player][1]) + 1
            record = model_change_record(
                model, name, player, role, arena, event_id, ts, old, new, seq, epoch
            )
            plan.outbox.append((player, record))
    stages.stop(RATE)
    stages.start()
    plan.season = batch_season(view, newest)
    _plan_players(plan, states, vers, view, model)
    stages.stop(HASH_VALUES)
    return finish_plan(plan, view, count, touched_pairs, watermarks, batch_offsets)


def model_change_record(
    model: RatingModel[Any],
    name: str,
    player: str,
    role: Role,
    arena: str,
    source_id: str,
    ts: int,
    old: Any,
    new: Any,
    seq: int,
    epoch: int,
) -> bytes:
    """The encoded rating change of `player` from `old` to `new`: mu and sigma are the model's
    hash values `mu` and `sigma` (`to_fields`), its tiers, and `model` its name."""
    mu_before, _s, _n, _t, tier_before = model.to_fields(old)[:5]
    mu_after, sigma_after, _n, _t, tier_after = model.to_fields(new)[:5]
    return _ENCODE(
        RatingChange(
            v=RATING_CHANGE_VERSION,
            id=f"{source_id}:{role}",
            player=player,
            role=role,
            arena=arena,
            source_id=source_id,
            ts=ts,
            mu_before=float(mu_before),
            mu_after=float(mu_after),
            sigma_after=float(sigma_after),
            tier_before=tier_label(tier_before) if tier_before else None,
            tier_after=tier_label(tier_after) if tier_after else None,
            seq=seq,
            epoch=epoch,
            model=name,
        )
    )


def _current(player: str, states: dict[str, Any], players: dict[str, Any]) -> Any:
    """`player`'s state as the batch left it so far, else as read (None: not tracked yet)."""
    state = states.get(player)
    return players[player][0] if state is None else state


def _plan_players(
    plan: Plan, states: dict[str, Any], vers: dict[str, int], view: View, model: RatingModel[Any]
) -> None:
    """The players section (redis_layout/apply_contract.SCORED_PLAYER_ITEMS), tier counts and
    σ-limb deltas of every player the batch changed (consumer._batch._plan_players' rules).
    With seasons the board is the season's (`Ranked`): a placed player not in it gets no score
    ("" : not ranked) and no tier count."""
    tier_counts: Counter[str] = Counter()
    out = plan.players
    seasons = view.seasons
    ranked = Ranked(plan, view) if seasons.starts else None
    for player, state in states.items():
        old, ver = view.players[player]
        if old is state:
            continue
        new_ver = vers[player]
        plan.states.put(player, state, new_ver)
        fields = model.to_fields(state)
        out.append(player)
        out.append(str(ver))
        out.append(str(new_ver))
        out.extend(model_items(fields))
        since = model.activity_time(state)
        out.append("" if since is None else str(since))
        tier = fields[4]
        if ranked is not None:  # seasons: the board's own tier counts
            was_on = (
                old is not None and bool(model.tier(old))
                and model.in_season(old, seasons, ranked.read)
            )  # fmt: skip
            is_on = bool(tier) and model.in_season(state, seasons, ranked.after)
            ranked.count(0 if old is None else model.tier(old), was_on, tier, is_on, tier_counts)
            out.append(float_text(model.display(state)) if is_on else "")
            old_units = 0 if old is None else model.units(old)
            count_player(plan, tier_counts, 0, 0, old_units, model.units(state))
            continue
        out.append(float_text(model.display(state)) if tier else "")  # ranked once placed
        if old is None:
            count_player(plan, tier_counts, 0, tier, 0, model.units(state))
        else:
            count_player(
                plan, tier_counts, model.tier(old), tier, model.units(old), model.units(state)
            )
    plan.tier_counts = {label: d for label, d in tier_counts.items() if d}
