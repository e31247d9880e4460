"""Every query of every leaderboard reader (`adr leaderboard`, examples/go, examples/ts) as the
shipped read-only user: deploy/redis/acl-users.acl rendered with the very command
deploy/redis/README.md gives, loaded by a real redis-server with `--aclfile`, read as
`adr-reader`. The same answers from all three, and the same exit status (docs/leaderboards.md,
"Exit status") for found, not found / unplaced, bad usage, Redis down, permission denied, an
unknown layout version and an unknown rating model; a pool of another model than ADR read as its
display rating ({NS}:model)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import redis

from engine import model_named, model_parameters
from leaderboard._board import Board
from redis_layout import LAYOUT_VERSION, Keys, model_stamp, stamp_layout
from redis_layout.player_codec import FIELDS, model_values
from stack import RedisServer
from stack._ports import free_port
from stack.secured import plain_redis
from tests.examples._build import READERS, REPO, Missing

pytestmark = pytest.mark.integration

NAMESPACE = "adr"
"""The README's own example namespace: this server holds nothing else."""
PASSWORDS = {
    "CONSUMER_PW": "c-5e1f",
    "TIERJOB_PW": "t-0b7a",
    "READER_PW": "r-93c4",
    "HISTORY_PW": "h-2d81",
    "META_PW": "m-6a0e",
}

# (player, μ, tier label or "" while unplaced); bob and carol tie on μ.
PLAYERS = [
    ("alice", 1500.5, "1H"),
    ("bob", 1200.0, "2M"),
    ("carol", 1200.0, "2M"),
    ("dave", 900.25, "5L"),
    ("erin", 850.0, "5L"),
    ("frank", 1000.0, ""),
    # equal μ, ids whose UTF-8 byte order (Redis's) and UTF-16 order (JavaScript's) differ
    ("x\U0001f600", 700.0, "5L"),
    ("x\uff21", 700.0, "5L"),
]
BOARD_ORDER = ["alice", "carol", "bob", "dave", "erin", "x\U0001f600", "x\uff21"]


def _render_as_the_readme_says(workdir: Path) -> Path:
    """Run the README's `sed` block as written, in a folder where `deploy/` is the repository's."""
    readme = (REPO / "deploy" / "redis" / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", readme, re.S)
    assert block, "deploy/redis/README.md has no sh block"
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "deploy").symlink_to(REPO / "deploy")
    done = subprocess.run(
        ["bash", "-euc", block.group(1)], cwd=workdir, capture_output=True, text=True,
        env={**os.environ, **PASSWORDS}, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return workdir / "users.acl"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """redis-server with exactly the rendered file as its ACL file, the board seeded by the
    default user (which the file leaves alone) and the layout stamped by `adr-consumer`."""
    work = tmp_path_factory.mktemp("acl")
    acl = _render_as_the_readme_says(work / "rendered")
    assert "<" not in acl.read_text() and "~{adr}:*" in acl.read_text()
    srv = plain_redis(work / "redis", "--aclfile", str(acl))
    srv.start()
    try:
        admin = redis.Redis(port=srv.port)
        keys = Keys(NAMESPACE)
        counts: dict[str, int] = {}
        for pid, mu, tier in PLAYERS:
            admin.hset(keys.player(pid), mapping={"mu": repr(mu), "tier": tier})
            if tier:
                admin.zadd(keys.lb, {pid: mu})
                counts[tier] = counts.get(tier, 0) + 1
        admin.hset(keys.tier_counts, mapping=counts)
        admin.hset(keys.pop, mapping={"count": len(PLAYERS)})
        consumer = redis.Redis(
            port=srv.port, username="adr-consumer", password=PASSWORDS["CONSUMER_PW"]
        )
        stamp_layout(consumer, keys)
        assert admin.get(keys.layout) == str(LAYOUT_VERSION).encode()
        admin.acl_log_reset()
        yield srv
    finally:
        srv.stop()


_built: dict[str, list[str] | str] = {}


@pytest.fixture(params=["adr", "go", "ts"])
def reader(request: pytest.FixtureRequest) -> tuple[str, list[str]]:
    """(name, command) of each reader; the adr one prints JSON like the others (--json)."""
    lang = request.param
    if lang == "adr":
        return lang, [sys.executable, "-m", "adr_cli.main", "leaderboard", "--json"]
    if lang not in _built:
        try:
            _built[lang] = READERS[lang]()
        except Missing as exc:
            _built[lang] = f"{lang} reader example not built: {exc}"
    got = _built[lang]
    if isinstance(got, str):
        pytest.skip(got)
    return lang, got


def _url(port: int, user: str = "adr-reader", password: str = PASSWORDS["READER_PW"]) -> str:
    return f"redis://{user}:{password}@127.0.0.1:{port}/0"


def _read(
    reader: tuple[str, list[str]], url: str, *args: str, namespace: str = NAMESPACE
) -> tuple[int, Any, str]:
    done = subprocess.run(
        [*reader[1], *args], capture_output=True, text=True, timeout=60,
        env={**os.environ, "REDIS_URL": url, "ADR_NAMESPACE": namespace},
    )  # fmt: skip
    data = json.loads(done.stdout) if done.returncode == 0 else done.stdout
    return done.returncode, data, done.stderr


def _entry(rank: int | None, player: str) -> dict[str, Any]:
    mu, tier = {p: (m, t) for p, m, t in PLAYERS}[player]
    return {"rank": rank, "player": player, "mu": mu, "tier": tier or None}


def test_every_query_works_as_the_shipped_read_only_user(
    reader: tuple[str, list[str]], server: RedisServer
) -> None:
    admin = redis.Redis(port=server.port)
    admin.acl_log_reset()
    url = _url(server.port)
    expected: list[tuple[tuple[str, ...], Any]] = [
        (("top", "3"), [_entry(1, "alice"), _entry(2, "carol"), _entry(3, "bob")]),
        (("rank", "dave"), _entry(4, "dave")),
        (("rank", "frank"), _entry(None, "frank")),
        (("around", "bob", "1"), [_entry(2, "carol"), _entry(3, "bob"), _entry(4, "dave")]),
        (("around", "alice", "0"), [_entry(1, "alice")]),
        (("tier", "dave"), {"player": "dave", "tier": "5L"}),
        (("tier", "frank"), {"player": "frank", "tier": None}),
        (
            ("friends", "erin", "nobody", "bob", "frank", "carol", "erin"),
            [_entry(1, "carol"), _entry(2, "bob"), _entry(3, "erin")],
        ),
        (("friends", "nobody", "frank"), []),
        (("friends", "x\uff21", "x\U0001f600"), [_entry(1, "x\U0001f600"), _entry(2, "x\uff21")]),
        (("top", "100"), [_entry(i + 1, p) for i, p in enumerate(BOARD_ORDER)]),
    ]
    for args, want in expected:
        code, got, err = _read(reader, url, *args)
        assert (code, got) == (0, want), (args, err)
    if reader[0] == "adr":  # the tier table: adr's own query
        code, got, err = _read(reader, url, "tiers")
        assert code == 0, err
        assert (got["placed"], got["tracked"]) == (7, 8)
        assert {r["tier"]: r["players"] for r in got["rows"]}["2M"] == 2
    assert admin.acl_log() == []  # nothing was refused


def test_exit_status_follows_the_one_table(
    reader: tuple[str, list[str]], server: RedisServer
) -> None:
    url = _url(server.port)
    cases: list[tuple[str, int, tuple[str, ...], dict[str, str]]] = [
        ("found", 0, ("rank", "alice"), {}),
        ("unknown player: rank", 1, ("rank", "nobody"), {}),
        ("unknown player: tier", 1, ("tier", "nobody"), {}),
        ("unknown player: around", 1, ("around", "nobody", "2"), {}),
        ("unplaced player: around", 1, ("around", "frank", "2"), {}),
        ("usage: N", 2, ("top", "zero"), {}),
        ("usage: N < 1", 2, ("top", "0"), {}),
        ("usage: K < 0", 2, ("around", "bob", "-1"), {}),
        ("usage: action", 2, ("frobnicate", "x"), {}),
        ("usage: missing argument", 2, ("rank",), {}),
        ("usage: friends without ids", 2, ("friends",), {}),
        ("usage: REDIS_URL not a URL", 2, ("top", "3"), {"url": "not a url"}),
        ("usage: REDIS_URL port", 2, ("top", "3"), {"url": "redis://127.0.0.1:port/0"}),
        ("redis down", 3, ("top", "3"), {"url": f"redis://127.0.0.1:{free_port()}/0"}),
        ("wrong password", 4, ("top", "3"), {"url": _url(server.port, password="wrong")}),
        ("another pool's keys", 4, ("top", "3"), {"namespace": "other"}),
        ("another pool's keys: script", 4, ("rank", "alice"), {"namespace": "other"}),
        ("unknown user", 4, ("top", "3"), {"url": _url(server.port, user="nobody")}),
    ]
    for what, want, args, how in cases:
        code, out, err = _read(
            reader, how.get("url", url), *args, namespace=how.get("namespace", NAMESPACE)
        )
        assert code == want, (what, err)
        if want:
            assert out == "" and err.strip(), (what, out, err)  # the reason on stderr only
        if want == 4:
            assert "permission denied" in err, (what, err)


@pytest.mark.parametrize("stored", ["3", "1", "two", "02", ""])
def test_an_unknown_layout_version_is_refused_with_its_status(
    reader: tuple[str, list[str]], server: RedisServer, stored: str
) -> None:
    admin = redis.Redis(port=server.port)
    keys = Keys(NAMESPACE)
    admin.set(keys.layout, stored)
    try:
        for args in (("top", "3"), ("rank", "alice"), ("friends", "bob")):
            code, out, err = _read(reader, _url(server.port), *args)
            assert (code, out) == (5, ""), (args, err)
            assert keys.layout in err and "upgrade the reader" in err, err
    finally:
        admin.set(keys.layout, str(LAYOUT_VERSION))
    admin.delete(keys.layout)  # a pool stamped by no release yet (before the key): read as 2
    try:
        assert _read(reader, _url(server.port), "rank", "alice")[:2] == (0, _entry(1, "alice"))
    finally:
        admin.set(keys.layout, str(LAYOUT_VERSION))


@pytest.mark.parametrize(
    ("name", "overrides"),
    [("trueskill", {"display_k": "2"}), ("glicko2", {"display_k": "1"}), ("weng-lin", {}),
     ("elo", {})],
)  # fmt: skip
def test_a_pool_of_another_model_is_read_as_its_display_rating(
    reader: tuple[str, list[str]], server: RedisServer, name: str, overrides: dict[str, str]
) -> None:
    """{NS}:model (read as adr-reader): `rank` shows the model's display rating, computed from
    the hash as docs/leaderboards.md's table says (μ − k·σ, r − k·RD, the Elo rating)."""
    admin = redis.Redis(port=server.port)
    admin.acl_log_reset()
    keys = Keys(NAMESPACE)
    model = model_named(name, overrides)
    state = msgspec.structs.replace(model.new_player(), n=3, last_ts=1_764_000_000_000)
    values = [*model_values(model.to_fields(state)), "3"]
    admin.hset(keys.player("tess"), mapping=dict(zip(FIELDS, values, strict=True)))
    admin.set(keys.model, model_stamp(name, model_parameters(model)))
    try:
        code, got, err = _read(reader, _url(server.port), "rank", "tess")
        want = {"rank": None, "player": "tess", "mu": model.display(state), "tier": None}
        assert (code, got) == (0, want), err
        if name != "elo":
            assert got["mu"] != float(values[0])  # not the hash's mu: μ − k·σ
        # the board's scores are the display ratings the consumer wrote: read as they are
        assert _read(reader, _url(server.port), "top", "1")[:2] == (0, [_entry(1, "alice")])
    finally:
        admin.delete(keys.model, keys.player("tess"))
    assert admin.acl_log() == []


@pytest.mark.parametrize(
    ("stored", "named"),
    [
        ('{"model":"glicko3","params":"0","parameters":{}}', "glicko3"),  # a newer release's model
        ("elo", "elo"),  # not a stamp
        ('{"model":"trueskill","params":"0","parameters":{"display_k":-1}}', "display_k"),
        # a parameter the model does not have (a newer release's): `adr leaderboard`'s rule
        ('{"model":"elo","params":"0","parameters":{"k":32,"k_floor":16}}', "k_floor"),
        ('{"model":"weng-lin","params":"0","parameters":{"display_k":3,"gamma":0.5}}', "gamma"),
        ('{"model":"glicko2","params":"0","parameters":{"period_days":1}}', "period_days"),
        ('{"model":"trueskill","params":"0","parameters":{"displayk":2}}', "displayk"),
        # `parameters` not an object: no stamp (adr, ts read it as none given, go so read null)
        ('{"model":"trueskill","params":"0","parameters":[1]}', "parameters"),
        ('{"model":"glicko2","params":"0","parameters":null}', "parameters"),
        ('{"model":"elo","params":"0","parameters":3}', "parameters"),
        # a value the model's config refuses (engine/_glicko2.py ...): no pool a consumer writes
        ('{"model":"glicko2","params":"0","parameters":{"tau":-1}}', "tau"),
        ('{"model":"glicko2","params":"0","parameters":{"rd0":400}}', "rd_max"),  # > its 350
        ('{"model":"weng-lin","params":"0","parameters":{"kappa":2}}', "kappa"),
        ('{"model":"elo","params":"0","parameters":{"k_rule":"FIDE"}}', "k_rule"),
        ('{"model":"elo","params":"0","parameters":{"fide_games":1.5}}', "fide_games"),
        ('{"model":"trueskill","params":"0","parameters":{"tau":"0.5"}}', "tau"),  # text
        ('{"model":"trueskill","params":"0","parameters":{"beta":1' + "0" * 400 + "}}", "beta"),
    ],
)
def test_a_model_the_reader_does_not_know_is_refused_with_status_3(
    reader: tuple[str, list[str]], server: RedisServer, stored: str, named: str
) -> None:
    """A newer release's model (or a value that is no model stamp this reader can use, or a
    parameter the model does not have): its numbers must not be read as ADR's, nor its display
    rating computed by a rule that may be wrong (docs/leaderboards.md, "Exit status")."""
    admin = redis.Redis(port=server.port)
    keys = Keys(NAMESPACE)
    admin.set(keys.model, stored)
    try:
        for args in (("top", "3"), ("rank", "alice"), ("friends", "bob")):
            code, out, err = _read(reader, _url(server.port), *args)
            assert (code, out) == (3, ""), (args, err)
            assert keys.model in err and named in err, err
    finally:
        admin.delete(keys.model)
    assert _read(reader, _url(server.port), "rank", "alice")[:2] == (0, _entry(1, "alice"))


# The readers' table of each model's parameters (names, kinds, defaults, the values the engine
# takes) is checked against the engine in tests/examples/test_readers_model_rules.py.


def test_the_reader_user_still_cannot_write_or_run_read_write_scripts(server: RedisServer) -> None:
    keys = Keys(NAMESPACE)
    user = redis.Redis(port=server.port, username="adr-reader", password=PASSWORDS["READER_PW"])
    with pytest.raises(redis.exceptions.NoPermissionError):
        user.hset(keys.snapshot, "version", "999")
    for command in (("EVAL", "return 1", 0), ("SCRIPT", "LOAD", "return 1"), ("MULTI",)):
        with pytest.raises(redis.exceptions.NoPermissionError):
            user.execute_command(*command)
    # EVAL_RO lets a script call read commands only, even on the pool's own keys
    with pytest.raises(redis.exceptions.ResponseError, match="can't run this command"):
        user.eval_ro("return redis.call('SET', KEYS[1], 'x')", 1, keys.lb)
    assert Board(user, NAMESPACE).rank("alice").rank == 1
