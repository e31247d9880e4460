"""docs/deploy.md tells an operator what the prod overlay really needs: the Secrets and keys it
reads, created by the commands shown, with the files where the manifests mount them."""

from __future__ import annotations

import re
import shlex

from tests.deploy._manifests import CONSUMER, TIERJOB, container, one, overlay, secret_keys_used
from tests.deploy._metrics import REPO

DEPLOY_MD = REPO / "docs" / "deploy.md"


def _section(title: str) -> str:
    text = DEPLOY_MD.read_text()
    return text.split(f"\n{title}\n", 1)[1].split("\n#", 1)[0]


def _secrets_table() -> set[tuple[str, str]]:
    rows = re.findall(r"^\| `([\w-]+)` \| `([\w.-]+)` \|", _section("### Production secrets"), re.M)
    return set(rows)


def _create_commands() -> dict[str, dict[str, str]]:
    """Secret name -> {key: value or file} from the `kubectl create secret generic` commands."""
    block = _section("## prod").split("```", 2)[1].replace("\\\n", " ")
    out: dict[str, dict[str, str]] = {}
    for line in block.splitlines():
        words = shlex.split(line)
        if "secret" not in words or "generic" not in words:
            continue
        name = words[words.index("generic") + 1]
        for word in words:
            if word.startswith(("--from-literal=", "--from-file=")):
                key, _, value = word.split("=", 1)[1].partition("=")
                out.setdefault(name, {})[key] = value
    return out


def test_the_secrets_table_lists_what_prod_reads() -> None:
    objects = overlay("prod")
    auth = one(objects, "TriggerAuthentication", "adr-kafka")
    used = {(s, k) for s, keys in secret_keys_used(objects, auth).items() for k in keys}
    table = _secrets_table()
    assert used <= table, f"read by prod, not in docs/deploy.md: {sorted(used - table)}"
    assert {s for s, _ in table} == {s for s, _ in used}


def test_the_commands_create_exactly_the_tables_keys() -> None:
    created = {(s, k) for s, keys in _create_commands().items() for k in keys}
    assert created == _secrets_table()


def test_the_documented_urls_and_settings_point_at_the_mounted_files() -> None:
    """rediss:// URLs whose CA file and client.properties whose ssl.ca.location are where the
    pods mount the Secrets' ca.pem."""
    objects = overlay("prod")
    commands = _create_commands()
    for name, url_key in ((CONSUMER, "consumer-url"), (TIERJOB, "tierjob-url")):
        c = container(one(objects, "Deployment", name))
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        url = commands["adr-redis"][url_key]
        assert url.startswith("rediss://"), "production Redis over TLS"
        assert f"ssl_ca_certs={mounts['redis-secret']}/ca.pem" in url
        properties = _section("## prod").split("```properties", 1)[1].split("```", 1)[0]
        assert f"ssl.ca.location={mounts['kafka-secret']}/ca.pem" in properties
        assert "security.protocol=SASL_SSL" in properties
    keda = commands["adr-kafka"]
    assert keda["tls"] == "enable" and keda["sasl"].startswith("scram_")
