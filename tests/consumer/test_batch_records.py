"""rate_batch's per-event records, built on the hot path without the schema package's helpers,
are the bytes those helpers give: the rating change (schemas.rating_change +
encode_rating_change) and the event id's content digest (pure logic: no server needed)."""

from __future__ import annotations

import hashlib

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from consumer._batch import content_digest, rating_change_record
from engine import TIER_LABELS, Params, PlayerState, new_player, tier_label
from schemas import ROLES, KillEvent, encode_rating_change, rating_change

_ids = st.text(min_size=1, max_size=20)
_floats = st.floats(allow_nan=False, allow_infinity=False)
_numbers = _floats | st.integers(-(10**6), 10**6)
"""A stored μ or σ as the engine hands it: a float, or an int where a parameter was one."""
_tiers = st.integers(0, len(TIER_LABELS))


def _state(mu: float, sigma: float, tier: int) -> PlayerState:
    return msgspec.structs.replace(new_player(Params()), mu=mu, sigma=sigma, tier=tier)


@given(
    player=_ids,
    role=st.sampled_from(ROLES),
    arena=_ids,
    source_id=_ids,
    ts=st.integers(0, 2**63 - 1),
    before=st.tuples(_numbers, _numbers, _tiers),
    after=st.tuples(_numbers, _numbers, _tiers),
    seq=st.integers(0, 2**63 - 1),
    epoch=st.one_of(st.just(0), st.integers(0, 2**63 - 1)),
)
def test_a_rating_change_record_is_the_schema_helpers_bytes(
    player: str,
    role: str,
    arena: str,
    source_id: str,
    ts: int,
    before: tuple[float, float, int],
    after: tuple[float, float, int],
    seq: int,
    epoch: int,
) -> None:
    old, new = _state(*before), _state(*after)
    assert role in ROLES
    reference = encode_rating_change(
        rating_change(
            player=player,
            role=role,  # type: ignore[arg-type]
            arena=arena,
            source_id=source_id,
            ts=ts,
            mu_before=old.mu,
            mu_after=new.mu,
            sigma_after=new.sigma,
            tier_before=tier_label(old.tier) or None,
            tier_after=tier_label(new.tier) or None,
            seq=seq,
            epoch=epoch,
        )
    )
    record = rating_change_record(player, role, arena, source_id, ts, old, new, seq, epoch)  # type: ignore[arg-type]
    assert record == reference


@given(arena=_ids, attacker=_ids, victim=_ids, ts=st.integers(0, 2**63 - 1))
def test_a_content_digest_is_blake2b_of_the_fields_as_hex_bytes(
    arena: str, attacker: str, victim: str, ts: int
) -> None:
    """The digest the event-id keys hold, as it was first written (hexdigest, encoded)."""
    text = f"{len(arena)}:{arena}{len(attacker)}:{attacker}{victim}:{ts}"
    reference = hashlib.blake2b(text.encode(), digest_size=8).hexdigest().encode()
    assert content_digest(arena, attacker, victim, ts) == reference


def test_rate_batch_unpacks_kill_events_in_their_declaration_order() -> None:
    """rate_batch and batch_reads read its fields by position (consumer._intake.EventFields)."""
    assert KillEvent.__struct_fields__ == ("v", "id", "arena", "attacker", "victim", "ts", "extra")
