"""`{ns}:layout` (redis_layout/layout.py): the writer's stamp (SET NX) and the readers' check,
which refuses every value but a known version's decimal text."""

from __future__ import annotations

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from redis_layout import LAYOUT_VERSION, Keys, UnknownLayout, check_layout, stamp_layout
from redis_layout.layout import REBUILDING, layout_of


def test_absent_reads_as_unstamped_and_the_known_version_as_itself() -> None:
    assert layout_of("{p}:layout", None) is None
    assert layout_of("{p}:layout", str(LAYOUT_VERSION).encode()) == LAYOUT_VERSION


@given(st.one_of(st.binary(), st.text()))
def test_anything_else_is_refused_naming_the_key_and_the_value(value: bytes | str) -> None:
    if value in (str(LAYOUT_VERSION), str(LAYOUT_VERSION).encode()):
        return
    with pytest.raises(UnknownLayout) as exc:
        layout_of("{p}:layout", value)
    said = "`adr rebuild` is writing" if value in (REBUILDING, REBUILDING.encode()) else "upgrade"
    assert "{p}:layout" in str(exc.value) and said in str(exc.value)


@pytest.mark.parametrize("value", [REBUILDING, REBUILDING.encode()])
def test_a_namespace_being_rebuilt_is_refused_saying_so(value: bytes | str) -> None:
    """No upgrade reads it: the message says why (adr rebuild midway) instead."""
    with pytest.raises(UnknownLayout) as exc:
        layout_of("{p}:layout", value)
    assert "{p}:layout is 'rebuilding': `adr rebuild` is writing this namespace" in str(exc.value)
    assert "upgrade" not in str(exc.value)


def test_the_stamp_writes_once_and_refuses_a_pool_laid_out_otherwise(
    redis_client: redis.Redis,
    unique_name,  # type: ignore[no-untyped-def]
) -> None:
    keys = Keys(unique_name("layout"))
    try:
        assert check_layout(redis_client, keys) is None
        stamp_layout(redis_client, keys)
        stamp_layout(redis_client, keys)  # a second instance, a restart: unchanged
        assert redis_client.get(keys.layout) == str(LAYOUT_VERSION).encode()
        assert check_layout(redis_client, keys) == LAYOUT_VERSION
        redis_client.set(keys.layout, str(LAYOUT_VERSION + 1))  # a later release laid it out
        with pytest.raises(UnknownLayout):
            stamp_layout(redis_client, keys)
        assert redis_client.get(keys.layout) == str(LAYOUT_VERSION + 1).encode()  # kept
    finally:
        redis_client.delete(keys.layout)
