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


class SchemaError(Exception):
    """A message that does not satisfy its wire format; `reason` says which rule it broke."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail
