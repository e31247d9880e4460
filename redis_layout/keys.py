"""Every Redis key name of a rating pool (docs/design.md, "Redis layout"), hash-tagged `{ns}`
so that one cluster slot holds the whole pool. The consumer, the tier job, the leaderboard reader
and the benches all take their key names (and SCAN patterns) from here."""

from __future__ import annotations

import re
from typing import Final

_GLOB_SPECIAL: Final = re.compile(r"([*?\[\]\\])")

DUE_BUCKET_MS: Final = 10_000
"""The width (ms of event time) of one bucket of the cooldown and event-id index.

The write script (scripts/apply.lua) appends each record's key to the list of its ts's bucket
and deletes the record once the whole bucket lies at or below the horizon (lowest watermark -
lateness - t_cooldown): at most this much event time after its own ts did, against the 61 minutes
a record lives by default (+0.3 %). Wide enough that a batch (a few seconds of event time at
most) touches one or two buckets, so a few RPUSH calls per batch, and that the registry stays
small (keep / width: about 370 buckets by default); finer buckets would add keys (about 100 B
each), not save work per record. A bucket is named by its end, so instances that differ in this
width (a rolling change) still sweep every record only after its ts.

Lists, not sets: an append and a pop from the head cost Redis a fraction of a SADD and an SPOP
(no hashing; SPOP picks random members of a thinning hash table), and an entry takes a few bytes
beside its name. A key written twice in one bucket is listed twice; the sweep's DEL is
idempotent."""


def due_bucket_end(ts: int) -> int:
    """The last ms of the bucket of event time that `ts` falls in (its index bucket's name)."""
    return (ts // DUE_BUCKET_MS + 1) * DUE_BUCKET_MS - 1


class Keys:
    """The key names of one rating pool (namespace)."""

    __slots__ = (
        "active_mu",
        "activity",
        "cooldown_bucket_prefix",
        "cooldown_due",
        "due_buckets",
        "epoch",
        "event_id_bucket_prefix",
        "layout",
        "lb",
        "lease",
        "model",
        "namespace",
        "outbox",
        "players_at",
        "pop",
        "prefix",
        "pruned_to",
        "snapshot",
        "tier_counts",
    )

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.prefix = f"{{{namespace}}}:"
        self.lb = self.prefix + "lb"
        self.players_at = self.prefix + "player:"
        """What a player hash's key starts with (an archive's own: `archive`)."""
        self.layout = self.prefix + "layout"
        """The pool's layout version (decimal string; absent = written before the key):
        redis_layout/layout.py."""
        self.model = self.prefix + "model"
        """The pool's rating model and a digest of its parameters (JSON, set once):
        redis_layout/pool_model.py."""
        self.activity = self.prefix + "activity"
        self.active_mu = self.prefix + "active_mu"
        """The zset of active players' μ that releases before 2026-12-05 kept (the consumer
        wrote it on every event): nothing writes it now, the tier job unlinks it."""
        self.pop = self.prefix + "pop"
        self.outbox = self.prefix + "outbox"
        self.snapshot = self.prefix + "snapshot"
        self.tier_counts = self.prefix + "tier_counts"
        self.cooldown_due = self.prefix + "cd_due"
        """The zset index (member = record key, score = its ts) of releases before the buckets:
        the write script only drains it (scripts/apply.lua)."""
        self.due_buckets = self.prefix + "due"
        """zset of the index buckets that hold entries (member and score = the bucket's end)."""
        self.cooldown_bucket_prefix = self.prefix + "cd_due:"
        self.event_id_bucket_prefix = self.prefix + "id_due:"
        self.epoch = self.prefix + "epoch"
        """The pool's epoch (decimal string; absent = 0): raised when the consumer finds Redis
        holding less than it wrote, carried by every rating change (schemas/rating_change.md)."""
        self.lease = self.prefix + "calib:lease"
        self.pruned_to = self.prefix + "calib:pruned_to"
        """The tier job's prune mark of releases before 2026-12-05: unlinked with `active_mu`."""

    @classmethod
    def of(cls, namespace: str) -> Keys:
        """The same as `Keys(namespace)`."""
        return cls(namespace)

    @property
    def tag(self) -> str:
        """`{ns}`: the hash tag that puts every key of the pool in one cluster slot."""
        return "{" + self.namespace + "}"

    @property
    def outbox_quarantine(self) -> str:
        """Where the relay moves an outbox entry that does not decode."""
        return self.outbox + ":quarantine"

    @property
    def player_prefix(self) -> str:
        return self.players_at

    @property
    def cooldown_prefix(self) -> str:
        """What every cooldown key starts with."""
        return self.prefix + "cd:"

    @property
    def match_all(self) -> str:
        """A SCAN MATCH pattern of every key of the pool."""
        return _glob_escape(self.prefix) + "*"

    @property
    def match_players(self) -> str:
        """A SCAN MATCH pattern of every player hash."""
        return _glob_escape(self.player_prefix) + "*"

    @property
    def match_cooldowns(self) -> str:
        """A SCAN MATCH pattern of every cooldown key."""
        return _glob_escape(self.cooldown_prefix) + "*"

    def player(self, player_id: str) -> str:
        return f"{self.players_at}{player_id}"

    def history(self, player_id: str) -> str:
        """A player's recent rating changes (a list, oldest first, bounded): written by the
        history reader (serve/history.py) from the rating-changes topic, read by `adr serve`."""
        return f"{self.prefix}history:{player_id}"

    @property
    def meta(self) -> str:
        """The studio's per-player metadata (a hash: field = player id, value =
        redis_layout/meta_codec.py): written by `adr meta`, read by `adr serve`; no part of the
        ratings (the consumer never touches it)."""
        return self.prefix + "meta"

    @property
    def seasons(self) -> str:
        """The closed seasons (a zset: member = season id, score = closing time, ms)."""
        return self.prefix + "seasons"

    @property
    def current_season(self) -> str:
        """The running season (a hash: `id`, `started_at` ms, `previous`), from the first close."""
        return self.prefix + "season"

    @property
    def season_schedule(self) -> str:
        """The season starts the consumer applies (a hash: `version`, `seasons` JSON, `ladder`
        the season the live board shows): redis_layout/season_schedule.py."""
        return self.prefix + "season_schedule"

    def season_prefix(self, season_id: str) -> str:
        """What every key of a closed season's archive starts with (serve/seasons.py)."""
        return f"{self.prefix}season:{season_id}:"

    def archive(self, season_id: str) -> Keys:
        """The keys of a closed season's archive, for the leaderboard reader: `lb` the final
        board, `player(id)` the final reader fields; the rest name no archived key."""
        keys = Keys(self.namespace)
        keys.lb = self.season_prefix(season_id) + "lb"
        keys.players_at = self.season_prefix(season_id) + "player:"
        return keys

    def cooldown(self, attacker: str, victim: str) -> str:
        """`cd:<len(attacker)>:<attacker><victim>`: the last counted attacker -> victim."""
        # The attacker's length makes the pair unambiguous without a separator.
        return f"{self.prefix}cd:{len(attacker)}:{attacker}{victim}"

    def event_id(self, event_id: str) -> str:
        """An event id counted recently (value: its content digest; see schemas/kill_event.md)."""
        return f"{self.prefix}eid:{event_id}"

    def cooldown_bucket(self, end: int) -> str:
        """The list of the cooldown keys written with a ts in the index bucket ending at `end`."""
        return f"{self.cooldown_bucket_prefix}{end}"

    def event_id_bucket(self, end: int) -> str:
        """The list of the event-id keys written with a ts in the index bucket ending at `end`."""
        return f"{self.event_id_bucket_prefix}{end}"

    def offsets(self, topic: str) -> str:
        return f"{self.prefix}offsets:{topic}"

    def watermarks(self, topic: str) -> str:
        return f"{self.prefix}watermarks:{topic}"


def _glob_escape(text: str) -> str:
    """`text` matched literally by a Redis glob pattern."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)
