"""runtime.connect against real secured and managed Redis: TLS with client certificates and an
ACL user, a Sentinel-monitored primary through a failover, and a Redis Cluster's slot owners."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from runtime import RedisUrlError, connect, pool_slot, redact_url
from stack.secured import RedisCluster, SentinelSet, make_certificates, tls_redis

pytestmark = pytest.mark.integration  # starts servers of its own

PASSWORD = "consumer-pw-51c0"


def test_rediss_with_client_certificate_and_acl_user(tmp_path: Path) -> None:
    certs = make_certificates(tmp_path / "certs")
    server = tls_redis(
        tmp_path / "redis",
        certs,
        ("user default off", f"user consumer on >{PASSWORD} ~{{pool}}:* +@all"),
    )
    server.start()
    try:
        base = f"rediss://consumer:{PASSWORD}@127.0.0.1:{server.port}/0"
        tls = f"ssl_ca_certs={certs.ca}&ssl_certfile={certs.client_cert}"
        client = connect(f"{base}?{tls}&ssl_keyfile={certs.client_key}", "pool")
        client.set("{pool}:x", "1")
        assert client.get("{pool}:x") == b"1"
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.set("other:x", "1")  # outside the ACL user's key pattern
        without_cert = connect(f"{base}?ssl_ca_certs={certs.ca}", "pool")
        with pytest.raises(redis.ConnectionError):
            without_cert.ping()  # the server asks for a client certificate
        assert PASSWORD not in redact_url(base)
    finally:
        server.stop()


def test_sentinel_url_follows_a_failover(tmp_path: Path) -> None:
    pair = SentinelSet(tmp_path / "sentinel")
    pair.start()
    try:
        client = connect(pair.url, "pool", socket_timeout=2)
        client.set("{pool}:before", "1")
        primary_port = client.connection_pool.get_master_address()[1]
        assert primary_port == pair.primary.port
        assert client.wait(1, 1000) == 1  # the replica has it before the failover
        pair.failover()
        deadline = time.monotonic() + 30
        while True:
            try:
                client.set("{pool}:after", "2")
                if client.connection_pool.get_master_address()[1] == pair.replica.port:
                    break
            except (redis.ConnectionError, redis.ReadOnlyError):
                pass
            assert time.monotonic() < deadline, "no failover seen"
            time.sleep(0.2)
        assert client.get("{pool}:before") == b"1"
        assert client.get("{pool}:after") == b"2"
    finally:
        pair.stop()


def test_cluster_url_reaches_each_pools_slot_owner(tmp_path: Path) -> None:
    cluster = RedisCluster(tmp_path / "cluster")
    cluster.start()
    try:
        owners = {}
        for namespace in ("pool-a", "pool-b", "pool-c", "pool-d"):
            client = connect(cluster.url, namespace)
            client.set(f"{{{namespace}}}:k", namespace)  # a MOVED here would raise
            owners[namespace] = client.connection_pool.connection_kwargs["port"]
            node = redis.Redis(port=owners[namespace])
            assert node.execute_command("CLUSTER", "KEYSLOT", f"{{{namespace}}}:k") == pool_slot(
                namespace
            )
            assert node.get(f"{{{namespace}}}:k") == namespace.encode()
        assert len(set(owners.values())) >= 2  # the pools spread over several primaries
        with pytest.raises(RedisUrlError, match="namespace"):
            connect(cluster.url)
    finally:
        cluster.stop()
