"""consumer/_season_read.py: `{ns}:season_schedule` as the consumer reads it with every batch.
Absent is the first season; a record that does not decode or disagrees with itself stops the
batch (CorruptState: nothing is rated under a schedule the write cannot check)."""

from __future__ import annotations

import pytest

from consumer._errors import CorruptState
from consumer._season_read import SeasonRecord
from engine import NO_SEASONS, SeasonReset, SeasonSchedule, SeasonStart
from redis_layout.season_schedule import encode_schedule

ONE = SeasonSchedule((SeasonStart("s2", 5_000, 1001.5, SeasonReset(0.5, 90.0)),), version=1)
TEXT = encode_schedule(ONE).encode()


def test_absent_is_the_first_season_and_a_record_is_decoded_once_per_version() -> None:
    record = SeasonRecord("{ns}:season_schedule")
    assert record.parse([None, None, None]) == (NO_SEASONS, 0, 0)
    schedule, version, ladder = record.parse([b"1", TEXT, b"0"])
    assert (schedule, version, ladder) == (ONE, 1, 0)
    again = record.parse([b"1", b"not even json, but the version did not move", b"1"])
    assert again[0] is schedule and again[2] == 1  # not decoded again


@pytest.mark.parametrize(
    "reply",
    [
        [b"2", TEXT, b"0"],  # the version field and the text disagree
        [b"1", b"{", b"0"],
        [b"1", None, b"0"],
        [b"x", TEXT, b"0"],
        [b"01", TEXT, b"0"],  # compared as text by the write: only the canonical form
        [b"1", TEXT, b"2"],  # a ladder beyond the starts
        [None, None, b"1"],
        [b"1", TEXT.replace(b'"v":1', b'"v":9'), b"0"],
        ValueError("WRONGTYPE"),
    ],
)
def test_a_record_that_is_not_one_stops_the_batch(reply: object) -> None:
    with pytest.raises(CorruptState) as caught:
        SeasonRecord("{ns}:season_schedule").parse(reply)
    assert caught.value.what == "season_schedule"
