"""docker-compose.yml's pipeline and monitoring services: files, commands, ports agree."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

import pytest

from tests.deploy._manifests import (
    DASHBOARDS,
    GRAFANA_PROVISIONING,
    PROMETHEUS_CONFIG,
    container,
    flag_value,
    load_yaml_docs,
    one,
    overlay,
)
from tests.deploy._metrics import REPO

ADR_SERVICES = ("simulate", "consumer", "tierjob")
_VAR = re.compile(r"\$\{(\w+):-([^}]*)\}")


def _services() -> dict[str, Any]:
    services = load_yaml_docs(REPO / "docker-compose.yml")[0]["services"]
    assert isinstance(services, dict)
    return services


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """container path -> host path (relative to the repository) of the bind mounts."""
    out = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            out[target] = source
    return out


def _seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+)(s|m)", text)
    assert match, text
    return int(match[1]) * (60 if match[2] == "m" else 1)


def test_pipeline_and_monitoring_services_exist() -> None:
    assert {*ADR_SERVICES, "prometheus", "grafana", "kafka", "redis"} <= set(_services())


@pytest.mark.parametrize("name", ADR_SERVICES)
def test_adr_services_run_commands_adr_has(name: str) -> None:
    from adr_cli.main import SUBCOMMANDS, build_parser
    from tests.deploy.test_image import packages_of_target

    service = _services()[name]
    assert _VAR.sub(lambda m: m[2], service["image"]).startswith("adr-stream")
    assert service["build"]["context"] == "."
    assert (REPO / "Dockerfile").is_file()
    command = service["command"]
    assert command[0] in SUBCOMMANDS
    # The image the service builds holds the package its subcommand runs.
    top_package = SUBCOMMANDS[command[0]][0].partition(".")[0]
    assert top_package in packages_of_target(service["build"]["target"]), name
    build_parser(command).parse_args(command)  # SystemExit on an unknown flag


@pytest.mark.parametrize("name", ["prometheus", "grafana"])
def test_bind_mounts_exist(name: str) -> None:
    mounts = _mounts(_services()[name])
    assert mounts
    for host in mounts.values():
        assert (REPO / host).exists(), host


def test_prometheus_scrapes_the_services_on_their_metrics_ports() -> None:
    services = _services()
    mounts = _mounts(services["prometheus"])
    assert REPO / mounts["/etc/prometheus/prometheus.yml"] == PROMETHEUS_CONFIG
    config = load_yaml_docs(PROMETHEUS_CONFIG)[0]
    for rule_file in config["rule_files"]:
        assert rule_file in mounts, f"{rule_file} is not mounted"
    scraped = {}
    for job in config["scrape_configs"]:
        for sd in job["dns_sd_configs"]:
            for host in sd["names"]:
                scraped[host] = sd["port"]
    assert set(scraped) == {"consumer", "tierjob"}
    for name, port in scraped.items():
        assert port == int(flag_value(services[name]["command"], "--metrics-port") or -1), name


def test_grafana_gets_the_provisioning_and_the_dashboards() -> None:
    grafana = _services()["grafana"]
    mounts = _mounts(grafana)
    assert REPO / mounts["/etc/grafana/provisioning"] == GRAFANA_PROVISIONING
    (provider,) = load_yaml_docs(GRAFANA_PROVISIONING / "dashboards" / "adr-stream.yml")[0][
        "providers"
    ]
    dashboards_in_container = provider["options"]["path"]
    assert REPO / mounts[dashboards_in_container] == DASHBOARDS
    home = PurePosixPath(grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    assert str(home.parent) == dashboards_in_container
    assert (DASHBOARDS / home.name).is_file()


def test_consumer_health_and_shutdown_match_kubernetes() -> None:
    consumer = _services()["consumer"]
    port = flag_value(consumer["command"], "--metrics-port")
    assert f"127.0.0.1:{port}/healthz" in " ".join(consumer["healthcheck"]["test"])
    k8s = one(overlay("prod"), "Deployment", "adr-consumer")
    assert flag_value(container(k8s)["args"], "--metrics-port") == port
    grace = k8s["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert _seconds(consumer["stop_grace_period"]) >= grace


def test_prometheus_labels_the_series_with_the_services_pool_and_group() -> None:
    """What the alerts aggregate by: `pool` (ADR_NAMESPACE) and, for consumers, `group`."""
    jobs = {j["job_name"]: j for j in load_yaml_docs(PROMETHEUS_CONFIG)[0]["scrape_configs"]}
    for job, service in (("adr-consumer", "consumer"), ("adr-tierjob", "tierjob")):
        added = {r["target_label"]: r["replacement"] for r in jobs[job]["relabel_configs"]}
        spec = _services()[service]
        want = {"pool": spec["environment"]["ADR_NAMESPACE"]}
        if (group := flag_value(spec["command"], "--group")) is not None:
            want["group"] = group
        assert added == want, job
