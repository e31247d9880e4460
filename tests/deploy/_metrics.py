"""What the code defines and what the ops files query: metric names and labels, found statically.

`defined_metrics` reads the prometheus-client constructors (Counter, Gauge, Histogram, Summary)
in the source with `ast`, so no module is imported and no registry is touched. `promql_refs`
parses PromQL with promql-parser and returns the metric names and grouping labels it uses.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import promql_parser

REPO = Path(__file__).resolve().parents[2]
METRIC_PACKAGES = ("consumer", "tierjob")
_KINDS = {"Counter", "Gauge", "Histogram", "Summary"}
# Labels Prometheus itself attaches to every scraped series, and those the scrape configs add
# (deploy/k8s/base/podmonitor.yaml, deploy/prometheus/prometheus.yml): the rating pool and,
# for consumers, the consumer group.
TARGET_LABELS = frozenset(
    {"instance", "job", "pod", "namespace", "container", "service", "pool", "group"}
)


@dataclass
class Metric:
    name: str  # as passed to the constructor (a Counter's without `_total`)
    kind: str
    labels: tuple[str, ...]
    where: str

    def exposed(self) -> set[str]:
        """Series names this metric shows on /metrics (prometheus-client's suffix rules)."""
        if self.kind == "Counter":
            return {f"{self.name}_total", f"{self.name}_created"}
        if self.kind == "Histogram":
            return {f"{self.name}_{s}" for s in ("bucket", "sum", "count", "created")}
        if self.kind == "Summary":
            return {self.name, *(f"{self.name}_{s}" for s in ("sum", "count", "created"))}
        return {self.name}

    def label_set(self) -> set[str]:
        return set(self.labels) | ({"le"} if self.kind == "Histogram" else set())


@dataclass
class Definitions:
    metrics: list[Metric] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)  # constructor calls we could not read

    def by_exposed_name(self) -> dict[str, Metric]:
        return {n: m for m in self.metrics for n in m.exposed()}


def _const_str(node: ast.AST | None, consts: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    return None


def _const_strs(node: ast.AST | None, consts: dict[str, str]) -> tuple[str, ...] | None:
    if node is None:
        return ()
    if isinstance(node, ast.List | ast.Tuple):
        items = [_const_str(e, consts) for e in node.elts]
        return None if any(i is None for i in items) else tuple(i for i in items if i)
    one = _const_str(node, consts)
    return None if one is None else (one,)


def _prometheus_names(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """(local name -> metric kind imported from prometheus_client, aliases of the module)."""
    kinds: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prometheus_client"):
            kinds |= {a.asname or a.name: a.name for a in node.names if a.name in _KINDS}
        elif isinstance(node, ast.Import):
            modules |= {
                a.asname or a.name for a in node.names if a.name.startswith("prometheus_client")
            }
    return kinds, modules


def _kind(call: ast.Call, kinds: dict[str, str], modules: set[str]) -> str | None:
    """The prometheus-client metric class `call` constructs, if it constructs one."""
    f = call.func
    if isinstance(f, ast.Name):
        return kinds.get(f.id)
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
        return f.attr if f.attr in _KINDS else None
    return None


def defined_in_source(source: str, where: str) -> Definitions:
    """Metrics constructed in one module's source."""
    tree = ast.parse(source)
    consts = {
        t.id: n.value.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign | ast.AnnAssign)
        and isinstance(getattr(n, "value", None), ast.Constant)
        and isinstance(n.value.value, str)
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Name)
    }
    kinds, modules = _prometheus_names(tree)
    out = Definitions()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and (kind := _kind(node, kinds, modules))):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        name = _const_str(node.args[0] if node.args else kw.get("name"), consts)
        labels = _const_strs(node.args[2] if len(node.args) > 2 else kw.get("labelnames"), consts)
        parts = (kw.get("namespace"), kw.get("subsystem"))
        prefix = [p for p in (_const_str(part, consts) for part in parts) if p]
        if name is None or labels is None:
            out.unresolved.append(f"{where}:{node.lineno}")
            continue
        full = "_".join([*prefix, name])
        if kind == "Counter" and full.endswith("_total"):
            full = full[: -len("_total")]
        out.metrics.append(Metric(full, kind, labels, f"{where}:{node.lineno}"))
    return out


def defined_metrics(packages: tuple[str, ...] = METRIC_PACKAGES) -> Definitions:
    """Every metric the named packages construct."""
    out = Definitions()
    for pkg in packages:
        for path in sorted((REPO / pkg).rglob("*.py")):
            d = defined_in_source(path.read_text(), str(path.relative_to(REPO)))
            out.metrics += d.metrics
            out.unresolved += d.unresolved
    return out


@dataclass
class Refs:
    metrics: set[str] = field(default_factory=set)
    # (labels grouped by, metric names under that aggregation); () for `without` or none
    groupings: list[tuple[tuple[str, ...], frozenset[str]]] = field(default_factory=list)


_WRAPPERS = (promql_parser.ParenExpr, promql_parser.UnaryExpr, promql_parser.SubqueryExpr)


def _walk(node: object, refs: Refs) -> set[str]:
    """Collect metric names under `node`; returns the names found in this subtree."""
    if isinstance(node, promql_parser.VectorSelector):
        names = {node.name} if node.name else set()
        refs.metrics |= names
        return names
    if isinstance(node, promql_parser.MatrixSelector):
        return _walk(node.vector_selector, refs)
    if isinstance(node, promql_parser.AggregateExpr):
        names = _walk(node.expr, refs)
        if node.param is not None:
            _walk(node.param, refs)
        by = node.modifier is not None and node.modifier.type == promql_parser.AggModifierType.By
        labels = tuple(node.modifier.labels) if by and node.modifier is not None else ()
        refs.groupings.append((labels, frozenset(names)))
        return names
    if isinstance(node, promql_parser.BinaryExpr):
        return _walk(node.lhs, refs) | _walk(node.rhs, refs)
    if isinstance(node, promql_parser.Call):
        names: set[str] = set()
        for arg in node.args:
            names |= _walk(arg, refs)
        return names
    if isinstance(node, _WRAPPERS):
        return _walk(node.expr, refs)
    if isinstance(node, promql_parser.NumberLiteral | promql_parser.StringLiteral):
        return set()
    raise TypeError(f"unhandled PromQL node {type(node).__name__}")


GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "1m", "$__range": "1h"}


def promql_refs(expr: str) -> Refs:
    """Metric names and `by` groupings in one PromQL expression (Grafana variables allowed)."""
    for var, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(var, value)
    refs = Refs()
    _walk(promql_parser.parse(expr), refs)
    return refs


def problems(expr: str, defs: Definitions) -> list[str]:
    """Why `expr` would not work against the code's metrics; empty when it would."""
    known = defs.by_exposed_name()
    refs = promql_refs(expr)
    out = [f"metric {m!r} is not defined by the code" for m in sorted(refs.metrics - known.keys())]
    for labels, names in refs.groupings:
        have = set().union(*(known[n].label_set() for n in names if n in known)) | TARGET_LABELS
        missing = [lb for lb in labels if lb not in have]
        out += [f"label {lb!r} is not a label of {sorted(names)}" for lb in missing]
    return out
