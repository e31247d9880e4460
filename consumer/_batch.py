"""ADR's rating loop, and what every rating loop reads and writes (pure: no I/O).

Given what Redis held when the batch was read (`View`), `rate_batch` applies each event in order
with ADR (engine.AdrModel) and describes the one atomic write (`Plan`) that makes Redis hold the
result, with the events it leaves out as a value (`Plan.rejected`, dead-lettered by the
lifecycle before the write). The plan's pieces every loop shares are here too (`finish_plan`,
`count_player`, `content_digest`); the other models' loop is consumer/_model_batch.py, and the
pipeline picks one of the two when it is built (`pipeline.rating_step`). This module is compiled
(runtime/compiled.py): its calls into ADR and into View and Plan are native. Nothing here talks to
Redis or Kafka.
"""

from __future__ import annotations

import dataclasses
from binascii import hexlify
from collections import Counter
from collections.abc import Container
from hashlib import blake2b
from typing import Final, cast

import msgspec
from msgspec.structs import astuple

from consumer._intake import Accepted, EventFields
from consumer._stages import HASH_VALUES, NO_STAGES, RATE, StageTimer
from consumer._view import Entries
from engine import (
    DEFAULT_LATENESS_MS,
    NO_SEASONS,
    AdrModel,
    Params,
    PlayerState,
    SeasonSchedule,
    Snapshot,
    is_duplicate,
    ladder_of,
    season_start_ms,
    season_step,
    tier_label,
)
from redis_layout import Keys
from redis_layout.player_codec import script_items
from schemas import Role
from schemas.rating_change import VERSION as RATING_CHANGE_VERSION
from schemas.rating_change import AdrRatingChange

_LIMB_BITS: Final = 32
_LIMB_MASK: Final = (1 << _LIMB_BITS) - 1
_ENCODE_RECORD: Final = msgspec.msgpack.Encoder().encode
_ID_SUFFIX: Final = {"attacker": ":attacker", "victim": ":victim"}
"""role -> what a rating change's id adds to the source id (schemas.rating_change_id)."""
POOL_FULL: Final = "pool_full"
"""Dead-letter reason of an event that would add players beyond `max_players`."""


@dataclasses.dataclass(slots=True)
class View:
    """What Redis held when the batch was read."""

    players: dict[str, tuple[PlayerState | None, int]]
    """player id -> (stored state or None if new, ver)."""
    cooldowns: dict[str, int | None]
    """cooldown key -> last counted ts of that ordered pair (None: none within the window)."""
    sigma_units_total: int
    """S: the exact σ-sum in units of 2**-k."""
    player_count: int
    """P: tracked players."""
    offsets: dict[int, int | None]
    """partition -> next offset to apply (None: nothing applied yet)."""
    snapshot: Snapshot
    epoch: int = 0
    """The pool epoch (consumer/_epoch.py): every change of the batch carries it, and the write
    applies only while Redis still holds it."""
    watermarks: dict[int, int | None] = dataclasses.field(default_factory=dict)
    """partition -> largest event time accepted there (None: none yet)."""
    corrupt: dict[str, str] = dataclasses.field(default_factory=dict)
    """player id or cooldown key -> why its stored value does not decode (left out above)."""
    event_ids: dict[str, bytes | None] = dataclasses.field(default_factory=dict)
    """event id key -> content digest of the event counted under that id (None: none)."""
    seasons: SeasonSchedule = NO_SEASONS
    """The pool's season schedule (`{ns}:season_schedule`; engine.season_step applies it)."""
    season_version: int = 0
    """Its version: the write applies only while Redis still holds it (as the epoch)."""
    ladder: int = 0
    """The season the live board shows (docs/api.md, "Seasons"); checked by the write too."""


@dataclasses.dataclass(slots=True)
class Plan:
    """One batch's atomic write: what to check (compare-and-set) and what to write."""

    players: list[str | msgspec.Raw] = dataclasses.field(default_factory=list)
    """Per changed player, its items in redis_layout/apply_contract.PLAYER_ITEMS order: id,
    checked ver, new ver, the hash values (FIELDS order, without ver; see `script_items`),
    activity time ("" = none). The write sends them as one msgpack array."""
    states: Entries = dataclasses.field(default_factory=Entries)
    """player -> (state, ver) as the write leaves it, for every player the batch changed."""
    offset_checks: list[tuple[int, int | None]] = dataclasses.field(default_factory=list)
    tier_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    count_delta: int = 0
    sigma_hi_delta: int = 0
    sigma_lo_delta: int = 0
    cooldowns: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    offsets: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    watermarks: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    """(partition, new watermark) where the batch moved it."""
    outbox: list[tuple[str, bytes]] = dataclasses.field(default_factory=list)
    """(player, encoded rating change) in emission order."""
    counted: int = 0
    duplicates: int = 0
    late: int = 0
    """Events older than their partition's watermark minus the lateness: not rated."""
    late_sample: str | None = None
    """The id of the first late event (the log's sample; None: none late)."""
    already_applied: int = 0
    counted_ts: list[int] = dataclasses.field(default_factory=list)
    event_ids: list[tuple[str, bytes, int]] = dataclasses.field(default_factory=list)
    """(id key, content digest, ts) of every event counted: the ids the write records."""
    rejected: list[tuple[Accepted, str]] = dataclasses.field(default_factory=list)
    """Events not rated, in batch order, with the dead-letter reason: `id_reused` (the id was
    counted with other content), `corrupt_state` (a player or cooldown of the event is corrupt
    in Redis, or the engine could not rate its stored states), `pool_full` (see `pool_full`).
    Dead-lettered before this plan is written."""
    unratable: int = 0
    """Of those, events the engine raised on (counted as adr_corrupt_state_total{what=rating})."""
    pool_full: list[Accepted] = dataclasses.field(default_factory=list)
    """Events refused because they would grow the pool past `max_players` (dead-lettered with
    reason `pool_full` before the write; nothing of them is written)."""
    player_count: int = 0
    """P once the write has run (tracked players of the pool)."""
    epoch: int = 0
    """The pool epoch the outbox's changes carry, checked by the write (View.epoch)."""
    season: tuple[int, int, int] = (0, 0, 0)
    """(the schedule's version, the ladder read, the ladder after the batch): the write checks
    the first two and, when the third is larger, starts the new season's board (apply.lua)."""
    unranked: list[str] = dataclasses.field(default_factory=list)
    """Placed players the live board leaves out: their newest counted event is from before the
    season it shows (a late event of the last season)."""


def rate_batch(
    events: list[Accepted],
    batch_offsets: dict[int, int],
    view: View,
    keys: Keys,
    params: Params,
    lateness_ms: int = DEFAULT_LATENESS_MS,
    max_players: int | None = None,
    refused: Container[tuple[int, int]] = (),
    stages: StageTimer = NO_STAGES,
    model: AdrModel | None = None,
) -> Plan:
    """Apply `events` in order on top of `view`; `batch_offsets` = partition -> next offset.

    Lateness is the engine's, by event time per partition: an event older than the largest time
    accepted on its partition minus `lateness_ms` is late (counted, not rated); every other
    event moves that watermark, duplicates included (engine.RatingBook.apply).

    An event that would add players beyond `max_players` (None: no limit) is refused, and so is
    every event at a (partition, offset) in `refused` (already dead-lettered by an earlier
    attempt at this batch: a refusal stands, whatever a re-read shows). `stages` times the
    loop (RATE) and the hash values (HASH_VALUES) apart (consumer/_stages.py).

    The players' states are the rating model's (`model`, default ADR with `params`): a new
    player's, the update of a counted kill, each player's share of S and activity time come
    from its `engine.RatingModel` methods; `params` gives the cooldown of §2.1, the pool's dedup
    rule. `model` is annotated with ADR's class, not the Protocol: compiled, a call through the
    Protocol is a generic Python call, which cost the rating path 2,700 instructions per event
    (+3.9 %, bench/rate_batch_instructions.py); statically typed, the calls are native. Another
    model (the pool's `--model`) is rated by consumer/_model_batch.py instead
    (`pipeline.rating_step`)."""
    if model is None:
        model = AdrModel(params)
    stages.start()
    plan = Plan(epoch=view.epoch)
    epoch = view.epoch
    states: dict[str, PlayerState] = {}
    vers: dict[str, int] = {}  # player -> ver after its latest change so far (= that change's seq)
    watermarks = dict(view.watermarks)
    cooldowns = dict(view.cooldowns)
    ids = dict(view.event_ids)
    touched_pairs: dict[str, int] = {}
    total = view.sigma_units_total
    count = view.player_count
    newcomer = model.new_player()
    new_units = model.units(newcomer)
    seasons = view.seasons
    has_seasons = bool(seasons.starts)
    newest = -1  # the largest counted ts (the ladder's season)
    for item in events:
        applied_to = view.offsets.get(item.partition)
        if applied_to is not None and item.offset < applied_to:
            plan.already_applied += 1  # another instance applied it first (rebalance)
            continue
        fields = cast(EventFields, astuple(item.event))  # one call, not a lookup per field
        event_id, arena, attacker, victim, ts = (
            fields[1],
            fields[2],
            fields[3],
            fields[4],
            fields[5],
        )
        watermark = watermarks.get(item.partition)
        if watermark is not None and ts < watermark - lateness_ms:
            plan.late += 1
            if plan.late_sample is None:
                plan.late_sample = event_id
            continue
        pair = keys.cooldown(attacker, victim)
        corrupt = view.corrupt  # a dead-lettered event changes nothing, not even the watermark
        if corrupt and (attacker in corrupt or victim in corrupt or pair in corrupt):
            plan.rejected.append((item, "corrupt_state"))
            continue
        if (item.partition, item.offset) in refused or (
            max_players is not None
            and count + _joining(attacker, victim, states, view) > max_players
        ):
            plan.pool_full.append(item)
            plan.rejected.append((item, POOL_FULL))
            continue
        id_key = keys.event_id(event_id)
        seen = ids.get(id_key)
        if seen is not None:  # the id was counted: a resend, or reused for another kill
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
        a, b = _current(attacker, states, view), _current(victim, states, view)
        joined = 0
        if a is None:  # step 4 (docs/algorithm.md#steps): joins P with σ0
            a, joined = newcomer, 1
        if b is None:
            b, joined = newcomer, joined + 1
        added = joined * new_units if joined else 0  # S is a big int: no product when 0
        rated_a, rated_b = a, b
        try:
            if has_seasons:  # a season's soft reset at the player's first event of it
                rated_a = season_step(a, ts, seasons, params)
                rated_b = season_step(b, ts, seasons, params)
                if rated_a is not a:
                    added += model.units(rated_a) - model.units(a)
                if rated_b is not b:
                    added += model.units(rated_b) - model.units(b)
            outcome = model.rate(
                rated_a,
                rated_b,
                ts,
                total + added,
                count + joined,
                view.snapshot,
                pair_last,  # the opt-in repeat_window's t' (engine.repeat_weight)
            )
        except ArithmeticError:  # a stored state the decoder let through (e.g. huge window)
            plan.rejected.append((item, "corrupt_state"))  # nothing of the event is kept
            plan.unratable += 1
            continue
        count += joined
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
        outbox = plan.outbox
        seq = _next_seq(attacker, vers, view)
        record = rating_change_record(
            attacker, "attacker", arena, event_id, ts, a, new_a, seq, epoch
        )
        outbox.append((attacker, record))
        seq = _next_seq(victim, vers, view)
        outbox.append(
            (
                victim,
                rating_change_record(victim, "victim", arena, event_id, ts, b, new_b, seq, epoch),
            )
        )

    stages.stop(RATE)
    stages.start()
    plan.season = batch_season(view, newest)
    _plan_players(plan, states, vers, view, model)
    stages.stop(HASH_VALUES)
    return finish_plan(plan, view, count, touched_pairs, watermarks, batch_offsets)


def batch_season(view: View, newest: int) -> tuple[int, int, int]:
    """`Plan.season` of a batch whose largest counted event time is `newest` (-1: none), in
    every rating loop: the schedule's version and the ladder read, which the write checks, and
    the ladder after the batch, the season of its newest counted event when that is later (the
    write then starts that season's board)."""
    ladder = view.ladder
    if view.seasons.starts and newest >= 0:
        ladder = max(ladder, ladder_of(view.seasons, newest))
    return (view.season_version, view.ladder, ladder)


def finish_plan(
    plan: Plan,
    view: View,
    count: int,
    touched_pairs: dict[str, int],
    watermarks: dict[int, int | None],
    batch_offsets: dict[int, int],
) -> Plan:
    """The sections every rating loop ends its plan with, once per batch (ADR's `rate_batch`
    and consumer/_model_batch.py's): P's delta and value, the pairs counted, the watermarks the
    batch moved, and each partition's offset check and next offset."""
    plan.count_delta = count - view.player_count
    plan.player_count = count
    plan.cooldowns = list(touched_pairs.items())
    plan.watermarks = [
        (p, w) for p, w in watermarks.items() if w is not None and w != view.watermarks.get(p)
    ]
    for partition, next_offset in batch_offsets.items():
        stored = view.offsets.get(partition)
        plan.offset_checks.append((partition, stored))
        plan.offsets.append((partition, max(next_offset, stored or 0)))
    return plan


class Ranked:
    """Who the live board ranks when the pool has seasons, in every rating loop: a placed player
    whose largest counted event time is in the season the board shows (the ladder read, `read`,
    from `before`; after the batch, `after`, from `since`; None: the first season, everyone).
    A batch that moves the board to a new season (`switch`) starts it empty: the write empties
    `{ns}:lb` and `{ns}:tier_counts` first, so nobody's old contribution is taken back."""

    __slots__ = ("after", "before", "plan", "read", "since", "switch")

    def __init__(self, plan: Plan, view: View) -> None:
        _version, read, after = plan.season
        self.plan = plan
        self.read = read
        self.after = after
        self.before = season_start_ms(view.seasons, read)
        self.since = season_start_ms(view.seasons, after)
        self.switch = after > read

    def on_board(self, state: PlayerState, since: int | None) -> bool:
        """ADR's rule: placed, and the newest of `recent` (its largest counted time) >= since."""
        if not state.tier:
            return False
        return since is None or (bool(state.recent) and state.recent[-1] >= since)

    def count(
        self, old_tier: int, was_on: bool, new_tier: int, is_on: bool, tier_counts: Counter[str]
    ) -> bool:
        """One changed player's share of the board's own tier counts (the models' loop; ADR's
        `_count_ranked` writes the same rule out): `was_on` the board read (with its old tier),
        `is_on` the board after the batch (with its new one); returns `is_on`. A player on the
        board read counts for nothing once the batch switches it."""
        if was_on and not self.switch:
            tier_counts[tier_label(old_tier)] -= 1
        if is_on:
            tier_counts[tier_label(new_tier)] += 1
        return is_on


def _count_ranked(
    ranked: Ranked,
    player: str,
    old: PlayerState | None,
    state: PlayerState,
    tier_counts: Counter[str],
) -> None:
    """The tier counts of the live board (`Ranked`; `Ranked.count`'s rule, written out: ADR's
    path stays as compiled before) and the placed players it leaves out."""
    if old is not None and not ranked.switch and ranked.on_board(old, ranked.before):
        tier_counts[tier_label(old.tier)] -= 1
    if ranked.on_board(state, ranked.since):
        tier_counts[tier_label(state.tier)] += 1
    elif state.tier:
        ranked.plan.unranked.append(player)


def count_player(
    plan: Plan,
    tier_counts: Counter[str],
    old_tier: int,
    new_tier: int,
    old_units: int,
    new_units: int,
) -> None:
    """One changed player's share of the write's tier counts and σ-limb deltas (a player new to
    the pool has `old_tier` and `old_units` 0), in every rating loop."""
    if old_tier != new_tier:
        if old_tier:
            tier_counts[tier_label(old_tier)] -= 1
        if new_tier:
            tier_counts[tier_label(new_tier)] += 1
    plan.sigma_hi_delta += (new_units >> _LIMB_BITS) - (old_units >> _LIMB_BITS)
    plan.sigma_lo_delta += (new_units & _LIMB_MASK) - (old_units & _LIMB_MASK)


def rating_change_record(
    player: str,
    role: Role,
    arena: str,
    source_id: str,
    ts: int,
    old: PlayerState,
    new: PlayerState,
    seq: int,
    epoch: int,
) -> bytes:
    """The encoded rating change of `player` (in `role`) from `old` to `new` in pool epoch
    `epoch`: the bytes of
    `schemas.encode_rating_change(schemas.rating_change(...))` (tests/consumer/test_batch.py
    checks it), without that helper's interpreted frames: the Struct is built here, compiled, and
    encoded by an encoder made once; it is `AdrRatingChange`, RatingChange without `model`
    (the same bytes: an ADR change leaves `model` out)."""
    old_tier, new_tier = old.tier, new.tier
    return _ENCODE_RECORD(
        AdrRatingChange(
            v=RATING_CHANGE_VERSION,
            id=source_id + _ID_SUFFIX[role],
            player=player,
            role=role,
            arena=arena,
            source_id=source_id,
            ts=ts,
            mu_before=float(old.mu),
            mu_after=float(new.mu),
            sigma_after=float(new.sigma),
            tier_before=tier_label(old_tier) if old_tier else None,
            tier_after=tier_label(new_tier) if new_tier else None,
            seq=seq,
            epoch=epoch,
        )
    )


def content_digest(arena: str, attacker: str, victim: str, ts: int) -> bytes:
    """What an event id stands for: the event's arena, attacker, victim and ts (not `extra`), as
    16 hex digits of BLAKE2b; lengths make the concatenation unambiguous. Takes the fields the
    caller already read (compiled, each read of a KillEvent's field is a generic attribute
    lookup) and hexlifies the digest (bytes at once: no str from hexdigest to encode)."""
    text = f"{len(arena)}:{arena}{len(attacker)}:{attacker}{victim}:{ts}"
    return hexlify(blake2b(text.encode(), digest_size=8).digest())


def _current(player: str, states: dict[str, PlayerState], view: View) -> PlayerState | None:
    """`player`'s state as the batch left it so far: after its latest event in the batch, else
    as read (None: not tracked yet)."""
    state = states.get(player)
    return view.players[player][0] if state is None else state


def _next_seq(player: str, vers: dict[str, int], view: View) -> int:
    """The seq of `player`'s next change, now its ver in `vers`: one more than its ver after its
    latest change in the batch, else than its ver as read."""
    ver = vers.get(player)
    seq = vers[player] = (view.players[player][1] if ver is None else ver) + 1
    return seq


def _joining(attacker: str, victim: str, states: dict[str, PlayerState], view: View) -> int:
    """How many of the two players an event would add to the pool (no generator: once per
    event on the hot path)."""
    players = view.players
    joining = 0
    if attacker not in states and players[attacker][0] is None:
        joining += 1
    if victim not in states and players[victim][0] is None:
        joining += 1
    return joining


def _plan_players(
    plan: Plan,
    states: dict[str, PlayerState],
    vers: dict[str, int],
    view: View,
    model: AdrModel,
) -> None:
    """Hashes (ranks and activity follow from them), tier counts and σ-limb deltas of every
    player the batch changed. A player's new ver is the seq of its last rating change: ver counts
    the player's changes, so each change's seq is the ver right after it."""
    tier_counts: Counter[str] = Counter()
    out = plan.players
    ranked = Ranked(plan, view) if view.seasons.starts else None
    for player, state in states.items():
        old, ver = view.players[player]
        if old is state:
            continue  # read for the batch but its only events were duplicates
        new_ver = vers[player]
        plan.states.put(player, state, new_ver)
        # the items in redis_layout/apply_contract.PLAYER_ITEMS order: id, checked ver, new
        # ver, the hash values (the codec's, however many), activity time
        out.append(player)
        out.append(str(ver))
        out.append(str(new_ver))
        out.extend(script_items(state))
        since = model.activity_time(state)
        out.append("" if since is None else str(since))
        if ranked is not None:  # seasons: the board's own tier counts
            _count_ranked(ranked, player, old, state, tier_counts)
            old_units = 0 if old is None else model.units(old)
            count_player(plan, tier_counts, 0, 0, old_units, model.units(state))
        elif old is None:
            count_player(plan, tier_counts, 0, state.tier, 0, model.units(state))
        else:
            count_player(
                plan, tier_counts, old.tier, state.tier, model.units(old), model.units(state)
            )
    plan.tier_counts = {label: d for label, d in tier_counts.items() if d}
