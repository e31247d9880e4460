"""The Lua scripts that write a rating pool, one `.lua` file each (package data).

`APPLY` is the consumer's atomic batch write (apply.lua; its argument layout is built by
consumer._store). The others are the tier job's, and every write they make is fenced by its
lease: a replica that paused past its lease's expiry finds another holder's id in the lease key,
so its scripts change nothing (they answer NOT_HOLDER), and it cannot prune or overwrite a newer
snapshot.
"""

from __future__ import annotations

import hashlib
import importlib.resources
from typing import Final


def _source(name: str) -> str:
    return importlib.resources.files(__name__).joinpath(name).read_text()


APPLY: Final = _source("apply.lua")
APPLY_SHA: Final = hashlib.sha1(APPLY.encode()).hexdigest()
"""What EVALSHA names APPLY by (the consumer sends the call pre-packed, not via redis-py)."""
LEASE_ACQUIRE: Final = _source("lease_acquire.lua")
LEASE_RELEASE: Final = _source("lease_release.lua")
PRUNE_STEP: Final = _source("prune_step.lua")
DROP_INACTIVE: Final = _source("drop_inactive.lua")
ADD_ACTIVE: Final = _source("add_active.lua")
PUBLISH: Final = _source("publish.lua")

NOT_HOLDER: Final = -1
"""What a fenced script answers when the lease is not (or no longer) ours."""
SNAPSHOT_MOVED_ON: Final = -2
"""What PUBLISH answers when another publication came after the snapshot the job read."""
