"""adr rebuild's native core (adr_cli/_rebuild_core.c) against the pure path, the reference:
on generated logs (repeat kills, resends, reused ids, late events, several partitions, malformed
and unusual bytes, extreme values, the opt-in parameters), `rate_native` must give the very
`Rated` and `LogRead` that `rate_pure` gives: every player's every field bit for bit, the
snapshot, counters, watermarks, records in their order, and the dead-letter reasons.

A scripted stand-in for the Kafka consumer serves both (a unit test: the real broker and Redis
run in tests/consumer/test_rebuild.py, with both cores)."""

from __future__ import annotations

import importlib
import random
import struct
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adr_cli import _rebuild_log, _rebuild_pool, _rebuild_rate
from engine import Params, RatingBook, Snapshot
from redis_layout import Keys
from redis_layout.event_ids import CountingRules
from runtime import compiled
from schemas import Limits

NOW = 1_770_000_000_000


@pytest.fixture(scope="module")
def native() -> Any:
    """adr_cli._rebuild_native with the core built in place (skipped without a C compiler, an
    error under ADR_COMPILED=1)."""
    try:
        compiled.build_native_inplace()
    except OSError as exc:
        if compiled.required():
            raise
        pytest.skip(f"native core not built: {exc}")
    from adr_cli import _rebuild_native

    return importlib.reload(_rebuild_native)


# -- a scripted consumer --------------------------------------------------------------------


@dataclass
class _Message:
    _partition: int
    _offset: int
    _key: bytes | None
    _value: bytes | None

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value


@dataclass
class _Consumer:
    """Each consume() takes the next batch size from `sizes` (cycling) and fills it from the
    assigned, unpaused partitions in turn; a partition's position is its next offset."""

    logs: dict[int, list[tuple[bytes | None, bytes | None]]]
    sizes: list[int]
    extra: int = 0
    """Messages appended past the end each partition had at the start (must be ignored)."""
    pos: dict[int, int] = field(default_factory=dict)
    paused: set[int] = field(default_factory=set)
    calls: int = 0

    def list_topics(self, topic: str, timeout: float) -> Any:
        meta = SimpleNamespace(error=None, partitions={p: None for p in self.logs})
        return SimpleNamespace(topics={topic: meta})

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        return 0, len(self.logs[tp.partition])

    def assign(self, tps: list[Any]) -> None:
        for tp in tps:
            self.pos[tp.partition] = 0

    def pause(self, tps: list[Any]) -> None:
        self.paused |= {tp.partition for tp in tps}

    def resume(self, tps: list[Any]) -> None:
        self.paused -= {tp.partition for tp in tps}

    def position(self, tps: list[Any]) -> list[Any]:
        return [SimpleNamespace(offset=self.pos[tp.partition]) for tp in tps]

    def consume(self, n: int, timeout: float) -> list[_Message]:
        size = min(n, self.sizes[self.calls % len(self.sizes)])
        self.calls += 1
        out: list[_Message] = []
        for p in sorted(self.pos):
            if p in self.paused:
                continue
            log = self.logs[p]
            end = len(log) + self.extra
            while self.pos[p] < end and len(out) < size:
                o = self.pos[p]
                key, value = log[o] if o < len(log) else (b"a0", b"\x80")
                out.append(_Message(p, o, key, value))
                self.pos[p] = o + 1
        return out


# -- msgpack by hand: the encodings msgspec never writes but accepts ---------------------------


def _str(s: str, wide: bool) -> bytes:
    raw = s.encode()
    if len(raw) < 32 and not wide:
        return bytes([0xA0 | len(raw)]) + raw
    if len(raw) < 256:
        return bytes([0xD9, len(raw)]) + raw
    return bytes([0xDA]) + struct.pack(">H", len(raw)) + raw


def _int(v: int, form: str) -> bytes:
    if form == "min":
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack(">b", v)
        if 0 <= v < 2**32:
            return b"\xce" + struct.pack(">I", v)
        if 0 <= v < 2**64:
            return b"\xcf" + struct.pack(">Q", v)
        return b"\xd3" + struct.pack(">q", v)
    if form == "u64" and 0 <= v < 2**64:
        return b"\xcf" + struct.pack(">Q", v)
    if form == "i64" and -(2**63) <= v < 2**63:
        return b"\xd3" + struct.pack(">q", v)
    return _int(v, "min")


def _event(fields: list[tuple[str, Any]], wide: bool, ts_form: str) -> bytes:
    out = bytearray([0x80 | len(fields)])
    for name, value in fields:
        out += _str(name, False)
        if isinstance(value, bytes):
            out += value
        elif isinstance(value, int):
            out += _int(value, ts_form)
        elif isinstance(value, float):
            out += b"\xcb" + struct.pack(">d", value)
        else:
            out += _str(value, wide)
    return bytes(out)


# -- generated logs ------------------------------------------------------------------------


def _logs(seed: int, n: int, parts: int, players: int, hostile: float) -> dict[int, list[Any]]:
    """A seeded log: arenas keyed to partitions, event time moving on (sometimes back, a lot),
    repeat kills, resends and reused ids, and with probability `hostile` per message something
    unusual (malformed, a wrong key, a self kill, a non-ASCII or long id, an `extra`, odd
    integer and string encodings, a ts out of range or beyond 2**53)."""
    rng = random.Random(seed)
    logs: dict[int, list[Any]] = {p: [] for p in range(parts)}
    t = NOW - 3_600_000 - n * 520_000  # the steps below average 499,500 ms
    sent: list[tuple[str, str, str, str, int]] = []
    pairs: dict[str, tuple[str, str]] = {}
    for i in range(n):
        arena = f"a{rng.randrange(6)}"
        p = int(arena[1:]) % parts
        t += rng.choice((0, 1, 500, 30_000, 61_000, 400_000, 3_000_000))
        ts = t - rng.choice((0, 0, 0, 0, 70_000, 4_000_000)) if rng.random() < 0.2 else t
        a, b = f"p{rng.randrange(players)}", f"p{rng.randrange(players)}"
        while b == a:
            b = f"p{rng.randrange(players)}"
        if arena in pairs and rng.random() < 0.2:  # a repeat kill, often inside the cooldown
            a, b = pairs[arena]
        pairs[arena] = (a, b)
        eid = f"e{i}"
        r = rng.random()
        if sent and r < 0.08:  # a resend: the same event again, mostly a recent one
            eid, arena, a, b, ts = rng.choice(sent[-5:] if rng.random() < 0.8 else sent)
            p = int(arena[1:]) % parts
        elif sent and r < 0.12:  # an id reused for another kill
            eid = rng.choice(sent)[0]
        sent.append((eid, arena, a, b, ts))
        key: bytes | None = arena.encode()
        wide = rng.random() < 0.1
        ts_form = rng.choice(("min", "min", "u64", "i64"))
        fields: list[tuple[str, Any]] = [
            ("v", 1), ("id", eid), ("arena", arena), ("attacker", a), ("victim", b), ("ts", ts),
        ]  # fmt: skip
        if rng.random() < 0.3:
            rng.shuffle(fields)
        value: bytes | None
        if rng.random() < hostile:
            kind = rng.randrange(16)
            if kind == 0:
                value = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
            elif kind == 1:
                key = rng.choice((None, b"other", arena.encode() + b"x"))
                value = _event(fields, wide, ts_form)
            elif kind == 2:
                fields = [(k, a if k == "victim" else v) for k, v in fields]
                value = _event(fields, wide, ts_form)
            elif kind == 3:
                fields = [(k, v + "é" if k in ("attacker", "id") else v) for k, v in fields]
                value = _event(fields, wide, ts_form)
            elif kind == 4:
                fields = [(k, v * 13 if k == "victim" else v) for k, v in fields]  # > 64 bytes?
                value = _event(fields, wide, ts_form)
            elif kind == 5:
                value = _event([*fields, ("extra", b"\x81\xa1k\x01")], wide, ts_form)
            elif kind == 6:
                value = _event([*fields, ("extra", b"\xc0")], wide, ts_form)
            elif kind == 7:
                value = _event([*fields, ("extra", b"\x01")], wide, ts_form)
            elif kind == 8:
                value = _event([(k, NOW + 10**9 if k == "ts" else v) for k, v in fields], wide,
                               ts_form)  # fmt: skip
            elif kind == 9:
                value = _event([(k, 2**53 + 7 if k == "ts" else v) for k, v in fields], wide,
                               ts_form)  # fmt: skip
            elif kind == 10:
                value = _event([(k, -5 if k == "ts" else v) for k, v in fields], wide, ts_form)
            elif kind == 11:
                value = _event([(k, float(ts) if k == "ts" else v) for k, v in fields], wide,
                               ts_form)  # fmt: skip
            elif kind == 12:
                value = _event([*fields, ("v", 1)], wide, ts_form)  # a repeated field
            elif kind == 13:
                value = _event([(k, v) for k, v in fields if k != "arena"], wide, ts_form)
            elif kind == 14:
                value = _event(fields, wide, ts_form) + b"\x00"  # trailing bytes
            else:
                value = None  # a tombstone
        else:
            value = _event(fields, wide, ts_form)
        logs[p].append((key, value))
    return logs


_PARAMS = [
    {},
    {"p_min": 3, "n_min": 2, "sigma_place": 400.0, "n_active": 2, "t_active": 0.0625},
    {"p_min": 2, "n_min": 1, "sigma_place": 400.0, "h_req": 5.0, "n_active": 1, "window": 3,
     "beta": 0.5, "t_return": 0.01, "tau": 0.02, "sigma_drift": 200.0},
    {"repeat_window": 600.0, "logistic_link": 1.0, "floor_margin": 70.0, "mu0": 80.0,
     "delta_max": 60.0, "p_min": 2, "n_min": 1, "sigma_place": 400.0},
    {"own_sigma": 1.0, "zero_sum_update": 1.0, "bound_return_decay": 1.0, "decay_grace": 0.01,
     "t_return": 0.01, "t_cooldown": 0.5, "rho_s": 0.9, "s_max": 50},
    {"sigma_min": 1.0, "sigma_max": 1000.0, "sigma0": 900.0, "gamma": 3.0, "t_cooldown": 0.0,
     "p_min": 1, "n_min": 0, "sigma_place": 4000.0},
]  # fmt: skip


def _bits(x: Any) -> Any:
    """Floats as their bits (-0.0 and 0.0 differ), recursively."""
    if isinstance(x, float):
        return ("f", struct.pack("<d", x).hex())
    if isinstance(x, tuple | list):
        return [_bits(v) for v in x]
    if isinstance(x, dict):
        return {k: _bits(v) for k, v in x.items()}
    if isinstance(x, Snapshot):
        return ("snap", x.taken_at, _bits(x.mean_mu_active), _bits(x.boundaries), x.active_count)
    if hasattr(x, "__struct_fields__"):
        return [_bits(getattr(x, f)) for f in x.__struct_fields__]
    return x


class _Capture(_rebuild_pool.BulkWriter):
    """The bulk writer's commands, packed, kept instead of sent."""

    def __init__(self) -> None:
        super().__init__(None, 1, lambda n: None)  # type: ignore[arg-type]
        self.commands: list[bytes] = []

    def flush(self) -> None:
        self.commands += self._packed
        self._packed = []


def _packed(rated: _rebuild_rate.Rated, lateness: int, params: Params) -> dict[str, Any]:
    """The record commands at two horizons (the rebuild's, and one keeping every record), built
    by the pure write (_write_records) or the native core (packed_records)."""
    keys = Keys("ns-é")  # a non-ASCII namespace: keys are UTF-8
    lowest = min(rated.watermarks.values()) if rated.watermarks else None
    keep = lateness + params.pair_memory_ms
    cooldowns, ids = list(rated.cooldowns), list(rated.event_ids)
    rated.cooldowns, rated.event_ids = cooldowns, ids
    out: dict[str, Any] = {}
    for name, low in (("horizon", lowest), ("all", None)):
        horizon = _rebuild_pool.sweep_horizon(low, keep)
        if rated.packed_records is not None:
            commands, *counts = rated.packed_records(
                keys.prefix, horizon, _rebuild_pool.MEMBERS_PER_COMMAND
            )
        else:
            records = _rebuild_pool.live_records(cooldowns, ids, low, keep)
            writer = _Capture()
            _rebuild_pool._write_records(writer, keys, records)
            writer.flush()
            commands, counts = writer.commands, list(records.counts)
        out[name] = (commands, counts)
    return out


def _outcome(
    rated: _rebuild_rate.Rated, read: _rebuild_log.LogRead, lateness: int, params: Params
) -> dict[str, Any]:
    packed = _packed(rated, lateness, params)
    return {
        "packed": packed,
        "events": rated.events, "verdicts": rated.verdicts, "across": rated.across,
        "watermarks": rated.watermarks, "counted": rated.counted, "resends": rated.resends,
        "reused": rated.reused, "snapshot": _bits(rated.snapshot),
        "players": _bits(list(rated.players)), "cooldowns": list(rated.cooldowns),
        "event_ids": list(rated.event_ids), "messages": read.messages, "rejected": read.rejected,
        "samples": read.rejected_samples, "starts": read.starts, "ends": read.ends,
    }  # fmt: skip


Outcome = dict[str, Any]


def _both(native: Any, logs: dict[int, list[Any]], sizes: list[int], params: Params,
          lateness: int, every: int, fixed: Snapshot | None, limits: Limits,
          pause_at: int = 200_000, extra: int = 0) -> tuple[Outcome, Outcome]:  # fmt: skip
    read_p = _rebuild_log.LogRead()
    book = RatingBook(params, calibrate_every_ms=every, fixed_snapshot=fixed, lateness_ms=lateness)
    pure = _rebuild_rate.rate_pure(
        _Consumer(logs, sizes, extra), "t", limits, read_p, lambda n: None, CountingRules(book),
        lateness, pause_at=pause_at,
    )  # fmt: skip
    read_n = _rebuild_log.LogRead()
    assert native.unavailable(params, lateness, every) is None
    fast = native.rate_native(
        _Consumer(logs, sizes, extra), "t", limits, read_n, lambda n: None, params, lateness,
        every, fixed, pause_at=pause_at,
    )  # fmt: skip
    return _outcome(pure, read_p, lateness, params), _outcome(fast, read_n, lateness, params)


def _limits() -> Limits:
    return Limits(max_age_ms=2**62, max_future_ms=60_000)


def _now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both paths read the wall clock once: fix it, so ts_out_of_range is decided alike."""
    import adr_cli._rebuild_log as log_mod

    fake = SimpleNamespace(time_ns=lambda: NOW * 1_000_000, monotonic=__import__("time").monotonic)
    monkeypatch.setattr(log_mod, "time", fake)
    from adr_cli import _rebuild_native

    monkeypatch.setattr(_rebuild_native, "time", fake)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32),
    n=st.integers(0, 400),
    parts=st.integers(1, 3),
    players=st.sampled_from((3, 8, 40)),
    hostile=st.sampled_from((0.0, 0.1, 0.4)),
    sizes=st.lists(st.integers(1, 97), min_size=1, max_size=4),
    which=st.integers(0, len(_PARAMS) - 1),
    lateness=st.sampled_from((0, 50_000, 3_600_000)),
    every=st.sampled_from((0, 60_000, 300_000)),
    fixed=st.booleans(),
    pause_at=st.sampled_from((2, 200_000)),
    extra=st.integers(0, 3),
)
def test_the_native_core_equals_the_pure_path_bit_for_bit(
    native: Any, monkeypatch: pytest.MonkeyPatch, seed: int, n: int, parts: int, players: int,
    hostile: float, sizes: list[int], which: int, lateness: int, every: int, fixed: bool,
    pause_at: int, extra: int,
) -> None:  # fmt: skip
    _now(monkeypatch)
    params = Params.from_overrides(_PARAMS[which])
    snapshot = None
    if fixed:
        bounds = tuple(float(1300 - 40 * k) for k in range(14))
        snapshot = Snapshot(taken_at=None, mean_mu_active=1010.5, boundaries=bounds, active_count=9)
    logs = _logs(seed, n, parts, players, hostile)
    pure, fast = _both(native, logs, sizes, params, lateness, every, snapshot, _limits(),
                       pause_at, extra)  # fmt: skip
    assert fast == pure


def test_a_long_stream_with_tiers_and_snapshots(
    native: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long enough for boundaries, placements, promotions, pair-table sweeps into runs and run
    expiry, id forgetting, and returning players: each checked to happen, then equality."""
    _now(monkeypatch)
    params = Params.from_overrides(_PARAMS[1])
    logs = _logs(7, 6000, 2, 60, 0.05)
    pure, fast = _both(native, logs, [500, 1000, 37], params, 600_000, 120_000, None, _limits())
    states = [s for _id, s in pure["players"]]
    assert pure["snapshot"][3] is not None  # boundaries were computed
    assert any(s[7] > 1 for s in states)  # placed players (tier field), some promoted/demoted
    assert pure["verdicts"].get("duplicate") and pure["verdicts"].get("late")
    assert pure["resends"] and pure["reused"] and pure["rejected"]
    assert fast == pure


def test_without_the_extension_the_rebuild_says_why_and_the_pure_path_runs(
    native: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build without a C compiler has no core: `unavailable` says so, and rate_pure (which
    never imports it) still rates."""
    monkeypatch.setattr(native, "_core", None)
    monkeypatch.setattr(native, "_why", "the native core is not built (test)")
    assert native.unavailable(Params(), 0, 0) == "the native core is not built (test)"
    with pytest.raises(RuntimeError):
        native.rate_native(_Consumer({0: []}, [1]), "t", _limits(), _rebuild_log.LogRead(),
                           lambda n: None, Params(), 0, 0, None)  # fmt: skip
    read = _rebuild_log.LogRead()
    book = RatingBook(Params())
    rated = _rebuild_rate.rate_pure(
        _Consumer(_logs(3, 50, 1, 5, 0.0), [10]), "t", _limits(), read, lambda n: None,
        CountingRules(book), 3_600_000,
    )  # fmt: skip
    assert rated.events == 50 and rated.counted == book.counted > 0


def test_parameters_the_core_does_not_keep_fall_back_to_the_pure_path(native: Any) -> None:
    assert native.unavailable(Params(), 3_600_000, 300_000) is None
    assert "pair_decay" in (native.unavailable(Params(pair_decay=600.0), 0, 0) or "")
    assert native.unavailable(Params(sigma_min=1e-9, sigma_max=1e9, sigma0=1.0), 0, 0)
    assert native.unavailable(Params(), 2**62, 0)


def test_fsum_and_sigma_mean_edges(native: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of players (S far above 2**64) and windows of |Δμ| that cancel badly in a naive
    sum: the core's exact σ̄ and fsum keep it equal."""
    _now(monkeypatch)
    params = Params.from_overrides({"window": 50, "rho_v": 3.0})
    logs = _logs(11, 5000, 1, 3000, 0.0)
    pure, fast = _both(native, logs, [4096], params, 3_600_000, 300_000, None, _limits())
    assert len(pure["players"]) > 2000
    assert fast == pure
