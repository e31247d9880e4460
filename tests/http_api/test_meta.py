"""Per-player metadata on a real redis-server loaded with the shipped ACL file: `adr meta` as the
least-privilege user `adr-meta` (set, get, delete; hostile inputs refused with exit 2 and nothing
written; every other key of the pool out of its reach), the API's rows carrying it, a stored value
written past the codec left out of the answer (counted), never a 5xx; hypothesis over the inputs
of the codec and of the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar.testing import TestClient

from redis_layout import CorruptValue, Keys
from redis_layout.meta_codec import (
    MAX_FIELDS,
    MAX_NAME_BYTES,
    MAX_STRING_BYTES,
    MAX_VALUE_BYTES,
    SAFE_INT,
    BadMeta,
    UnknownMetaVersion,
    check_meta,
    decode_meta,
    encode_meta,
    parse_meta_json,
)
from serve.meta import MetaStore, read_many
from stack import RedisServer
from tests.examples.test_readers_acl import PASSWORDS
from tests.http_api.conftest import META, NAMESPACE, reader_url

pytestmark = pytest.mark.integration

KEYS = Keys(NAMESPACE)


def meta_url(port: int) -> str:
    return f"redis://adr-meta:{PASSWORDS['META_PW']}@127.0.0.1:{port}/0"


@pytest.fixture
def meta_user(acl_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(meta_url(acl_server.port))
    try:
        yield client
    finally:
        client.close()


def _adr_meta(
    port: int, *args: str, stdin: bytes | None = None, namespace: str = NAMESPACE
) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "adr_cli.main", "meta", *args],
        input=stdin, capture_output=True, timeout=60,
        env={**os.environ, "REDIS_URL": meta_url(port), "ADR_NAMESPACE": namespace},
    )  # fmt: skip
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def test_adr_meta_sets_gets_and_deletes_as_adr_meta(
    acl_server: RedisServer,
    admin: redis.Redis,
    api: TestClient,  # type: ignore[type-arg]
) -> None:
    port, player = acl_server.port, "dave"
    admin.acl_log_reset()
    try:
        want = {"display_name": "Dävé ☃ \U0001f600", "country": "FR", "level": 7, "vip": False}
        assert _adr_meta(port, "set", player, json.dumps(want))[0] == 0
        code, out, err = _adr_meta(port, "get", player)
        assert (code, json.loads(out)) == (0, want), err
        row = api.get("/v1/rank", params={"player": player}).json()
        assert row["meta"] == want
        # set replaces the whole object; stdin with -
        code, _, err = _adr_meta(port, "set", player, "-", stdin=b'{"display_name": "D"}')
        assert code == 0, err
        assert json.loads(_adr_meta(port, "get", player)[1]) == {"display_name": "D"}
        assert _adr_meta(port, "delete", player)[0] == 0
        assert _adr_meta(port, "get", player)[:2] == (1, "")
        assert _adr_meta(port, "delete", player)[0] == 1
        assert api.get("/v1/rank", params={"player": player}).json()["meta"] is None
        assert admin.acl_log() == []  # nothing it did was refused
    finally:
        admin.hdel(KEYS.meta, player)


@pytest.mark.parametrize(
    ("args", "stdin", "why"),
    [
        (("set", "dave", "x" * 5000), None, "bytes"),  # huge
        (("set", "dave", json.dumps({"n": "é" * 200})), None, "at most 256"),  # a long string
        (("set", "dave", json.dumps({f"k{i}": i for i in range(17)})), None, "17 fields"),
        (("set", "dave", json.dumps({f"k{i:02}": "v" * 60 for i in range(16)})), None, "1024"),
        (("set", "dave", "not json"), None, "not JSON"),
        (("set", "dave", "[1, 2]"), None, "JSON object"),
        (("set", "dave", '"a string"'), None, "JSON object"),
        (("set", "dave", '{"a": {"b": 1}}'), None, "an object"),
        (("set", "dave", '{"a": [1]}'), None, "a list"),
        (("set", "dave", '{"a": NaN}'), None, "finite"),
        (("set", "dave", '{"a": 1e999}'), None, "finite"),
        (("set", "dave", '{"a": 9007199254740993}'), None, "2**53"),
        (("set", "dave", '{"a": 1, "a": 2}'), None, "twice"),
        (("set", "dave", '{"": 1}'), None, "field name"),
        (("set", "dave", '{"has space": 1}'), None, "field name"),
        (("set", "dave", '{"' + "k" * 33 + '": 1}'), None, "field name"),
        (("set", "dave", '{"a": "\\ud800"}'), None, "Unicode"),
        (("set", "dave", "-"), b'{"a": "\xff\xfe"}', "not JSON"),  # not UTF-8
        (("set", "dave", "-"), b"{" * 100_000, "bytes"),  # deep and big
        (("set", "dave", "-"), b"[" * 2000 + b"]" * 2000, "not JSON"),  # deep, small
        (("set", "y" * 65, "{}"), None, "player id"),
        (("get", "y" * 65), None, "player id"),
        (("frobnicate", "dave"), None, "invalid choice"),
    ],
)
def test_hostile_input_is_refused_with_exit_2_and_nothing_written(
    acl_server: RedisServer, admin: redis.Redis, args: tuple[str, ...], stdin: bytes | None,
    why: str,
) -> None:  # fmt: skip
    code, out, err = _adr_meta(acl_server.port, *args, stdin=stdin)
    assert (code, out) == (2, ""), err
    assert why in err, err
    assert admin.hget(KEYS.meta, "dave") is None


def test_adr_meta_cannot_touch_the_pool_state(
    acl_server: RedisServer, meta_user: redis.Redis, admin: redis.Redis
) -> None:
    before = {k: admin.dump(k) for k in sorted(admin.scan_iter(match=KEYS.match_all))}
    for command, args in [
        ("HSET", (KEYS.player("alice"), "mu", "9999")),
        ("HGET", (KEYS.player("alice"), "mu")),
        ("HSET", (KEYS.snapshot, "boundaries", "[]")),
        ("HSET", (KEYS.tier_counts, "1H", "99")),
        ("ZADD", (KEYS.lb, "9999", "mallory")),
        ("DEL", (KEYS.meta,)),  # not even its own key as a whole
        ("UNLINK", (KEYS.meta,)),
        ("HGETALL", (KEYS.meta,)),
        ("HSET", (Keys("other").meta, "alice", "1:{}")),  # another pool's metadata
        ("SET", (KEYS.layout, "9")),
        ("EVAL", ("return 1", "0")),
        ("KEYS", ("*",)),
        ("FLUSHALL", ()),
        ("CONFIG", ("SET", "maxmemory", "1")),
    ]:
        with pytest.raises(redis.exceptions.NoPermissionError):
            meta_user.execute_command(command, *args)
    assert {k: admin.dump(k) for k in sorted(admin.scan_iter(match=KEYS.match_all))} == before
    # A pool it has no rule for: refused, exit 4.
    code, _, err = _adr_meta(acl_server.port, "set", "alice", "{}", namespace="other")
    assert code == 4 and "refused" in err
    admin.acl_log_reset()  # the refusals above were on purpose


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"not versioned", "corrupt"),
        (b"1:not json", "corrupt"),
        (b"1:[1,2]", "corrupt"),
        (b'1:{"a":{"b":1}}', "corrupt"),
        (b'1:{"a":"' + b"x" * 5000 + b'"}', "corrupt"),
        (b'9:{"display_name":"from the future"}', "version"),
    ],
)
def test_a_value_written_past_the_codec_is_left_out_and_counted(
    api: TestClient,
    admin: redis.Redis,
    raw: bytes,
    reason: str,  # type: ignore[type-arg]
) -> None:
    admin.hset(KEYS.meta, "bob", raw)
    try:
        for path, params in [
            ("/v1/rank", {"player": "bob"}),
            ("/v1/top", {"limit": 50}),
            ("/v1/around", {"player": "bob", "k": 1}),
            ("/v1/friends", [("id", "bob"), ("id", "alice")]),
            ("/v1/profile", {"player": "bob"}),
        ]:
            answer = api.get(path, params=params)
            assert answer.status_code == 200, answer.text
            body = answer.json()
            rows = body.get("rows", [body])
            bob = next(r for r in rows if r["player"] == "bob")
            assert bob["meta"] is None
            assert all(r["meta"] is not None for r in rows if r["player"] == "alice")
        line = f'adr_serve_meta_unreadable_total{{reason="{reason}"}} '
        counted = [ln for ln in api.get("/metrics").text.splitlines() if ln.startswith(line)]
        assert counted and float(counted[0].split()[-1]) >= 5
    finally:
        admin.hdel(KEYS.meta, "bob")


# --- hypothesis over the inputs -------------------------------------------------------------

_NAMES = st.from_regex(rf"[A-Za-z0-9_.\-]{{1,{MAX_NAME_BYTES}}}", fullmatch=True)
_SCALARS = st.one_of(
    st.text(max_size=40),
    st.integers(-SAFE_INT, SAFE_INT),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
_GOOD = st.dictionaries(_NAMES, _SCALARS, max_size=6)
_ANY_JSON = st.recursive(
    st.one_of(st.text(), st.integers(), st.floats(), st.booleans(), st.none()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=40), inner, max_size=20)
    ),
    max_leaves=40,
)


def _keeps_the_limits(value: Any) -> bool:
    """The limits, written out again from docs/api.md, independently of check_meta."""
    if not isinstance(value, dict) or len(value) > MAX_FIELDS:
        return False
    for name, item in value.items():
        if not (1 <= len(name) <= MAX_NAME_BYTES) or not all(
            c.isascii() and (c.isalnum() or c in "_.-") for c in name
        ):
            return False
        if isinstance(item, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in item):
                return False
            if len(item.encode()) > MAX_STRING_BYTES:
                return False
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if abs(item) > SAFE_INT:
                return False
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return False
        else:
            return False
    return True


@settings(max_examples=400, deadline=None)
@given(value=_ANY_JSON)
def test_the_codec_takes_exactly_what_keeps_the_limits(value: Any) -> None:
    try:
        check_meta(value)
        encoded = encode_meta(value)
    except BadMeta as exc:
        # refused: a limit is broken, or (only) the encoded size
        if _keeps_the_limits(value):
            assert "bytes encoded" in str(exc)
            assert len(_compact(value)) + 2 > MAX_VALUE_BYTES - 16  # float reprs may differ
        return
    assert _keeps_the_limits(value)
    assert len(encoded) <= MAX_VALUE_BYTES
    assert decode_meta(encoded) == value
    assert parse_meta_json(json.dumps(value)) == value


def _compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=300) | st.builds(lambda b: b"1:" + b, st.binary(max_size=300)))
def test_any_stored_bytes_decode_or_are_refused_cleanly(raw: bytes) -> None:
    try:
        meta = decode_meta(raw, "k")
    except (CorruptValue, UnknownMetaVersion):
        return
    assert _keeps_the_limits(meta)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    player=st.text(min_size=1, max_size=16).filter(
        lambda p: not any(0xD800 <= ord(c) <= 0xDFFF for c in p)
    ),
    value=_GOOD,
)
def test_the_store_keeps_what_it_is_given_as_adr_meta(
    meta_user: redis.Redis, admin: redis.Redis, player: str, value: dict[str, Any]
) -> None:
    store = MetaStore(meta_user, NAMESPACE)
    who = "hyp-" + player
    try:
        try:
            store.set(who, value)
        except BadMeta as exc:  # within every other limit by construction: only the size
            assert "bytes encoded" in str(exc)
            assert len(_compact(value)) + 2 > MAX_VALUE_BYTES - 16
            assert admin.hget(KEYS.meta, who) is None
            return
        assert store.get(who) == value
        assert read_many(admin, KEYS, [who, "nobody-" + player]) == [value, None]
        assert store.delete(who) and store.get(who) is None
    finally:
        admin.hdel(KEYS.meta, who)


def test_the_meta_reader_keeps_a_player_for_its_ttl_only(
    reader: redis.Redis, admin: redis.Redis
) -> None:
    from serve.meta import MetaReader

    admin.hset(KEYS.meta, "erin", encode_meta({"display_name": "E1"}))
    try:
        kept = MetaReader(reader, KEYS, ttl_s=60, max_entries=3)
        none = MetaReader(reader, KEYS, ttl_s=0)
        e1 = {"display_name": "E1"}
        assert kept.read(["erin", "bob", "erin"]) == [e1, None, e1]
        admin.hset(KEYS.meta, "erin", encode_meta({"display_name": "E2"}))
        assert kept.read(["erin"]) == [{"display_name": "E1"}]  # within its ttl
        assert none.read(["erin"]) == [{"display_name": "E2"}]  # ttl 0: always read
        kept.read(["alice", "frank"])  # past max_entries: everything dropped, then refilled
        assert kept.read(["erin"]) == [{"display_name": "E2"}]
    finally:
        admin.hdel(KEYS.meta, "erin")


GHOSTS = [f"ghost-{i}" for i in range(230)] + ["gh\u00f8st \u2603", "x\U0001f601"]
"""Ids with metadata and no player hash: gone from the pool, or never played."""


def test_adr_meta_prune_removes_the_metadata_of_ids_without_a_player_hash(
    acl_server: RedisServer,
    admin: redis.Redis,
    api: TestClient,  # type: ignore[type-arg]
) -> None:
    """As `adr-meta` with the shipped rules: `--dry-run` lists them and writes nothing; prune
    removes exactly them (over several HSCAN pages), keeps every player's, prints each once;
    a second run removes nothing; the read-only user cannot prune (exit 4) and the API's
    answers keep their metadata. No command of it was refused (ACL LOG empty)."""
    port = acl_server.port
    admin.hset(KEYS.meta, mapping={g: encode_meta({"display_name": g}) for g in GHOSTS})
    admin.hset(KEYS.meta, b"\xff\xfe past the codec", b"1:{}")  # not UTF-8: still an id
    kept = {KEYS.player(p).encode() for p in META}
    assert all(admin.exists(k) for k in kept)
    try:
        before = admin.hgetall(KEYS.meta)
        want = {f for f in before if not admin.exists(KEYS.players_at.encode() + f)}
        assert {g.encode() for g in GHOSTS} <= want and not want & {p.encode() for p in META}
        admin.acl_log_reset()

        code, out, err = _adr_meta(port, "prune", "--dry-run", "--page", "50")
        assert code == 0, err
        assert sorted(out.splitlines()) == sorted(_shown(f) for f in want)
        assert admin.hgetall(KEYS.meta) == before  # nothing written
        assert f"{len(want)} entries" in err

        code, out, err = _adr_meta(port, "prune", "--page", "50")
        assert code == 0, err
        printed = out.splitlines()
        assert sorted(printed) == sorted(_shown(f) for f in want)  # each once
        assert admin.hgetall(KEYS.meta) == {f: v for f, v in before.items() if f not in want}
        assert set(admin.hkeys(KEYS.meta)) >= {p.encode() for p in META}
        assert admin.acl_log() == []

        assert _adr_meta(port, "prune")[:2] == (0, "")  # idempotent

        admin.hset(KEYS.meta, GHOSTS[0], b"1:{}")  # the read-only user may not remove it
        as_reader = {**os.environ, "ADR_NAMESPACE": NAMESPACE, "REDIS_URL": reader_url(port)}
        ro = subprocess.run(
            [sys.executable, "-m", "adr_cli.main", "meta", "prune"],
            capture_output=True, timeout=60, env=as_reader,
        )  # fmt: skip
        assert ro.returncode == 4 and b"refused" in ro.stderr, ro.stderr
        assert admin.hget(KEYS.meta, GHOSTS[0]) == b"1:{}"
        admin.acl_log_reset()
        row = api.get("/v1/rank", params={"player": "alice"}).json()
        assert row["meta"] == META["alice"]
    finally:
        admin.hdel(KEYS.meta, *GHOSTS, b"\xff\xfe past the codec")


def _shown(field: bytes) -> str:
    return field.decode(errors="backslashreplace")


class _FirstKillDuringPrune(MetaStore):
    """A MetaStore whose check, once under the WATCH, is followed by the player's first counted
    kill (its hash created, as the consumer's write does) before the removal's EXEC."""

    def __init__(self, client: redis.Redis, admin: redis.Redis, player: str) -> None:
        super().__init__(client, NAMESPACE)
        self._admin, self._player, self._checks = admin, player, 0

    def _without_hash(self, ids: list[bytes]) -> list[bytes]:
        found = super()._without_hash(ids)
        self._checks += 1
        if self._checks == 2:  # the check under the WATCH (the first one: the page's)
            self._admin.hset(KEYS.player(self._player), mapping={"mu": "1000.0", "n": "1"})
        return found


def test_a_player_whose_hash_appears_during_the_prune_keeps_the_metadata(
    meta_user: redis.Redis, admin: redis.Redis
) -> None:
    """The page's removal is atomic with its check (WATCH on the player hashes): the EXEC is
    aborted, the page checked again, and the player, who now has a hash, keeps the metadata;
    the gone one beside it is removed. Real WATCH/MULTI/EXEC, as adr-meta."""
    newcomer, gone = "newcomer-7", "gone-7"
    admin.hset(KEYS.meta, mapping={p: encode_meta({"display_name": p}) for p in (newcomer, gone)})
    try:
        store = _FirstKillDuringPrune(meta_user, admin, newcomer)
        removed = set(store.prune())
        assert gone.encode() in removed and newcomer.encode() not in removed
        assert store._checks >= 3  # the aborted EXEC was followed by a fresh check
        assert admin.hget(KEYS.meta, newcomer) is not None
        assert admin.hget(KEYS.meta, gone) is None
    finally:
        admin.hdel(KEYS.meta, newcomer, gone)
        admin.delete(KEYS.player(newcomer))
