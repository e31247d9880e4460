"""Loading deploy/: the rendered Kubernetes overlays, the rule files, the dashboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.deploy._metrics import REPO
from tests.deploy._render import render_overlay

DEPLOY = REPO / "deploy"
RULES_FILE = DEPLOY / "prometheus" / "rules.yml"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
DASHBOARDS = DEPLOY / "grafana" / "dashboards"
GRAFANA_PROVISIONING = DEPLOY / "grafana" / "provisioning"

Doc = dict[str, Any]
CONSUMER = "adr-consumer"
TIERJOB = "adr-tierjob"
SERVE = "adr-serve"
HISTORY = "adr-history"


def load_yaml_docs(path: Path) -> list[Doc]:
    """Every non-empty document of a YAML file."""
    with path.open() as fh:
        return [d for d in yaml.safe_load_all(fh) if d is not None]


def one(objects: list[Doc], kind: str, name: str) -> Doc:
    """The single object of `kind` called `name`."""
    found = [d for d in objects if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"want exactly one {kind}/{name}, found {len(found)}"
    return found[0]


def overlay(name: str) -> list[Doc]:
    """The objects `kubectl apply -k deploy/k8s/overlays/<name>` would create."""
    return render_overlay(name)


def config_map(objects: list[Doc], workload: Doc) -> Doc:
    """The ConfigMap a workload's container takes its environment from (a generated name)."""
    env_from = container(workload).get("envFrom", [])
    refs = [e["configMapRef"]["name"] for e in env_from if "configMapRef" in e]
    assert len(refs) == 1, "one ConfigMap per container"
    return one(objects, "ConfigMap", refs[0])


def secret_keys_used(objects: list[Doc], auth: Doc) -> dict[str, set[str]]:
    """Secret name -> the keys the pods (files they are told to read) and KEDA take from it."""
    out: dict[str, set[str]] = {}
    for ref in auth["spec"]["secretTargetRef"]:
        out.setdefault(ref["name"], set()).add(ref["key"])
    for name, url_key in (
        (CONSUMER, "consumer-url"), (TIERJOB, "tierjob-url"), (HISTORY, "history-url")
    ):  # fmt: skip
        dep = one(objects, "Deployment", name)
        pod, c = dep["spec"]["template"]["spec"], container(dep)
        env = {e["name"]: e["value"] for e in c["env"]}
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"]}
        assert env["REDIS_URL_FILE"] == f"{mounts['redis-secret']}/{url_key}"
        out.setdefault(secrets["redis-secret"], set()).add(url_key)
        kafka_file = config_map(objects, dep)["data"]["ADR_KAFKA_CONFIG_FILE"]
        assert kafka_file == f"{mounts['kafka-secret']}/client.properties"
        out.setdefault(secrets["kafka-secret"], set()).add("client.properties")
    dep = one(objects, "Deployment", SERVE)  # reads Redis only, as the read-only user
    env = {e["name"]: e["value"] for e in container(dep)["env"]}
    mounts = {m["name"]: m["mountPath"] for m in container(dep)["volumeMounts"]}
    secrets = {
        v["name"]: v["secret"]["secretName"] for v in dep["spec"]["template"]["spec"]["volumes"]
    }
    assert env["REDIS_URL_FILE"] == f"{mounts['redis-secret']}/reader-url"
    out.setdefault(secrets["redis-secret"], set()).add("reader-url")
    return out


def container(deployment: Doc) -> Doc:
    """The only container of a workload's pod template."""
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, "one container per adr-stream pod"
    return containers[0]


def flag_value(args: list[str], flag: str) -> str | None:
    """Value of `--flag V` or `--flag=V` in an argument list."""
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def rule_exprs() -> list[tuple[str, str]]:
    """(alert, expr) of every rule in deploy/prometheus/rules.yml."""
    groups = load_yaml_docs(RULES_FILE)[0]["groups"]
    return [(r.get("alert") or r["record"], r["expr"]) for g in groups for r in g["rules"]]


def dashboards() -> list[tuple[Path, Doc]]:
    return [(p, json.loads(p.read_text())) for p in sorted(DASHBOARDS.glob("*.json"))]


def panels(dashboard: Doc) -> list[Doc]:
    """Every panel, rows' nested panels included."""
    out: list[Doc] = []
    for panel in dashboard.get("panels", []):
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out
