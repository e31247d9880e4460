"""Fixtures of the tier-job tests: `ns`, a fresh rating-pool namespace dropped after the test
(a module that needs players in it overrides `ns`, asking for this one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from _tierjob_support import drop_namespace

from redis_layout import Keys


@pytest.fixture
def ns(redis_client: redis.Redis, unique_name) -> Iterator[str]:  # type: ignore[no-untyped-def]
    name = unique_name("tj")
    yield name
    drop_namespace(redis_client, Keys.of(name))
