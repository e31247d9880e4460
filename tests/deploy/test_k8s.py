"""deploy/k8s: every overlay renders, every rendered object is valid for its API (Kubernetes
schemas, the operators' CRD schemas), and the pieces point at each other."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from tests.deploy import _crds
from tests.deploy._manifests import (
    CONSUMER,
    HISTORY,
    SERVE,
    TIERJOB,
    config_map,
    container,
    flag_value,
    load_yaml_docs,
    one,
    overlay,
    secret_keys_used,
)
from tests.deploy._metrics import REPO
from tests.deploy._render import BASE, OVERLAYS, overlay_names

# The oldest and the newest Kubernetes minor versions the manifests must be valid for.
KUBERNETES_VERSIONS = ("1.28.0", "1.37.0")
WORKLOADS = (CONSUMER, TIERJOB, SERVE, HISTORY)
ENVIRONMENTS = overlay_names()
Doc = dict[str, Any]


def test_the_overlays_are_dev_and_prod() -> None:
    assert ENVIRONMENTS == ["dev", "prod"]


@pytest.mark.parametrize("folder", [BASE, *(OVERLAYS / e for e in ENVIRONMENTS)], ids=str)
def test_every_file_of_a_kustomization_is_used(folder: Path) -> None:
    k = load_yaml_docs(folder / "kustomization.yaml")[0]
    used = [r for r in k.get("resources", []) if not (folder / r).is_dir()]
    used += [p["path"] for p in k.get("patches", [])] + k.get("configurations", [])
    on_disk = {p.name for p in folder.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(used) == sorted(on_disk)


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_every_rendered_object_is_valid_for_its_api(env: str) -> None:
    objects = overlay(env)
    crd_kinds = _crds.crd_kinds()
    kinds = {(o["apiVersion"], o["kind"]) for o in objects}
    assert {("keda.sh/v1alpha1", "ScaledObject"), ("apps/v1", "Deployment")} <= kinds
    for obj in objects:
        where = f"{env}: {obj['kind']}/{obj['metadata']['name']}"
        for version in KUBERNETES_VERSIONS:
            if (obj["apiVersion"], obj["kind"]) in crd_kinds:
                _crds.validate(obj, version)
            else:
                try:
                    kubernetes_validate.validate(obj, version, strict=True)
                except kubernetes_validate.ValidationError as e:
                    raise AssertionError(f"{where} (Kubernetes {version}): {e}") from e


def test_the_validators_reject_a_misspelt_field() -> None:
    """Guard on the guard: strict validation must catch what a typo would break."""
    objects = overlay("prod")
    bad = one(objects, "Deployment", CONSUMER)
    probe = container(bad)["readinessProbe"]["httpGet"]
    probe["paht"] = probe.pop("path")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES_VERSIONS[-1], strict=True)
    rule = one(objects, "PrometheusRule", "adr-stream")
    rule["spec"]["groups"][0]["rules"][0]["exprr"] = "up"
    so = one(objects, "ScaledObject", CONSUMER)
    so["spec"]["minReplicas"] = so["spec"].pop("minReplicaCount")
    auth = one(objects, "TriggerAuthentication", "adr-kafka")
    auth["spec"]["secretTargetRef"][0]["secret"] = "adr-kafka"
    for obj in (rule, so, auth):
        with pytest.raises(jsonschema.ValidationError):
            _crds.validate(obj, KUBERNETES_VERSIONS[-1])


def test_the_image_is_named_in_one_place() -> None:
    """Registry, repository and tag: the base's `images`, nowhere else."""
    kustomizations = [BASE, *(OVERLAYS / e for e in ENVIRONMENTS)]
    with_images = [
        k for k in kustomizations if "images" in load_yaml_docs(k / "kustomization.yaml")[0]
    ]
    assert with_images == [BASE]
    (image,) = load_yaml_docs(BASE / "kustomization.yaml")[0]["images"]
    for path in BASE.glob("*.yaml"):
        for doc in load_yaml_docs(path):
            for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                assert c["image"] == image["name"], f"{path.name}: the placeholder name only"
    for env in ENVIRONMENTS:
        for obj in overlay(env):
            if obj["kind"] == "Deployment":
                assert container(obj)["image"] == f"{image['newName']}:{image['newTag']}", env


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_every_object_lives_in_the_overlays_namespace(env: str) -> None:
    objects = overlay(env)
    (ns,) = [o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"]
    for obj in objects:
        if obj["kind"] != "Namespace":
            assert obj["metadata"]["namespace"] == ns, obj["metadata"]["name"]


@pytest.mark.parametrize("env", ENVIRONMENTS)
@pytest.mark.parametrize("name", WORKLOADS)
def test_deployment_selector_matches_its_pods(env: str, name: str) -> None:
    dep = one(overlay(env), "Deployment", name)
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


@pytest.mark.parametrize("env", ENVIRONMENTS)
@pytest.mark.parametrize("name", WORKLOADS)
def test_probes_hit_healthz_and_readyz_on_the_metrics_port(env: str, name: str) -> None:
    c = container(one(overlay(env), "Deployment", name))
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    metrics_port = int(flag_value(c["args"], "--metrics-port") or -1)
    assert ports.get("metrics") == metrics_port, "container port 'metrics' = --metrics-port"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if probe in c:
            port = c[probe]["httpGet"]["port"]
            assert ports.get(port, port) == metrics_port, f"{probe} goes to the metrics port"


@pytest.mark.parametrize("env", ENVIRONMENTS)
@pytest.mark.parametrize("name", WORKLOADS)
def test_resources_are_requested_and_memory_limited(env: str, name: str) -> None:
    res = container(one(overlay(env), "Deployment", name))["resources"]
    assert {"cpu", "memory"} <= res["requests"].keys()
    assert "cpu" not in res.get("limits", {}), "a CPU limit only throttles into lag"
    assert _mebibytes(res["limits"]["memory"]) >= _mebibytes(res["requests"]["memory"])


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_consumer_memory_request_covers_the_state_cache(env: str) -> None:
    """docs/operations.md, "Sizing the pods": 48 MiB + 871 B per cached player + 64 MiB."""
    objects = overlay(env)
    dep = one(objects, "Deployment", CONSUMER)
    players = int(config_map(objects, dep)["data"]["ADR_STATE_CACHE_PLAYERS"])
    need = 48 + players * 871 / 2**20 + 64
    assert _mebibytes(container(dep)["resources"]["requests"]["memory"]) >= need


def _mebibytes(quantity: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    return float(quantity[:-2]) * units[quantity[-2:]]


def _consumer_drain_timeout_s() -> float:
    """consumer/pipeline.py's `_DRAIN_TIMEOUT_S`: how long shutdown relays the outbox, per step."""
    tree = ast.parse((REPO / "consumer" / "pipeline.py").read_text())
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        value = getattr(node, "value", None)
        if "_DRAIN_TIMEOUT_S" in names and isinstance(value, ast.Constant):
            return float(value.value)
    raise AssertionError("consumer/pipeline.py no longer defines _DRAIN_TIMEOUT_S: re-derive")


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_consumer_grace_period_outlasts_a_batch_and_the_shutdown_drain(env: str) -> None:
    """SIGTERM: finish the batch (a Redis round trip may take its 10 s socket timeout), relay
    the outbox (pump then drain, each up to the drain timeout), flush the producer (5 s)."""
    from consumer.config import Config

    dep = one(overlay(env), "Deployment", CONSUMER)
    grace = dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    batch = Config().batch_wait_ms / 1000 + 10
    assert grace > batch + 2 * _consumer_drain_timeout_s() + 5


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_tierjob_runs_calibrate_in_a_loop(env: str) -> None:
    args = container(one(overlay(env), "Deployment", TIERJOB))["args"]
    assert args[0] == "calibrate"
    assert float(flag_value(args, "--every") or 0) > 0, "a Deployment must loop (--every)"


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_scaledobject_scales_the_consumer_on_its_own_group_topic_and_broker(env: str) -> None:
    objects = overlay(env)
    so = one(objects, "ScaledObject", CONSUMER)["spec"]
    dep = one(objects, "Deployment", CONSUMER)
    assert so["scaleTargetRef"]["name"] == dep["metadata"]["name"]
    assert so["scaleTargetRef"].get("kind", "Deployment") == "Deployment"
    assert 1 <= so["minReplicaCount"] <= so["maxReplicaCount"]
    assert "replicas" not in dep["spec"], "KEDA owns it: kubectl apply would reset the count"
    # cooldownPeriod only governs scaling to zero: with a floor of 1 it would promise nothing.
    assert "cooldownPeriod" not in so or so["minReplicaCount"] == 0
    assert so["minReplicaCount"] <= so["fallback"]["replicas"] <= so["maxReplicaCount"]
    (trigger,) = so["triggers"]
    meta = trigger["metadata"]
    args = container(dep)["args"]
    assert meta["topic"] == flag_value(args, "--topic")
    assert meta["consumerGroup"] == flag_value(args, "--group")
    # One broker address: KEDA resolves bootstrapServersFromEnv in the target container's
    # environment, which is the generated ConfigMap the pods read (nothing overrides it).
    assert "bootstrapServers" not in meta
    key = meta["bootstrapServersFromEnv"]
    assert config_map(objects, dep)["data"][key]
    assert key not in {e["name"] for e in container(dep).get("env", [])}
    assert int(meta["lagThreshold"]) > 0


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_scaler_and_pods_read_their_credentials_from_the_same_secrets(env: str) -> None:
    objects = overlay(env)
    so = one(objects, "ScaledObject", CONSUMER)["spec"]
    auth = one(objects, "TriggerAuthentication", so["triggers"][0]["authenticationRef"]["name"])
    needed = secret_keys_used(objects, auth)
    secrets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Secret"}
    for name in (CONSUMER, TIERJOB):
        assert "REDIS_URL" not in config_map(objects, one(objects, "Deployment", name))["data"]
    if env == "prod":
        assert not secrets, "production credentials come from the secret store, not from git"
        assert {p["parameter"] for p in auth["spec"]["secretTargetRef"]} >= {
            "sasl", "tls", "username", "password", "ca",
        }  # fmt: skip
        return
    for secret, keys in needed.items():
        assert keys <= secrets[secret]["stringData"].keys(), secret


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_podmonitor_selects_both_workloads_on_their_metrics_port(env: str) -> None:
    objects = overlay(env)
    pm = one(objects, "PodMonitor", "adr-stream")["spec"]
    selector = pm["selector"]["matchLabels"]
    (endpoint,) = pm["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics"
    for name in WORKLOADS:
        dep = one(objects, "Deployment", name)
        assert selector.items() <= dep["spec"]["template"]["metadata"]["labels"].items(), name
        assert endpoint["port"] in {p["name"] for p in container(dep)["ports"]}, name


@pytest.mark.parametrize("env", ENVIRONMENTS)
@pytest.mark.parametrize("name", WORKLOADS)
def test_pdb_covers_the_pods_and_lets_a_drain_proceed(env: str, name: str) -> None:
    objects = overlay(env)
    pdb = one(objects, "PodDisruptionBudget", name)["spec"]
    dep = one(objects, "Deployment", name)
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert pdb["selector"]["matchLabels"].items() <= pod_labels.items()
    if "minAvailable" in pdb:
        assert pdb["minAvailable"] < dep["spec"]["replicas"], "a drain must be able to proceed"


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_workload_args_parse_with_the_adr_cli(env: str) -> None:
    """The args of every container are a command line `adr` accepts (its real parsers)."""
    from adr_cli.main import SUBCOMMANDS, build_parser

    for name in WORKLOADS:
        args = container(one(overlay(env), "Deployment", name))["args"]
        assert args[0] in SUBCOMMANDS
        parsed = build_parser(args).parse_args(args)
        assert isinstance(parsed, argparse.Namespace)


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_every_series_is_labelled_with_the_pods_pool_and_group(env: str) -> None:
    """The PodMonitor copies the pods' adr-stream.io/pool and adr-stream.io/group labels onto
    every series as `pool` and `group` (what the alerts aggregate by); those pod labels name
    the ADR_NAMESPACE and --group the processes really run with."""
    objects = overlay(env)
    (endpoint,) = one(objects, "PodMonitor", "adr-stream")["spec"]["podMetricsEndpoints"]
    copied = {r["targetLabel"]: r["sourceLabels"] for r in endpoint["relabelings"]}
    assert copied == {
        "pool": ["__meta_kubernetes_pod_label_adr_stream_io_pool"],
        "group": ["__meta_kubernetes_pod_label_adr_stream_io_group"],
    }
    for name in WORKLOADS:
        dep = one(objects, "Deployment", name)
        labels = dep["spec"]["template"]["metadata"]["labels"]
        assert labels["adr-stream.io/pool"] == config_map(objects, dep)["data"]["ADR_NAMESPACE"]
        group = flag_value(container(dep)["args"], "--group")
        assert labels.get("adr-stream.io/group") == group, name
