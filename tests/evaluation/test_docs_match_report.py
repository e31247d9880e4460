"""The prose quotes the committed reports: every `mean [lo, hi]` figure in docs/evaluation.md and
in the README's evaluation section appears verbatim in reports/latest/report.md or (the opt-in
extensions) reports/extensions, reports/six-years, reports/logistic-link, (issue 29)
reports/generalize, generalize-tuning, generalize-trueskill and generalize-ablation, (issue 28,
every engine model) reports/models, or (`adr evaluate --events` on the committed sample log)
reports/sample-events (report.md)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURE = re.compile(r"-?\d[\d.,]*%? \[-?\d[\d.,]*%?, -?\d[\d.,]*%?\]")


def _readme_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## What the evaluation found")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_every_interval_quoted_in_the_docs_is_in_the_report() -> None:
    names = (
        "latest",
        "extensions",
        "six-years",
        "logistic-link",
        "generalize",
        "generalize-tuning",
        "generalize-trueskill",
        "generalize-ablation",
        "sample-events",
        "models",
    )
    report = "\n".join((ROOT / "reports" / n / "report.md").read_text() for n in names)
    docs = (ROOT / "docs" / "evaluation.md").read_text()
    quoted = FIGURE.findall(docs) + FIGURE.findall(_readme_section())
    assert len(quoted) >= 10  # the prose states its claims with their intervals
    missing = sorted({q for q in quoted if q not in report})
    assert not missing, f"not in any committed report.md: {missing}"


def test_the_docs_name_the_seeds_of_the_report() -> None:
    report = (ROOT / "reports" / "latest" / "report.md").read_text()
    seeds = re.search(r"\*\*Seeds\*\*: ([\d, ]+) \(", report)
    assert seeds is not None
    docs = (ROOT / "docs" / "evaluation.md").read_text()
    assert seeds.group(1) in docs
