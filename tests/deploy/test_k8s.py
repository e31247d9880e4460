"""deploy/k8s: every manifest is valid for its API, and the pieces point at each other."""

from __future__ import annotations

import argparse
import ast
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from tests.deploy._manifests import K8S, container, flag_value, k8s_objects, load_yaml_docs, one
from tests.deploy._metrics import REPO

# The oldest and the newest Kubernetes minor versions the manifests must be valid for.
KUBERNETES_VERSIONS = ("1.28.0", "1.37.0")
CORE_KINDS = {
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "CronJob"),
    ("policy/v1", "PodDisruptionBudget"),
    ("v1", "Secret"),
}
_STR = {"type": "string", "minLength": 1}
_LABELS = {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1}
_META = {"type": "object", "required": ["name"], "properties": {"name": _STR}}
# The operator CRDs' fields we use, as structural schemas (their CRDs are not installable here).
CRD_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("keda.sh/v1alpha1", "ScaledObject"): {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "metadata": _META,
            "spec": {
                "type": "object",
                "required": ["scaleTargetRef", "triggers"],
                "additionalProperties": False,
                "properties": {
                    "scaleTargetRef": {
                        "type": "object",
                        "required": ["name"],
                        "additionalProperties": False,
                        "properties": {"apiVersion": _STR, "kind": _STR, "name": _STR},
                    },
                    "pollingInterval": {"type": "integer", "minimum": 1},
                    "cooldownPeriod": {"type": "integer", "minimum": 0},
                    "minReplicaCount": {"type": "integer", "minimum": 0},
                    "maxReplicaCount": {"type": "integer", "minimum": 1},
                    "advanced": {"type": "object"},
                    "fallback": {
                        "type": "object",
                        "required": ["failureThreshold", "replicas"],
                        "additionalProperties": False,
                        "properties": {
                            "failureThreshold": {"type": "integer", "minimum": 1},
                            "replicas": {"type": "integer", "minimum": 1},
                        },
                    },
                    "triggers": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["type", "metadata"],
                            "additionalProperties": False,
                            "properties": {
                                "type": {"const": "kafka"},
                                "authenticationRef": {
                                    "type": "object",
                                    "required": ["name"],
                                    "additionalProperties": False,
                                    "properties": {"name": _STR, "kind": _STR},
                                },
                                "metadata": {
                                    "type": "object",
                                    "required": ["consumerGroup", "topic", "lagThreshold"],
                                    "oneOf": [
                                        {"required": ["bootstrapServers"]},
                                        {"required": ["bootstrapServersFromEnv"]},
                                    ],
                                    # KEDA reads trigger metadata as strings only.
                                    "additionalProperties": {"type": "string"},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
    ("keda.sh/v1alpha1", "TriggerAuthentication"): {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "metadata": _META,
            "spec": {
                "type": "object",
                "required": ["secretTargetRef"],
                "additionalProperties": False,
                "properties": {
                    "secretTargetRef": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["parameter", "name", "key"],
                            "additionalProperties": False,
                            "properties": {"parameter": _STR, "name": _STR, "key": _STR},
                        },
                    },
                },
            },
        },
    },
    ("monitoring.coreos.com/v1", "PodMonitor"): {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "metadata": _META,
            "spec": {
                "type": "object",
                "required": ["selector", "podMetricsEndpoints"],
                "additionalProperties": False,
                "properties": {
                    "selector": {
                        "type": "object",
                        "required": ["matchLabels"],
                        "properties": {"matchLabels": _LABELS},
                    },
                    "podMetricsEndpoints": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["port", "path"],
                            "additionalProperties": False,
                            "properties": {
                                "port": _STR,
                                "path": _STR,
                                "interval": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                            },
                        },
                    },
                },
            },
        },
    },
    ("monitoring.coreos.com/v1", "PrometheusRule"): {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "metadata": _META,
            "spec": {
                "type": "object",
                "required": ["groups"],
                "additionalProperties": False,
                "properties": {
                    "groups": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["name", "rules"],
                            "additionalProperties": False,
                            "properties": {
                                "name": _STR,
                                "rules": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["alert", "expr", "labels", "annotations"],
                                        "additionalProperties": False,
                                        "properties": {
                                            "alert": {
                                                "type": "string",
                                                "pattern": "^[A-Z][A-Za-z0-9]*$",
                                            },
                                            "expr": _STR,
                                            "for": {"type": "string", "pattern": "^[0-9]+[smh]$"},
                                            "labels": {
                                                "type": "object",
                                                "required": ["severity"],
                                                "properties": {
                                                    "severity": {"enum": ["warning", "critical"]}
                                                },
                                            },
                                            "annotations": {
                                                "type": "object",
                                                "required": ["summary", "runbook"],
                                            },
                                        },
                                    },
                                },
                            },
                        },
                    }
                },
            },
        },
    },
}

CONSUMER = "adr-consumer"
TIERJOB = "adr-tierjob"


def _objects() -> list[Any]:
    return [
        pytest.param(d, id=f"{p.name}:{d['kind']}/{d['metadata']['name']}")
        for p, d in k8s_objects()
    ]


def test_kustomization_lists_every_manifest_and_nothing_else() -> None:
    listed = load_yaml_docs(K8S / "kustomization.yaml")[0]["resources"]
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(listed) == sorted(on_disk)
    assert len(listed) == len(set(listed))


@pytest.mark.parametrize("obj", _objects())
def test_every_object_is_valid_for_its_api(obj: dict[str, Any]) -> None:
    key = (obj["apiVersion"], obj["kind"])
    if key in CORE_KINDS:
        for version in KUBERNETES_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)
    else:
        assert key in CRD_SCHEMAS, f"no schema for {key}: add one, or use a known kind"
        jsonschema.validate(obj, CRD_SCHEMAS[key])


def test_the_validators_reject_a_misspelt_field() -> None:
    """Guard on the guard: strict validation must catch what a typo would break."""
    bad = one("Deployment", CONSUMER)
    probe = container(bad)["readinessProbe"]["httpGet"]
    probe["paht"] = probe.pop("path")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES_VERSIONS[-1], strict=True)
    rule = one("PrometheusRule", "adr-stream")
    rule["spec"]["groups"][0]["rules"][0]["exprr"] = "up"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(rule, CRD_SCHEMAS[("monitoring.coreos.com/v1", "PrometheusRule")])


@pytest.mark.parametrize("name", [CONSUMER, TIERJOB])
def test_deployment_selector_matches_its_pods(name: str) -> None:
    dep = one("Deployment", name)
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_consumer_probes_hit_healthz_and_readyz_on_the_metrics_port() -> None:
    c = container(one("Deployment", CONSUMER))
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    metrics_port = int(flag_value(c["args"], "--metrics-port") or -1)
    assert ports.get("metrics") == metrics_port, "container port 'metrics' = --metrics-port"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        port = c[probe]["httpGet"]["port"]
        assert ports.get(port, port) == metrics_port, f"{probe} goes to the metrics port"


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


def test_consumer_grace_period_outlasts_a_batch_and_the_shutdown_drain() -> None:
    """SIGTERM: finish the batch (a Redis round trip may take its 10 s socket timeout), relay
    the outbox (pump then drain, each up to the drain timeout), flush the producer (5 s)."""
    from consumer.config import Config

    dep = one("Deployment", CONSUMER)
    grace = dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    batch = Config().batch_wait_ms / 1000 + 10
    assert grace > batch + 2 * _consumer_drain_timeout_s() + 5


def test_tierjob_runs_calibrate_in_a_loop_or_as_a_forbid_cronjob() -> None:
    dep = one("Deployment", TIERJOB)
    args = container(dep)["args"]
    assert args[0] == "calibrate"
    assert float(flag_value(args, "--every") or 0) > 0, "a Deployment must loop (--every)"
    c = container(dep)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports["metrics"] == int(flag_value(args, "--metrics-port") or -1)
    for _, obj in k8s_objects():
        if obj["kind"] == "CronJob":
            assert obj["spec"]["concurrencyPolicy"] == "Forbid"


def test_scaledobject_scales_the_consumer_on_its_own_group_and_topic() -> None:
    so = one("ScaledObject", CONSUMER)["spec"]
    dep = one("Deployment", CONSUMER)
    assert so["scaleTargetRef"]["name"] == dep["metadata"]["name"]
    assert so["scaleTargetRef"].get("kind", "Deployment") == "Deployment"
    assert 1 <= so["minReplicaCount"] <= so["maxReplicaCount"]
    # cooldownPeriod only governs scaling to zero: with a floor of 1 it would promise nothing.
    assert "cooldownPeriod" not in so or so["minReplicaCount"] == 0
    assert so["minReplicaCount"] <= so["fallback"]["replicas"] <= so["maxReplicaCount"]
    (trigger,) = so["triggers"]
    meta = trigger["metadata"]
    args = container(dep)["args"]
    assert meta["topic"] == flag_value(args, "--topic")
    assert meta["consumerGroup"] == flag_value(args, "--group")
    config = one("ConfigMap", "adr-config")["data"]
    assert "bootstrapServers" not in meta, "one broker address: the pods' own"
    assert config[meta["bootstrapServersFromEnv"]]
    assert int(meta["lagThreshold"]) > 0


def test_scaler_and_pods_read_their_credentials_from_the_secrets() -> None:
    so = one("ScaledObject", CONSUMER)["spec"]
    auth = one("TriggerAuthentication", so["triggers"][0]["authenticationRef"]["name"])
    keda_secret = one("Secret", "adr-keda-kafka")["stringData"]
    for ref in auth["spec"]["secretTargetRef"]:
        assert ref["name"] == "adr-keda-kafka" and ref["key"] in keda_secret
    config = one("ConfigMap", "adr-config")["data"]
    assert "REDIS_URL" not in config, "a Redis URL may carry a password: Secret only"
    for name, key in ((CONSUMER, "consumer-url"), (TIERJOB, "tierjob-url")):
        pod = one("Deployment", name)["spec"]["template"]["spec"]
        c = container(one("Deployment", name))
        env = {e["name"]: e["value"] for e in c["env"]}
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"]}
        assert env["REDIS_URL_FILE"] == f"{mounts['redis-secret']}/{key}"
        assert key in one("Secret", secrets["redis-secret"])["stringData"]
        kafka_file = config["ADR_KAFKA_CONFIG_FILE"]
        assert kafka_file == f"{mounts['kafka-secret']}/client.properties"
        assert "client.properties" in one("Secret", secrets["kafka-secret"])["stringData"]


def test_podmonitor_selects_both_workloads_on_their_metrics_port() -> None:
    pm = one("PodMonitor", "adr-stream")["spec"]
    selector = pm["selector"]["matchLabels"]
    (endpoint,) = pm["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics"
    for name in (CONSUMER, TIERJOB):
        dep = one("Deployment", name)
        assert selector.items() <= dep["spec"]["template"]["metadata"]["labels"].items(), name
        assert endpoint["port"] in {p["name"] for p in container(dep)["ports"]}, name


@pytest.mark.parametrize("name", [CONSUMER, TIERJOB])
def test_pdb_covers_the_pods(name: str) -> None:
    pdb = one("PodDisruptionBudget", name)["spec"]
    dep = one("Deployment", name)
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert pdb["selector"]["matchLabels"].items() <= pod_labels.items()
    if "minAvailable" in pdb:
        assert pdb["minAvailable"] < dep["spec"]["replicas"], "a drain must be able to proceed"


def test_tierjob_probes_hit_healthz_and_readyz_on_the_metrics_port() -> None:
    c = container(one("Deployment", TIERJOB))
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}


@pytest.mark.parametrize("name", [CONSUMER, TIERJOB])
def test_workloads_take_their_config_from_the_configmap(name: str) -> None:
    c = container(one("Deployment", name))
    refs = [e["configMapRef"]["name"] for e in c.get("envFrom", []) if "configMapRef" in e]
    assert refs == ["adr-config"]


def test_workload_args_parse_with_the_adr_cli() -> None:
    """The args of every container are a command line `adr` accepts (its real parsers)."""
    from adr_cli.main import SUBCOMMANDS, build_parser

    for name in (CONSUMER, TIERJOB):
        args = container(one("Deployment", name))["args"]
        assert args[0] in SUBCOMMANDS
        parsed = build_parser(args).parse_args(args)
        assert isinstance(parsed, argparse.Namespace)
