# ruff: noqa: E402  (ADR_COMPILED=0 must take effect before the imports below)
"""Where Redis spends its CPU on the consumer's atomic batch write (redis_layout: apply.lua).

    python bench/redis_write_cost.py                    # 200,000 events, 100,000 players
    python bench/redis_write_cost.py --events 20000 --players 5000 --repeats 1   # quick

First it rates the events batch by batch as the consumer does (read, rate_batch, write, on a
real Redis; no Kafka) and keeps every write exactly as it was sent. Then it sends the same
writes again, each variant into an empty namespace, and reads Redis's own CPU time (INFO cpu)
around each replay:

- `script`: the shipped script, as sent.
- `script_arguments_only`: the same call, but the script returns once it has its arguments (the
  players' msgpack section unpacked): the cost of handing Redis and Lua what to write.
- `script_without_*`: the script with one part left out (the `ver` checks, or the HGET of each
  `ver` and its check, the players' state values, the rank and activity sets, the cooldown keys
  with their index entries (a list per bucket of event time), the sweep of cooldown keys past
  every watermark, the outbox entry, the event-id checks and keys).
- `raw_writes`: consumer_bench.py's raw pipelined writes of as many events on as many players as
  the recording changed (two hashes of the 13 fields of player-hash layout 1, issue #20's
  baseline, and two ZADD per event, 1,000 events per round trip): `ratios.script_vs_raw_writes`
  is the script's Redis CPU per event over theirs.
- `script_hashes_and_sets_only`: the script with all of the consumer's own parts above left out
  (ver checks, cooldown and event-id records, their checks and sweep, outbox): the raw writes'
  share of the script's work.
- `multi_exec`: the same writes as a WATCH / MULTI / EXEC transaction (the `ver` checks as HGET
  after WATCH), the alternative to a script for a compare-and-set write.

Uses REDIS_URL when set, else starts the local stack (stack/). Prints one JSON object on stdout;
progress goes to stderr. Figures are Redis CPU µs per event; compare them within one run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from runtime import compiled

BUILD = compiled.activate()

import hiredis
import msgspec
import redis
from _stack import bench_servers

import consumer._store as store_module
from consumer._batch import Plan, rate_batch
from consumer._intake import Accepted, Batch
from consumer._store import Store
from engine import Params, new_player
from loadgen import SimConfig, generate
from redis_layout import Keys, scripts
from redis_layout.keys import due_bucket_end
from redis_layout.player_codec import FIELDS, encode_player_v1
from schemas import Limits, decode_kill_event

HOUR_MS = 3_600_000
BATCH = 1000
TOPIC = "kill-events"
SCRIPT = scripts.APPLY
_FIELD = tuple(field for field in FIELDS if field != "ver")  # the values Plan.players carries
_RAW_FIELDS = tuple(encode_player_v1(new_player(Params()), 1))  # issue #20: the 13 fields of
# layout 1, the baseline of the raw writes
_VALUES = len(_FIELD)
_ITEMS = _VALUES + 4  # per player in Plan.players: id, checked ver, new ver, values, since
_TIER = _FIELD.index("tier")


def say(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Recorded:
    """One batch write as the consumer sent it, and the plan it came from."""

    __slots__ = ("events", "packed", "plan")

    def __init__(self, plan: Plan, packed: bytes, events: int) -> None:
        self.plan = plan
        self.packed = packed
        self.events = events


def _batches(cfg: SimConfig) -> Iterator[list[Accepted]]:
    now = time.time_ns() // 1_000_000
    limits = Limits(max_age_ms=4 * HOUR_MS)
    batch: list[Accepted] = []
    for offset, message in enumerate(generate(cfg)):
        try:
            event = decode_kill_event(message.value, now, limits)
        except Exception:  # the generator's malformed messages: dead letters, not writes
            continue
        batch.append(Accepted(partition=0, offset=offset, event=event))
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def record(client: redis.Redis, namespace: str, cfg: SimConfig, params: Params) -> list[Recorded]:
    """Rate and write every batch as the consumer does, keeping each write as sent."""
    keys = Keys(namespace)
    store = Store(client, keys, TOPIC, params, max_age_ms=4 * HOUR_MS)
    sent: list[Recorded] = []
    for batch in _batches(cfg):
        wanted = Batch(batch, {0: batch[-1].offset + 1}, len(batch), 0.0, keys)
        view = store.read_view(wanted.players, wanted.pairs, wanted.partitions, ids=wanted.ids)
        plan = rate_batch(batch, wanted.next_offsets, view, keys, params)
        plan.states.clear()  # not needed again: keeps the recording small
        packed = store._write_command(plan)
        store.write(plan)
        sent.append(Recorded(plan, packed, len(batch)))
        if len(sent) % 50 == 0:
            say(f"recorded {len(sent)} batches")
    return sent


def _variants() -> dict[str, str]:
    """The script with parts left out, each checked to differ from the shipped one."""
    hset = re.search(r"local added = redis\.call\('HSET', key,.*?'ver', P\[i \+ I_NEW_VER\]\)",
                     SCRIPT, re.S)  # fmt: skip
    assert hset is not None, "the player HSET moved: update the bench"
    cuts = {
        "script_arguments_only": (
            "P = cmsgpack.unpack(ARGV[first]) end\n",
            "P = cmsgpack.unpack(ARGV[first]) end\ndo return {0} end\n",
        ),
        "script_without_ver_checks": (
            "if (ver or '0') ~= P[i + I_CHECKED_VER] then",
            "if false then",
        ),
        # the HGET of each player's ver as well (the comparison then always passes)
        "script_without_ver_reads": (
            "local ver = redis.pcall('HGET', key, 'ver')",
            "local ver = P[i + I_CHECKED_VER]",
        ),
        # keeps `ver` (the later batches' checks need it): leaves out the 12 state values
        "script_without_player_values": (
            hset.group(0),
            # `added` as for a hash given every field: no layout-1 clean-up (HDEL) either
            "local added = #FIELD + 1\n  redis.call('HSET', key, 'ver', P[i + I_NEW_VER])",
        ),
        "script_without_rank_and_activity_sets": (
            "bulk('ZADD', KEYS[K_LB], lb)\nbulk('ZADD', KEYS[K_ACTIVITY], activity)",
            "",
        ),
        "script_without_cooldown_keys": (
            "index(cd_index, first, last, 2, 1)\n",
            "",
            "for i = first, last, 2 do add(records, ARGV[i], ARGV[i + 1]) end\n",
            "",
        ),
        "script_without_event_id_checks": (
            "  if redis.call('EXISTS', unpack(ids, i, j)) > 0 then",
            "  if false then",
        ),
        "script_without_event_id_keys": (
            "index(id_index, first, last, 3, 2)\n",
            "",
            "for i = first, last, 3 do add(records, ARGV[i], ARGV[i + 1]) end\n",
            "",
        ),
        "script_without_cooldown_sweep": (
            "local legacy = redis.call('ZRANGEBYSCORE'",
            "do return {0} end\nlocal legacy = redis.call('ZRANGEBYSCORE'",
        ),
        "script_without_outbox_entry": (
            "redis.call('XADD', KEYS[K_OUTBOX], '*', 'm', ARGV[i])",
            "",
        ),
    }
    out = {"script": SCRIPT}
    for name, cut in cuts.items():
        out[name] = _cut(SCRIPT, name, cut)
    # The raw writes' share of the script's work: the hashes and the sets, without what only a
    # consumer needs (ver checks, cooldown and event-id records with their checks and sweep, the
    # outbox). What is left over the raw writes is the price of one script call per batch.
    floor = SCRIPT
    for name in ("ver_reads", "cooldown_keys", "event_id_checks", "event_id_keys",
                 "cooldown_sweep", "outbox_entry"):  # fmt: skip
        floor = _cut(floor, name, cuts[f"script_without_{name}"])
    out["script_hashes_and_sets_only"] = floor
    return out


def _cut(script: str, name: str, cut: tuple[str, ...]) -> str:
    """`script` with each (old, new) pair of `cut` replaced, each old found exactly once."""
    for old, new in zip(cut[::2], cut[1::2], strict=True):
        assert script.count(old) == 1, f"{name}: the script changed: update the bench"
        script = script.replace(old, new)
    return script


def _multi_exec(rec: Recorded, keys: Keys, keep_ms: int) -> tuple[list[bytes], list[bytes]]:
    """The write as (WATCH + the reads to check, MULTI … EXEC), packed."""
    pack: Any = hiredis.pack_command
    plan, offsets_key = rec.plan, keys.offsets(TOPIC)
    items = [_plain(item) for item in plan.players]
    player_keys = [keys.player(str(items[i])) for i in range(0, len(items), _ITEMS)]
    check = [pack(("WATCH", *player_keys, offsets_key))]
    check += [pack(("HGET", key, "ver")) for key in player_keys]
    check.append(pack(("HMGET", offsets_key, *([p for p, _ in plan.offset_checks] or [-1]))))
    write = [pack(("MULTI",))]
    lb: list[Any] = []
    activity: list[Any] = []
    for key, i in zip(player_keys, range(0, len(items), _ITEMS), strict=True):
        player, values = items[i], items[i + 3 : i + 3 + _VALUES]
        fields: list[Any] = ["HSET", key]
        for field, value in zip(_FIELD, values, strict=True):
            fields += (field, value)
        write.append(pack((*fields, "ver", items[i + 2])))
        if values[_TIER] != "":
            lb += (values[0], player)
        since = items[i + 3 + _VALUES]
        if since != "":
            activity += (since, player)
    for key, members in ((keys.lb, lb), (keys.activity, activity)):
        if members:
            write.append(pack(("ZADD", key, *members)))
    write += [pack(("HINCRBY", keys.tier_counts, t, d)) for t, d in plan.tier_counts.items()]
    for field, delta in (("count", plan.count_delta), ("sigma_hi", plan.sigma_hi_delta),
                         ("sigma_lo", plan.sigma_lo_delta)):  # fmt: skip
        if delta:
            write.append(pack(("HINCRBY", keys.pop, field, delta)))
    write += [pack(("SET", k, ts)) for k, ts in plan.cooldowns]
    buckets: dict[int, list[str]] = {}  # their event-time index (the sweep is left out here)
    for k, ts in plan.cooldowns:
        buckets.setdefault(due_bucket_end(int(ts)), []).append(k)
    for end, names in buckets.items():
        write.append(pack(("RPUSH", keys.cooldown_bucket(end), *names)))
    if buckets:
        write.append(pack(("ZADD", keys.due_buckets, *[x for e in buckets for x in (e, e)])))
    write.append(pack(("HSET", offsets_key, *[x for pair in plan.offsets for x in pair])))
    if plan.outbox:
        write.append(
            pack(("XADD", keys.outbox, "*", "m", store_module._MSGPACK.encode(plan.outbox)))
        )
    write.append(pack(("EXEC",)))
    return check, write


def _plain(item: object) -> object:
    """A players-section item as HSET sends it: msgpack str items (window, state) unwrapped."""
    if not isinstance(item, msgspec.Raw):
        return item
    data = bytes(memoryview(item))
    return data[{0xD9: 2, 0xDA: 3, 0xDB: 5}[data[0]] :]


def _redis_cpu_s(client: redis.Redis) -> float:
    info: Any = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _drop(client: redis.Redis, namespace: str) -> None:
    batch: list[bytes] = []
    for key in client.scan_iter(match=Keys(namespace).match_all, count=5000):
        batch.append(key)
        if len(batch) == 5000:
            client.delete(*batch)
            batch = []
    if batch:
        client.delete(*batch)


def _replay(
    client: redis.Redis,
    namespace: str,
    send: Callable[[Any, str], None],
) -> float:
    """Redis CPU seconds spent on `send` into a fresh copy of `namespace` (dropped after)."""
    fresh = f"rw{uuid.uuid4().hex[: len(namespace) - 2]}"
    conn: Any = client.connection_pool.get_connection()
    try:
        before = _redis_cpu_s(client)
        send(conn, fresh)
        spent = _redis_cpu_s(client) - before
    finally:
        client.connection_pool.release(conn)
    _drop(client, fresh)
    return spent


def run(client: redis.Redis, recorded: list[Recorded], namespace: str, params: Params,
        repeats: int) -> dict[str, Any]:  # fmt: skip
    events = sum(r.events for r in recorded)
    tag = Keys(namespace).tag.encode()
    keep_ms = params.cooldown_ms + 4 * HOUR_MS
    results: dict[str, list[float]] = {}

    def script_sender(source: str) -> Callable[[Any, str], None]:
        old_sha = scripts.APPLY_SHA.encode()
        new_sha = hashlib.sha1(source.encode()).hexdigest().encode()
        client.script_load(source)

        def send(conn: Any, fresh: str) -> None:
            new_tag = Keys(fresh).tag.encode()
            for rec in recorded:  # same-length namespace: the RESP lengths stay right
                command = rec.packed.replace(old_sha, new_sha, 1).replace(tag, new_tag)
                conn.send_packed_command([command])
                reply = conn.read_response()
                assert int(reply[0]) == 0, reply

        return send

    def multi_sender(conn: Any, fresh: str) -> None:
        fresh_keys = Keys(fresh)
        built = [_multi_exec(rec, fresh_keys, keep_ms) for rec in recorded]  # not measured
        started = _redis_cpu_s(client)
        for check, write in built:
            conn.send_packed_command(check)
            for _ in check:
                conn.read_response()
            conn.send_packed_command(write)
            replies = [conn.read_response() for _ in write]
            assert replies[-1] is not None, "EXEC aborted"
        multi_cpu.append(_redis_cpu_s(client) - started)

    raw_fields = _RAW_FIELDS
    raw_players = len({p for rec in recorded for p in rec.plan.players[::_ITEMS]}) or 1

    def raw_sender(conn: Any, fresh: str) -> None:  # as consumer_bench.raw_redis
        keys = Keys(fresh)
        pack: Any = hiredis.pack_command
        for start in range(0, events, BATCH):
            packed = []
            for i in range(start, min(events, start + BATCH)):
                for p in (f"p{i % raw_players}", f"p{(i * 7 + 1) % raw_players}"):
                    packed.append(pack(("HSET", keys.player(p), *raw_fields)))
                    packed.append(pack(("ZADD", keys.lb, "1000.0", p)))
            conn.send_packed_command(packed)
            for _ in packed:
                conn.read_response()

    multi_cpu: list[float] = []
    senders = {name: script_sender(src) for name, src in _variants().items()}
    for repeat in range(repeats):
        for name, send in senders.items():
            results.setdefault(name, []).append(_replay(client, namespace, send))
        results.setdefault("raw_writes", []).append(_replay(client, namespace, raw_sender))
        _replay(client, namespace, multi_sender)
        results.setdefault("multi_exec", []).append(multi_cpu[-1])
        say(f"replay round {repeat + 1}/{repeats} done")
    median = {name: statistics.median(v) / events * 1e6 for name, v in results.items()}
    per_event = {
        name: {"median": round(median[name], 2), "runs": [round(x / events * 1e6, 2) for x in v]}
        for name, v in results.items()
    }
    parts = {
        name.removeprefix("script_without_"): round(median["script"] - median[name], 2)
        for name in median
        if name.startswith("script_without_")
    }
    ratios = {"script_vs_raw_writes": round(median["script"] / median["raw_writes"], 2)}
    return {"redis_cpu_us_per_event": per_event, "script_part_us_per_event": parts,
            "ratios": ratios}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--players", type=int, default=100_000)
    ap.add_argument("--arenas", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=2, help="replays of each variant (median)")
    args = ap.parse_args()
    with bench_servers(kafka=False) as servers:
        return _measure(args, servers.redis_url)


def _measure(args: argparse.Namespace, redis_url: str) -> int:
    client = redis.Redis.from_url(redis_url)
    namespace = f"rw{uuid.uuid4().hex[:8]}"
    try:
        params = Params()
        cfg = SimConfig(arenas=args.arenas, players=args.players, events=args.events, seed=1,
                        start_ts=time.time_ns() // 1_000_000 - HOUR_MS,
                        spacing_ms=HOUR_MS / args.events, duplicate_rate=0.05)  # fmt: skip
        say(f"recording the writes of {args.events} events on {args.players} players")
        recorded = record(client, namespace, cfg, params)
        _drop(client, namespace)
        say(f"replaying {len(recorded)} batch writes")
        figures = run(client, recorded, namespace, params, args.repeats)
        out = {
            "build": BUILD,
            "events": sum(r.events for r in recorded),
            "players": args.players,
            "batches": len(recorded),
            "events_per_batch": BATCH,
            **figures,
        }
        print(json.dumps(out, indent=2))
        return 0
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
