"""Redis key names (docs/design.md, "Redis layout"), hash-tagged `{ns}`: one slot holds all."""

from __future__ import annotations


class Keys:
    """The key names of one rating pool (namespace)."""

    __slots__ = (
        "active_mu",
        "activity",
        "cooldown_due",
        "lb",
        "namespace",
        "outbox",
        "pop",
        "prefix",
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
