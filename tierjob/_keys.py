"""Redis key names the tier job reads and writes (docs/design.md, "Redis layout")."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class Keys:
    """The keys of one rating pool (namespace); all hash-tagged `{ns}`, so one slot holds all."""

    namespace: str
    prefix: str
    lb: str
    activity: str
    active_mu: str
    pop: str
    snapshot: str
    tier_counts: str
    lease: str
    pruned_to: str

    @classmethod
    def of(cls, namespace: str) -> Keys:
        prefix = f"{{{namespace}}}:"
        return cls(
            namespace=namespace,
            prefix=prefix,
            lb=prefix + "lb",
            activity=prefix + "activity",
            active_mu=prefix + "active_mu",
            pop=prefix + "pop",
            snapshot=prefix + "snapshot",
            tier_counts=prefix + "tier_counts",
            lease=prefix + "calib:lease",
            pruned_to=prefix + "calib:pruned_to",
        )

    @property
    def player_prefix(self) -> str:
        return self.prefix + "player:"

    def player(self, player_id: str) -> str:
        return self.player_prefix + player_id
