"""Every Redis key name of a rating pool (docs/design.md, "Redis layout"), hash-tagged `{ns}`
so that one cluster slot holds the whole pool. The consumer, the tier job, the leaderboard reader
and the benches all take their key names from here."""

from __future__ import annotations


class Keys:
    """The key names of one rating pool (namespace)."""

    __slots__ = (
        "active_mu",
        "activity",
        "cooldown_due",
        "lb",
        "lease",
        "namespace",
        "outbox",
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
        self.activity = self.prefix + "activity"
        self.active_mu = self.prefix + "active_mu"
        self.pop = self.prefix + "pop"
        self.outbox = self.prefix + "outbox"
        self.snapshot = self.prefix + "snapshot"
        self.tier_counts = self.prefix + "tier_counts"
        self.cooldown_due = self.prefix + "cd_due"
        self.lease = self.prefix + "calib:lease"
        self.pruned_to = self.prefix + "calib:pruned_to"

    @classmethod
    def of(cls, namespace: str) -> Keys:
        """The same as `Keys(namespace)`."""
        return cls(namespace)

    @property
    def player_prefix(self) -> str:
        return self.prefix + "player:"

    def player(self, player_id: str) -> str:
        return f"{self.prefix}player:{player_id}"

    def cooldown(self, attacker: str, victim: str) -> str:
        # The attacker's length makes the pair unambiguous without a separator.
        return f"{self.prefix}cd:{len(attacker)}:{attacker}{victim}"

    def event_id(self, event_id: str) -> str:
        """An event id counted recently (value: its content digest; see schemas/kill_event.md)."""
        return f"{self.prefix}eid:{event_id}"

    def offsets(self, topic: str) -> str:
        return f"{self.prefix}offsets:{topic}"

    def watermarks(self, topic: str) -> str:
        return f"{self.prefix}watermarks:{topic}"
