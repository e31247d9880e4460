"""One way for every process to reach its rating pool's Redis, whatever the deployment.

URL forms (`REDIS_URL`, or a file named by `REDIS_URL_FILE`):

- `redis://[user:password@]host:port/db`: one server; `user` is an ACL user.
- `rediss://...?ssl_ca_certs=PATH&ssl_certfile=PATH&ssl_keyfile=PATH`: the same over TLS, with
  the CA to trust and, for mutual TLS, the client's certificate and key (redis-py's URL query).
- `redis+sentinel://[user:password@]host:port[,host:port...]/SERVICE[/db][?query]`: the primary
  that the Sentinels at those addresses monitor under SERVICE; a failover is followed on the next
  reconnect. `sentinel_username` / `sentinel_password` in the query authenticate to Sentinels
  that need it; other query keys go to the data connections as for `redis://`.
- `rediss+sentinel://` and `rediss+cluster://`: the two above with TLS to the data nodes.
- `redis+cluster://[user:password@]host:port[,host:port...][/?query]`: a Redis Cluster. A rating
  pool's keys share the hash tag `{namespace}`, so one pool lives in one hash slot, on one
  primary; the process connects straight to that primary (found with CLUSTER SHARDS through any
  seed) and looks it up again whenever a connection has to be re-made, e.g. after a failover.
  Several pools spread over the cluster's primaries by their namespaces' slots.

Every form yields a `redis.Redis` whose connection pool hands out ordinary connections, so the
pipelined raw writes of the consumer and the tier job work unchanged on all of them.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

import redis
from redis.crc import key_slot
from redis.sentinel import Sentinel

from runtime._errors import RuntimeConfigError
from runtime._secrets import redact_url

SENTINEL_SCHEME: Final = "redis+sentinel"
CLUSTER_SCHEME: Final = "redis+cluster"
_SEED_TIMEOUT_S: Final = 5.0


class RedisUrlError(RuntimeConfigError):
    """A Redis URL this module cannot use (shown redacted)."""


def connect(url: str, namespace: str = "", **options: Any) -> redis.Redis:
    """A client for `url` (any form above); `namespace` picks the slot in a cluster."""
    scheme = url.partition("://")[0].lower().replace("rediss+", "redis+")
    if scheme == SENTINEL_SCHEME:
        return _sentinel(url, options)
    if scheme == CLUSTER_SCHEME:
        return _cluster(url, namespace, options)
    try:
        return redis.Redis.from_url(url, **options)
    except ValueError as exc:
        raise RedisUrlError(f"bad Redis URL {redact_url(url)}: {exc}") from exc


def pool_slot(namespace: str) -> int:
    """The cluster hash slot of every key of the rating pool `namespace` (`{namespace}:...`)."""
    return int(key_slot(("{" + namespace + "}").encode()))


def _split(url: str) -> tuple[list[tuple[str, int]], list[str], dict[str, Any], dict[str, str]]:
    """Seeds, path parts, auth kwargs and query of a multi-host URL."""
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    seeds: list[tuple[str, int]] = []
    for item in hosts.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise RedisUrlError(f"bad host:port {item!r} in {redact_url(url)}")
        seeds.append((host, int(port)))
    auth: dict[str, Any] = {}
    if userinfo:
        user, _, password = userinfo.partition(":")
        if user:
            auth["username"] = unquote(user)
        if password:
            auth["password"] = unquote(password)
    query = {k: v[0] for k, v in parse_qs(parts.query).items() if v}
    return seeds, [p for p in parts.path.split("/") if p], auth, query


def _data_options(url: str, query: dict[str, str], options: dict[str, Any]) -> dict[str, Any]:
    """The query's connection settings, parsed as redis-py parses a `redis(s)://` URL's."""
    tls = url.lower().startswith("rediss+")
    probe = (
        ("rediss" if tls else "redis")
        + "://localhost/?"
        + "&".join(f"{k}={v}" for k, v in query.items())
    )
    parsed = redis.connection.parse_url(probe)  # type: ignore[no-untyped-call]
    parsed.pop("host", None)
    parsed.pop("port", None)
    parsed.pop("db", None)
    return {**parsed, **options}


def _sentinel(url: str, options: dict[str, Any]) -> redis.Redis:
    seeds, path, auth, query = _split(url)
    if not path:
        raise RedisUrlError(f"no service name in {redact_url(url)} (…/SERVICE[/db])")
    service = path[0]
    db = int(path[1]) if len(path) > 1 else 0
    sentinel_auth = {
        key: query.pop(f"sentinel_{key}")
        for key in ("username", "password")
        if f"sentinel_{key}" in query
    }
    data = _data_options(url, query, options)
    seed_options = {"socket_timeout": _SEED_TIMEOUT_S, **sentinel_auth}
    sentinel = Sentinel(seeds, sentinel_kwargs=seed_options)  # type: ignore[no-untyped-call]
    client: redis.Redis = sentinel.master_for(  # type: ignore[no-untyped-call]
        service, db=db, **auth, **data
    )
    return client


class _SlotLocator:
    """Finds the primary that serves `slot` now, through any seed node."""

    def __init__(self, seeds: list[tuple[str, int]], slot: int, seed_kwargs: dict[str, Any]):
        self.seeds = seeds
        self.slot = slot
        self.seed_kwargs = seed_kwargs

    def __call__(self) -> tuple[str, int]:
        errors: list[str] = []
        for host, port in self.seeds:
            seed = redis.Redis(
                host=host, port=port, socket_timeout=_SEED_TIMEOUT_S, **self.seed_kwargs
            )
            try:
                for start, end, primary in _slot_ranges(seed):
                    if start <= self.slot <= end:
                        return primary
                errors.append(f"{host}:{port}: slot {self.slot} not served")
            except redis.RedisError as exc:
                errors.append(f"{host}:{port}: {exc}")
            finally:
                seed.close()
        raise redis.ConnectionError(f"no cluster node serves slot {self.slot}: {errors}")


def _slot_following(base: type[Any]) -> type[Any]:
    """`base` (plain or TLS connection) that finds its slot's primary anew at each connect."""

    class SlotPrimaryConnection(base):  # type: ignore[misc]
        def __init__(self, *, locate: _SlotLocator, **kwargs: Any) -> None:
            self._locate = locate
            super().__init__(**kwargs)

        def connect(self, *args: Any, **kwargs: Any) -> None:
            if self._sock is None:  # a fresh or a failed connection: follow the slot
                self.host, self.port = self._locate()
            super().connect(*args, **kwargs)

    return SlotPrimaryConnection


def _slot_ranges(seed: redis.Redis) -> list[tuple[int, int, tuple[str, int]]]:
    """(first slot, last slot, primary host:port) for every range, from CLUSTER SLOTS."""
    ranges = []
    reply = seed.execute_command("CLUSTER SLOTS")  # type: ignore[no-untyped-call]
    for entry in reply:
        start, end, primary = int(entry[0]), int(entry[1]), entry[2]
        host = primary[0].decode() if isinstance(primary[0], bytes) else str(primary[0])
        ranges.append((start, end, (host, int(primary[1]))))
    return ranges


def _cluster(url: str, namespace: str, options: dict[str, Any]) -> redis.Redis:
    if not namespace:
        raise RedisUrlError("a redis+cluster:// URL needs the rating pool's namespace")
    seeds, _path, auth, query = _split(url)
    data = _data_options(url, query, options)
    base = data.pop("connection_class", redis.Connection)
    tls = {k: v for k, v in data.items() if k.startswith("ssl")}
    locator = _SlotLocator(seeds, pool_slot(namespace), {**auth, **tls})
    host, port = locator()
    pool = redis.ConnectionPool(
        connection_class=_slot_following(base),
        locate=locator,
        host=host,
        port=port,
        **auth,
        **data,
    )
    return redis.Redis(connection_pool=pool)
