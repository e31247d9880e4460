"""Alerts and dashboards query only metrics (and labels) the code defines, and stay in sync."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.deploy._manifests import (
    GRAFANA_PROVISIONING,
    PROMETHEUS_CONFIG,
    RULES_FILE,
    dashboards,
    load_yaml_docs,
    one,
    overlay,
    panels,
    rule_exprs,
)
from tests.deploy._metrics import REPO, defined_metrics, problems, promql_refs
from tests.deploy._render import overlay_names

DESIGN = REPO / "docs" / "design.md"
OPERATIONS = REPO / "docs" / "operations.md"
RULES_TEST = RULES_FILE.parent / "rules_test.yml"


def _design_metric_names() -> set[str]:
    """Metric names docs/design.md fixes (section "Metrics")."""
    text = DESIGN.read_text()
    section = text.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(adr_[a-z0-9_]+)", section))


def _dashboard_exprs() -> list[tuple[str, str]]:
    return [
        (f"{path.name}:{panel['title']}", target["expr"])
        for path, dash in dashboards()
        for panel in panels(dash)
        for target in panel.get("targets", [])
    ]


def _code_definitions():  # type: ignore[no-untyped-def]
    defs = defined_metrics()
    assert not defs.unresolved, (
        f"metric constructors whose name is not a literal: {defs.unresolved}"
    )
    packages = {m.where.split("/", 1)[0] for m in defs.metrics}
    assert packages == {"consumer", "tierjob"}, f"metrics found only in {packages}"
    return defs


@pytest.mark.parametrize(("alert", "expr"), rule_exprs())
def test_alert_queries_only_metrics_the_code_defines(alert: str, expr: str) -> None:
    assert problems(expr, _code_definitions()) == [], alert


@pytest.mark.parametrize(("panel", "expr"), _dashboard_exprs())
def test_dashboard_queries_only_metrics_the_code_defines(panel: str, expr: str) -> None:
    assert problems(expr, _code_definitions()) == [], panel


def _exported_by(package: str) -> set[str]:
    return {
        n for m in _code_definitions().metrics if m.where.startswith(package) for n in m.exposed()
    }


@pytest.mark.parametrize(("panel", "expr"), _dashboard_exprs())
def test_every_dashboard_query_is_of_the_chosen_rating_pools(panel: str, expr: str) -> None:
    """Each series a panel selects is filtered by the `pool` variable (the label the scrape
    configs add: docs/operations.md, "Alerts"), and a consumer's series by the `group`
    variable too (a tier job's, which has no group, matches an empty one), so pools and
    consumer groups running side by side are told apart."""
    consumer, tierjob = _exported_by("consumer"), _exported_by("tierjob")
    selectors = re.findall(r"\b(adr_[a-z0-9_]+)(\{[^}]*\})?", expr)
    assert selectors, panel
    for metric, labels in selectors:
        assert 'pool=~"$pool"' in labels, f"{panel}: {metric} is not filtered by $pool"
        if metric in consumer:
            wanted = 'group=~"$group|"' if metric in tierjob else 'group=~"$group"'
            assert wanted in labels, f"{panel}: {metric} is not filtered by $group"
    for path, dash in dashboards():
        variables = {v["name"]: v for v in dash["templating"]["list"]}
        pool, group = variables["pool"], variables["group"]
        assert pool["query"]["query"] == "label_values(adr_events_consumed_total, pool)", path
        assert group["query"]["query"] == (
            'label_values(adr_events_consumed_total{pool=~"$pool"}, group)'
        ), path
        for variable in (pool, group):
            assert variable["multi"] and variable["allValue"] == ".*", path


@pytest.mark.parametrize(("panel", "expr"), _dashboard_exprs())
def test_every_dashboard_query_is_per_pool_and_group_never_summed_across(
    panel: str, expr: str
) -> None:
    """Each aggregation keeps `pool` (and, over a consumer's series, `group`): selecting
    several pools, or All, draws one line per pool instead of their sum."""
    consumer = _exported_by("consumer")
    groupings = promql_refs(expr).groupings
    assert groupings, f"{panel}: one line per process, not per pool"
    for labels, names in groupings:
        assert "pool" in labels, f"{panel}: aggregation over {sorted(names)} by {labels}"
        if names & consumer:
            assert "group" in labels, f"{panel}: aggregation over {sorted(names)} by {labels}"


def test_every_dashboard_legend_names_the_pool() -> None:
    for _, dash in dashboards():
        for panel in panels(dash):
            for target in panel.get("targets", []):
                assert target["legendFormat"].startswith("{{pool}}"), panel["title"]


def test_every_metric_of_the_design_is_on_the_dashboard() -> None:
    shown = set().union(*(promql_refs(e).metrics for _, e in _dashboard_exprs()))
    base = {re.sub(r"_(bucket|sum|count|total)$", "", m) for m in shown}
    missing = {m for m in _design_metric_names() if re.sub(r"_total$", "", m) not in base}
    assert not missing


@pytest.mark.parametrize("env", overlay_names())
def test_prometheusrule_carries_exactly_the_rule_file(env: str) -> None:
    rule = one(overlay(env), "PrometheusRule", "adr-stream")
    assert rule["spec"] == load_yaml_docs(RULES_FILE)[0]


def test_the_alerts_the_issue_names_exist() -> None:
    alerts = {a for a, _ in rule_exprs()}
    wanted = {
        "AdrConsumerLagGrowing",
        "AdrDeadLetterRate",
        "AdrRedisConflictRetries",
        "AdrCalibrationStale",
        "AdrNoEvents",
    }
    assert wanted <= alerts


# Where every alert's runbook_url points: a section of the docs on the project's repository.
RUNBOOKS = "docs/runbooks.md"
"""The runbooks, by their path in the repository: the rule files' runbook_url is this + #alert;
each kustomize overlay replaces it with its RUNBOOKS_URL."""
# The labels every aggregation of an alert keeps, by rule group: the rating pool and, for the
# consumer, its consumer group (a rebuild runs its own pool and group beside production's).
ALERT_SCOPE = {"adr-stream.consumer": {"pool", "group"}, "adr-stream.tierjob": {"pool"}}


def _rules() -> list[tuple[str, dict[str, Any]]]:
    return [(g["name"], r) for g in load_yaml_docs(RULES_FILE)[0]["groups"] for r in g["rules"]]


RULES = [pytest.param(g, r, id=r["alert"]) for g, r in _rules()]


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings: the heading's text (inline code,
    emphasis and link targets dropped), lower-cased, characters other than letters, digits,
    `_`, `-` and spaces removed, spaces turned into `-`; a repeated slug gets -1, -2, ..."""
    seen: dict[str, int] = {}
    out = set()
    in_fence = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        heading = re.match(r"^#{1,6} +(.+?) *#* *$", line)
        if in_fence or not heading:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_github_anchors_follow_githubs_rules() -> None:
    md = "# Fault matrix\n## `adr check`: exit codes\n```\n# not a heading\n```\n## A, b\n## A, b\n"
    assert github_anchors(md) == {"fault-matrix", "adr-check-exit-codes", "a-b", "a-b-1"}


@pytest.mark.parametrize(("group", "rule"), RULES)
def test_every_alert_has_a_runbook_url_to_a_docs_heading(group: str, rule: dict[str, Any]) -> None:
    url = rule["annotations"]["runbook_url"]
    path, _, anchor = url.partition("#")
    assert path == RUNBOOKS
    assert anchor == rule["alert"].lower(), "one section per alert, named after it"
    assert anchor in github_anchors((REPO / path).read_text()), f"{path} has no #{anchor}"


def test_the_runbooks_have_a_section_per_alert_and_no_other() -> None:
    headings = re.findall(r"^## (\S+)$", (REPO / RUNBOOKS).read_text(), re.M)
    assert sorted(headings) == sorted(r["alert"] for _, r in _rules())


@pytest.mark.parametrize(("group", "rule"), RULES)
def test_every_alert_has_a_description_naming_its_scope(group: str, rule: dict[str, Any]) -> None:
    """A description beside the summary (what fired and where to look first), naming the pool
    (and the consumer group) the alert is about."""
    description = rule["annotations"].get("description", "")
    assert len(description) > len(rule["annotations"]["summary"]), rule["alert"]
    for label in sorted(ALERT_SCOPE[group] & {"pool"}):
        assert f"{{{{ $labels.{label} }}}}" in description, rule["alert"]


def _overlay_with_runbooks(tmp_path: Path, env: str, url: str) -> Path:
    """A copy of overlay `env` whose RUNBOOKS_URL is `url` (its base by absolute path)."""
    source = REPO / "deploy" / "k8s" / "overlays" / env
    target = tmp_path / env
    shutil.copytree(source, target)
    kustomization = target / "kustomization.yaml"
    base = os.path.relpath(source.parent.parent / "base", target)  # kustomize: no absolute
    text = kustomization.read_text().replace("../../base", base)
    assert f"RUNBOOKS_URL={RUNBOOKS}\n" in text
    kustomization.write_text(text.replace(f"RUNBOOKS_URL={RUNBOOKS}", f"RUNBOOKS_URL={url}"))
    return target


@pytest.mark.parametrize("env", overlay_names())
def test_one_overlay_value_sets_every_runbook_url(tmp_path: Path, env: str) -> None:
    """RUNBOOKS_URL in the overlay is the one place: every rendered runbook_url is it plus the
    alert's anchor, and the local ConfigMap carrying it is not applied."""
    from tests.deploy._render import render

    url = "https://git.games.test/platform/adr-stream/-/blob/v0.1.0/docs/runbooks.md"
    docs = render(_overlay_with_runbooks(tmp_path, env, url))
    assert not [d for d in docs if d["metadata"]["name"] == "adr-runbooks"]
    rule = next(d for d in docs if d["kind"] == "PrometheusRule")
    urls = {
        r["alert"]: r["annotations"]["runbook_url"]
        for g in rule["spec"]["groups"]
        for r in g["rules"]
    }
    assert urls == {alert: f"{url}#{alert.lower()}" for alert in urls}
    assert len(urls) == len(_rules())


@pytest.mark.parametrize(("group", "rule"), RULES)
def test_every_alert_is_per_pool_and_consumer_group(group: str, rule: dict[str, Any]) -> None:
    """Each aggregation keeps the pool (and the consumer group): a rebuild's draining lag in
    another pool or group neither fires an alert nor hides production's (rules_test.yml)."""
    groupings = promql_refs(rule["expr"]).groupings
    assert groupings, "an alert over one series per process would page once per pod"
    for labels, names in groupings:
        assert ALERT_SCOPE[group] <= set(labels), f"aggregation over {sorted(names)} by {labels}"


def test_dashboard_structure() -> None:
    for path, dash in dashboards():
        assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36, path.name
        variables = {v["name"] for v in dash["templating"]["list"]}
        ids = [p["id"] for p in panels(dash)]
        assert len(ids) == len(set(ids)), f"{path.name}: panel ids repeat"
        boxes = []
        for panel in panels(dash):
            g = panel["gridPos"]
            assert g["x"] >= 0 and g["w"] >= 1 and g["x"] + g["w"] <= 24, panel["title"]
            boxes.append((g["x"], g["y"], g["w"], g["h"], panel["title"]))
            if panel["type"] == "row":
                continue
            assert panel["targets"], panel["title"]
            refs = {t["refId"] for t in panel["targets"]}
            assert len(refs) == len(panel["targets"]), panel["title"]
            for source in [panel["datasource"], *(t["datasource"] for t in panel["targets"])]:
                assert source["type"] == "prometheus"
                uid = source["uid"]
                assert not uid.startswith("$") or uid[1:].strip("{}") in variables
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                overlap = a[0] < b[0] + b[2] and b[0] < a[0] + a[2]
                overlap = overlap and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]
                assert not overlap, f"{path.name}: {a[4]!r} overlaps {b[4]!r}"


def test_grafana_provisioning_points_at_the_dashboards() -> None:
    (provider,) = load_yaml_docs(GRAFANA_PROVISIONING / "dashboards" / "adr-stream.yml")[0][
        "providers"
    ]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"
    (source,) = load_yaml_docs(GRAFANA_PROVISIONING / "datasources" / "prometheus.yml")[0][
        "datasources"
    ]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_accepts_the_rules_and_the_config(tmp_path: Path) -> None:
    """Prometheus' own checker too (scripts/test fetches promtool where apt-get can)."""
    rules = tmp_path / "rules.yml"
    shutil.copy(RULES_FILE, rules)
    config = tmp_path / "prometheus.yml"
    config.write_text(
        PROMETHEUS_CONFIG.read_text().replace("/etc/prometheus/rules.yml", str(rules))
    )
    for argv in (["check", "config", str(config)], ["test", "rules", str(RULES_TEST)]):
        done = subprocess.run(["promtool", *argv], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
