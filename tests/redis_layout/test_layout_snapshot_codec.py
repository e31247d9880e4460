"""The `{ns}:snapshot` hash codec (redis_layout.snapshot_codec): exact float round trip, and one
set of checks for every reader (anything else is a CorruptValue)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import Snapshot
from redis_layout import CorruptValue, decode_snapshot, encode_snapshot

_finite = st.floats(allow_nan=False, allow_infinity=False)


@given(
    version=st.integers(1, 2**62),
    taken_at=st.integers(0, 2**53),
    mean=_finite,
    bounds=st.none()
    | st.lists(_finite, min_size=14, max_size=14).map(lambda b: tuple(sorted(b, reverse=True))),
    count=st.integers(0, 10**9),
)
def test_snapshot_hash_round_trips_bit_for_bit(
    version: int, taken_at: int, mean: float, bounds: tuple[float, ...] | None, count: int
) -> None:
    snap = Snapshot(taken_at=taken_at, mean_mu_active=mean, boundaries=bounds, active_count=count)
    fields = encode_snapshot(snap) | {"version": str(version)}
    raw = {k.encode(): v.encode() for k, v in fields.items()}
    decoded = decode_snapshot(raw)
    assert decoded == (version, snap)
    assert decoded is not None
    got = decoded[1]
    assert repr(got.mean_mu_active) == repr(mean)  # -0.0 stays -0.0
    assert [repr(b) for b in got.boundaries or ()] == [repr(b) for b in bounds or ()]


def test_no_boundaries_is_written_empty_and_null_reads_as_none() -> None:
    snap = Snapshot(taken_at=5, mean_mu_active=1000.0, boundaries=None, active_count=0)
    assert encode_snapshot(snap)["boundaries"] == ""
    fields = {"version": "3", "computed_at": "5", "active_count": "0", "mean_mu_active": "1000.0"}
    assert decode_snapshot(fields | {"boundaries": "null"}) == (3, snap)
    assert decode_snapshot({}) is None


@pytest.mark.parametrize(
    "bad",
    [
        {"boundaries": "[1.0, 2.0]"},
        {"boundaries": "[" + ",".join(["NaN"] * 14) + "]"},
        {"mean_mu_active": "inf"},
        {"version": "x"},
        {"computed_at": None},
        # forms the consumer's own parser used to accept: one codec now, one set of checks
        {"boundaries": " ".join(str(1400.0 - 25 * k) for k in range(14))},
        {"boundaries": "[" + ",".join(str(1000.0 + k) for k in range(14)) + "]"},  # increasing
        {"boundaries": "[" + ",".join(['"1000.0"'] * 14) + "]"},  # strings
        {"boundaries": "[" + ",".join(["true"] * 14) + "]"},
        {"boundaries": "[" + ",".join(["1e999"] * 14) + "]"},
        {"computed_at": ""},
        {"version": "0"},
        {"active_count": "-1"},
        {"mean_mu_active": None},
    ],
)
def test_unreadable_snapshot_hash_is_a_state_error(bad: dict[str, str | None]) -> None:
    fields: dict[str, str | None] = {
        "version": "1",
        "computed_at": "5",
        "active_count": "0",
        "mean_mu_active": "1000.0",
        "boundaries": "",
    } | bad
    with pytest.raises(CorruptValue):
        decode_snapshot({k: v for k, v in fields.items() if v is not None})
