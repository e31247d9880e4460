"""The consumer's capacity is quoted in three places besides docs/benchmarks.md (the KEDA
ScaledObject's comment, the Deployment's resources comment, docs/operations.md): each quote is
the one docs/benchmarks.md's latest consumer-bench runs give, so a new bench run that moves the
figures fails here until every quote follows."""

from __future__ import annotations

import math
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_DASH = "[–-]"


def _latest_runs() -> list[list[str]]:
    """The rows of the consumer-bench table for its newest commit's runs ("<hash>, run N")."""
    text = (REPO / "docs" / "benchmarks.md").read_text()
    section = text.split("## Consumer throughput and latency", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if re.match(r"^\| \d{4}-\d\d-\d\d \|", line)
    ]
    newest = rows[0][1].split(",")[0]
    runs = [row for row in rows if re.fullmatch(rf"{newest}, run \d+", row[1])]
    assert len(runs) >= 2, rows[0]
    return runs


def _figures() -> dict[str, str]:
    runs = _latest_runs()
    sustained = [int(row[2].replace(",", "")) for row in runs]
    cpu = [float(row[5].split()[0]) for row in runs]  # "37.5 (19.2)": consumer µs (of it rating)
    per_500m = [500_000 / us for us in cpu]  # 0.5 CPU-seconds per second
    return {
        # Rounded outward to thousands, as the docs say "about".
        "sustained": f"{math.floor(min(sustained) / 1000) * 1000:,}"
        f"{_DASH}{math.ceil(max(sustained) / 1000) * 1000:,}",
        "cpu": f"{min(cpu):.1f}{_DASH}{max(cpu):.1f}",
        # Rounded down to hundreds: what a 500m request surely carries.
        "per_500m": f"{math.floor(min(per_500m) / 100) * 100:,}"
        f"{_DASH}{math.floor(max(per_500m) / 100) * 100:,}",
    }


def _has(path: str, pattern: str) -> bool:
    text = " ".join((REPO / path).read_text().replace("#", " ").split())
    return re.search(pattern, text) is not None


def test_the_keda_comment_quotes_the_benchmarks() -> None:
    f = _figures()
    where = "deploy/k8s/base/consumer-scaledobject.yaml"
    assert _has(where, f"{f['per_500m']} events/s"), f
    assert _has(where, f"{f['cpu']} us of CPU per event"), f
    assert _has(where, f"{f['sustained']} events/s"), f


def test_the_deployments_resources_comment_quotes_the_benchmarks() -> None:
    f = _figures()
    where = "deploy/k8s/base/consumer-deployment.yaml"
    assert _has(where, f"CPU {f['cpu']} µs per event"), f
    assert _has(where, f"500m carries about {f['per_500m']} events/s"), f


def test_operations_md_quotes_the_benchmarks_everywhere() -> None:
    f = _figures()
    where = "docs/operations.md"
    assert _has(where, f"spends {f['cpu']} µs of its own CPU per event"), f
    assert _has(where, f"carries about {f['per_500m']} events/s per replica"), f
    text = " ".join((REPO / where).read_text().split())
    quoted = set(re.findall(r"sustains about ([\d,]+[–-][\d,]+) events/s", text))
    assert quoted and all(re.fullmatch(f["sustained"], q) for q in quoted), (quoted, f)
