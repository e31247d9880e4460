"""The consumer's Redis side: read what a batch needs, apply a Plan in one atomic script."""

from __future__ import annotations

import importlib.resources
import json
from typing import Final

import redis

from consumer._batch import Plan, View
from consumer._errors import ConsumerError
from consumer._keys import Keys
from consumer._redis_codec import FIELDS, decode_player
from engine import Params, Snapshot, initial_snapshot

_SCRIPT: Final = importlib.resources.files("consumer").joinpath("_apply.lua").read_text()
_POP_FIELDS: Final = ("count", "sigma_hi", "sigma_lo")
_SNAPSHOT_FIELDS: Final = ("version", "computed_at", "active_count", "mean_mu_active", "boundaries")
_BOUNDARY_COUNT: Final = 14


class Conflict(Exception):
    """A value the batch was computed from changed before the write (another instance)."""

    def __init__(self, what: str, key: str) -> None:
        super().__init__(f"{what} {key} changed concurrently")
        self.what = what


class Store:
    """Reads and the atomic write of one rating pool (namespace) for one source topic."""

    def __init__(self, client: redis.Redis, keys: Keys, topic: str, params: Params) -> None:
        self._r = client
        self._keys = keys
        self._params = params
        self._offsets_key = keys.offsets(topic)
        self._apply = client.register_script(_SCRIPT)
        self._snapshot_version: bytes | None = None
        self._snapshot = initial_snapshot(params)

    def read_offsets(self, partitions: list[int]) -> dict[int, int | None]:
        """partition -> next offset to apply, as stored with the state."""
        if not partitions:
            return {}
        values = self._r.hmget(self._offsets_key, [str(p) for p in partitions])
        return {p: None if v is None else int(v) for p, v in zip(partitions, values, strict=True)}

    def read_view(self, players: list[str], pairs: list[str], partitions: list[int]) -> View:
        """Everything the batch is computed from, in one round trip."""
        pipe = self._r.pipeline(transaction=False)
        for player in players:
            pipe.hmget(self._keys.player(player), FIELDS)
        if pairs:
            pipe.mget(pairs)
        pipe.hmget(self._keys.pop, _POP_FIELDS)
        pipe.hmget(self._offsets_key, [str(p) for p in partitions] or ["-"])
        pipe.hget(self._keys.snapshot, "version")
        replies = pipe.execute()
        n = len(players)
        stored: dict[str, tuple[object, int]] = {}
        for player, values in zip(players, replies[:n], strict=True):
            decoded = decode_player(values)
            stored[player] = (None, 0) if decoded is None else decoded
        cooldowns = (
            {k: None if v is None else int(v) for k, v in zip(pairs, replies[n], strict=True)}
            if pairs
            else {}
        )
        count, hi, lo = replies[-3]
        offsets = {
            p: None if v is None else int(v) for p, v in zip(partitions, replies[-2], strict=False)
        }
        return View(
            players=stored,  # type: ignore[arg-type]
            cooldowns=cooldowns,
            sigma_units_total=(int(hi or 0) << 32) + int(lo or 0),
            player_count=int(count or 0),
            offsets=offsets,
            snapshot=self._current_snapshot(replies[-1]),
        )

    def _current_snapshot(self, version: bytes | None) -> Snapshot:
        """The latest published snapshot; re-read in full only when its version changed."""
        if version != self._snapshot_version:
            values = self._r.hmget(self._keys.snapshot, _SNAPSHOT_FIELDS)
            self._snapshot = (
                initial_snapshot(self._params) if values[0] is None else parse_snapshot(values)
            )
            self._snapshot_version = values[0]
        return self._snapshot

    def write(self, plan: Plan, cooldown_ms: int, max_age_ms: int) -> None:
        """Apply the plan atomically; Conflict (nothing written) if a checked value moved."""
        k = self._keys
        keep_ms = cooldown_ms + max_age_ms
        sections: list[list[object]] = [
            _flat((key, str(ver)) for key, ver in plan.player_checks),
            _flat((key, "" if ts is None else str(ts)) for key, ts in plan.cooldown_checks),
            _flat((str(p), "" if o is None else str(o)) for p, o in plan.offset_checks),
            _flat([key, *fields] for key, fields in plan.players),
            _flat(plan.leaderboard),
            _flat(plan.activity),
            _flat(plan.active_mu),
            list(plan.inactive),
            _flat((label, str(d)) for label, d in plan.tier_counts.items()),
            [str(plan.count_delta), str(plan.sigma_hi_delta), str(plan.sigma_lo_delta)],
            # A pair's key is needed while an accepted event could still fall in its cooldown.
            _flat((key, str(ts), str(ts + keep_ms)) for key, ts in plan.cooldowns),
            _flat((str(p), str(o)) for p, o in plan.offsets),
            _flat(plan.outbox),
        ]
        args: list[object] = [str(len(s)) for s in sections]
        for section in sections:
            args.extend(section)
        keys = [
            self._offsets_key,
            k.outbox,
            k.lb,
            k.activity,
            k.active_mu,
            k.pop,
            k.tier_counts,
        ]
        result = self._apply(keys=keys, args=args)
        if int(result[0]) != 0:
            what, key = result[1], result[2]
            raise Conflict(
                what.decode() if isinstance(what, bytes) else str(what),
                key.decode() if isinstance(key, bytes) else str(key),
            )


def _flat(pairs: object) -> list[object]:
    out: list[object] = []
    for item in pairs:  # type: ignore[attr-defined]
        out.extend(item)
    return out


def parse_snapshot(values: list[bytes | None]) -> Snapshot:
    """A Snapshot from HMGET `{ns}:snapshot` version computed_at active_count mean_mu_active
    boundaries (boundaries: a JSON array of 14 floats, or empty for none)."""
    _version, computed_at, active_count, mean_mu, boundaries = values
    if mean_mu is None:
        raise ConsumerError("snapshot hash lacks mean_mu_active")
    parsed: tuple[float, ...] | None = None
    if boundaries:
        text = boundaries.decode().strip()
        items = json.loads(text) if text.startswith("[") else text.replace(",", " ").split()
        parsed = tuple(float(x) for x in items)
        if len(parsed) != _BOUNDARY_COUNT:
            raise ConsumerError(f"snapshot has {len(parsed)} boundaries, want {_BOUNDARY_COUNT}")
    return Snapshot(
        taken_at=int(computed_at) if computed_at else None,
        mean_mu_active=float(mean_mu),
        boundaries=parsed,
        active_count=int(active_count or 0),
    )
