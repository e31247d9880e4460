"""`adr rebuild`'s native core (adr_cli/_rebuild_core.c, docs/native.md): read_log's loop with
the decode, merge, counting rules and ADR rating of each consume() batch done in C.

Python keeps the Kafka calls (consume, position, pause and resume) and every message the C
decoder does not take (an error, a tombstone, anything but the common six-field map of ASCII
ids): those go through the consumer's decoder (schemas.decode_kill_event, check_key), so their
dead-letter reasons are the consumer's, and an accepted one is handed to the core in its place.
The result is `Rated`, equal to `_rebuild_rate.rate_pure`'s on the same messages
(tests/consumer/test_rebuild_native.py)."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from adr_cli import _rebuild_log
from adr_cli._rebuild_rate import Rated
from engine import Params, PlayerState, Snapshot
from schemas import Reason, SchemaError, check_key, decode_kill_event


def _load() -> tuple[ModuleType | None, str | None]:
    """(the core, None), or (None, why not)."""
    try:
        core = importlib.import_module("adr_cli._rebuild_core")
    except ImportError as exc:  # a pure build (no C compiler at build time), or not built in place
        return None, f"the native core is not built ({exc})"
    here = Path(__file__).resolve().parent
    source = here / "_rebuild_core.c"
    built = Path(core.__file__ or "")
    in_checkout = (here.parent / "setup.py").is_file()  # a wheel may carry the .c too: not stale
    if in_checkout and built.is_file() and built.stat().st_mtime < source.stat().st_mtime:
        return None, (
            "the in-place native core is older than its source (rebuild it: "
            "python -m runtime.compiled native)"
        )
    return core, None


_core, _why = _load()
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_QUANTILE_MAX: Final = 2**30
_TS_CLAMP: Final = 2**62
"""A ts the Python decoder accepted beyond ±2**62 (only with huge --max-age-ms/--max-future-ms)
is handed to the core clamped there: the book rejects it as bad_ts either way, and no watermark
or stored ts comes near it, so every comparison it takes part in comes out the same."""
_VERDICTS: Final = (
    "counted", "duplicate", "resend", "id_reused", "late", "self_kill", "bad_ts", "bad_player",
)  # fmt: skip
_FLOATS: Final = (
    "mu0", "mu_min", "mu_max", "sigma0", "sigma_min", "sigma_max", "gamma", "sigma_peak",
    "eta_min", "eta_max", "rho_s", "rho_v", "w_ref", "gamma_phi", "lambda_phi", "c_loss", "theta",
    "lambda_sigma", "tau", "sigma_drift", "t_return", "alpha", "lambda_pool", "nu_min", "nu_max",
    "delta_max", "sigma_place", "h_req", "beta", "bound_return_decay", "zero_sum_update",
    "floor_margin", "decay_grace", "logistic_link", "own_sigma", "sigma_scale",
)  # fmt: skip
_INTS: Final = (
    "s_max", "n_min", "n_active", "p_min", "window", "cooldown_ms", "repeat_window_ms",
    "pair_memory_ms", "active_ms", "sigma_k",
)  # fmt: skip


def unavailable(params: Params, lateness_ms: int, calibrate_every_ms: int) -> str | None:
    """Why the native core cannot rate with these settings here (None: it can)."""
    if _core is None:
        return _why
    if max(lateness_ms, calibrate_every_ms) >= _TS_CLAMP:
        return "--lateness-ms or --calibrate-every beyond 2**62 ms"
    if params.pair_decay_ms:
        return "pair_decay keeps pair loads the native core does not"
    if params.sigma_max * params.sigma_scale >= 2**62:
        return "sigma_max / sigma_min too far apart for the core's 64-bit sigma units"
    if any(max(p.numerator, p.denominator) > _QUANTILE_MAX for p in params.quantile_ps):
        return "tier_shares with denominators above 2**30"
    if params.window > 2**20 or params.n_active > 2**20:
        return "window or n_active above 2**20"
    return None


def rate_native(
    consumer: Consumer,
    topic: str,
    limits: Any,
    read: _rebuild_log.LogRead,
    tick: Callable[[int], None],
    params: Params,
    lateness_ms: int,
    calibrate_every_ms: int,
    fixed: Snapshot | None,
    timeout: float = 30.0,
    pause_at: int = _rebuild_log.PAUSE_AT,
) -> Rated:
    """`_rebuild_rate.rate_pure` with an ADR RatingBook of these settings, in C."""
    if _core is None:
        raise RuntimeError(_why)
    parts = _rebuild_log.partitions_of(consumer, topic, timeout)
    for p in parts:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
        read.starts[p], read.ends[p] = low, high
    ends = [read.ends.get(p, 0) for p in range(max(parts) + 1)]
    now_ms = time.time_ns() // 1_000_000
    core = _core.Core(
        {name: getattr(params, name) for name in (*_FLOATS, *_INTS)},
        [(q.numerator, q.denominator) for q in params.quantile_ps],
        lateness_ms,
        calibrate_every_ms,
        None if fixed is None else _snapshot_tuple(fixed),
        max(_INT64_MIN, now_ms - limits.max_age_ms),
        min(_INT64_MAX, now_ms + limits.max_future_ms),
        ends,
    )
    todo = {p for p in parts if read.ends[p] > read.starts[p]}
    slow = 0  # messages the Python decoder handled
    if todo:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(todo)])
        open_parts = set(todo)
        paused: set[int] = set()
        while True:
            core.merge(sorted(open_parts))
            for p in list(paused):
                if core.buffered(p) <= pause_at // 2:
                    consumer.resume([TopicPartition(topic, p)])
                    paused.discard(p)
            if not open_parts:
                break
            messages = consumer.consume(_rebuild_log.READ_BATCH, 1.0)
            i = core.feed(messages, 0)
            while i < len(messages):
                slow += _slow(core, messages[i], read, now_ms, limits)
                i = core.feed(messages, i + 1)
            for p in list(open_parts):
                if _rebuild_log._done(consumer, topic, p, read.ends[p]):
                    open_parts.discard(p)
                elif core.buffered(p) >= pause_at and p not in paused and len(open_parts) > 1:
                    consumer.pause([TopicPartition(topic, p)])
                    paused.add(p)
            tick(slow + core.result()["messages"])
    res = core.result()
    read.messages += slow + res["messages"]
    taken, mean, bounds, active = res["snapshot"]
    snapshot = Snapshot(taken_at=taken, mean_mu_active=mean, boundaries=bounds, active_count=active)
    if fixed is not None:
        snapshot = fixed  # the very object, as RatingBook keeps it
    verdicts = {v: res[f"v_{v}"] for v in _VERDICTS if res[f"v_{v}"]}
    return Rated(
        events=res["events"], verdicts=verdicts, across=res["across"],
        watermarks=res["watermarks"], counted=res["counted"], resends=res["resends"],
        reused=res["reused"], snapshot=snapshot,
        players=((item[0], PlayerState(*item[1:])) for item in core.players()),
        cooldowns=_lazy(core.cooldowns), event_ids=_lazy(core.event_ids),
        packed_records=core.records,
    )  # fmt: skip


def _lazy(make: Callable[[], list[Any]]) -> Iterator[Any]:
    """The core's list, made only if read (the write takes `packed_records` instead: building
    a tuple per record costs as much as the rating)."""
    yield from make()


def _slow(core: Any, m: Any, read: _rebuild_log.LogRead, now_ms: int, limits: Any) -> int:
    """One message the C decoder left: read_log's handling of it; 1 if it counts as read."""
    err = m.error()
    if err is not None:
        raise KafkaException(err)
    offset, partition = m.offset(), m.partition()
    if offset is None or partition is None or offset >= read.ends[partition]:
        return 0
    try:  # the consumer's checks and reasons (consumer/_intake.py)
        event = decode_kill_event(m.value() or b"", now_ms, limits)
        check_key(event, m.key())
    except SchemaError as exc:
        _rebuild_log._reject(read, partition, offset, exc.reason.value)
        return 1
    except Exception:  # a decoder bug: undecodable, as the consumer dead-letters it
        _rebuild_log._reject(read, partition, offset, Reason.UNDECODABLE.value)
        return 1
    ts = max(-_TS_CLAMP, min(_TS_CLAMP, event.ts))
    core.push(partition, event.id, event.arena, event.attacker, event.victim, ts)
    return 1


def _snapshot_tuple(s: Snapshot) -> tuple[int | None, float, tuple[float, ...] | None, int]:
    return (s.taken_at, s.mean_mu_active, s.boundaries, s.active_count)
