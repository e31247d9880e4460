"""The package's root exception and the closed set of rejection reasons."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """Why a message was rejected; the value is the dead-letter `reason` header and metric label."""

    TOO_LARGE = "too_large"
    UNDECODABLE = "undecodable"
    NOT_A_MAP = "not_a_map"
    MISSING_FIELD = "missing_field"
    WRONG_TYPE = "wrong_type"
    UNKNOWN_VERSION = "unknown_version"
    BAD_ID = "bad_id"
    BAD_VALUE = "bad_value"
    SELF_KILL = "self_kill"
    TS_OUT_OF_RANGE = "ts_out_of_range"
    KEY_MISMATCH = "key_mismatch"
    """Meaning check: the Kafka key is not the UTF-8 of the event's arena (kill_event.md)."""
    ID_REUSED = "id_reused"
    """Meaning check: an event id already counted with other content (kill_event.md)."""
    CORRUPT_STATE = "corrupt_state"
    """Not the message's fault: the Redis state it needs does not decode (docs/operations.md)."""


class SchemaError(Exception):
    """A message that does not satisfy its wire format; `reason` says which rule it broke."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail
