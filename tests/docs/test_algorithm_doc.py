"""docs/algorithm.md, the algorithm's specification, agrees with the engine it describes.

- Its parameter tables (§9) list exactly `engine.Params`' fields, with the defaults the code has.
- Every paper section the engine cites (`§4.3`, `§8.2–8.3`, in a comment or a docstring) has a
  heading `§N.M …` and an anchor `sN-M` in it.
- Every anchor of algorithm.md that a file links to exists, and the three entry pages link to it.
- `--profile recommended`'s overrides are the ones it names, and every opt-in switch is described.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest

from engine import PROFILES, Params
from engine.params import INT_FIELDS

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "algorithm.md"

_CITATION = re.compile(r"§(\d+(?:\.\d+)?)(?:\s*[–-]\s*§?(\d+(?:\.\d+)?))?")
_ANCHOR = re.compile(r'<a id="([\w-]+)"></a>')
_HEADING = re.compile(r"^#{2,4} §(\d+(?:\.\d+)?) \S", re.MULTILINE)
_ROW = re.compile(r"^\| `(\w+)` \|(.*)\|\s*$")
_SHARES = re.compile(r"^(\d+) × (\d+/\d+)$")


def _doc() -> str:
    return DOC.read_text()


def _section(text: str, anchor: str) -> str:
    """The text from `<a id="anchor">` to the next level-2 heading after its own."""
    start = text.index(f'<a id="{anchor}"></a>')
    heading = text.index("\n## ", start)
    end = text.find("\n## ", heading + 1)
    return text[start : end if end != -1 else len(text)]


def parameter_rows(text: str) -> dict[str, list[str]]:
    """name -> the table cells after it, for every `| \\`name\\` | … |` row of §9."""
    rows: dict[str, list[str]] = {}
    for line in _section(text, "s9").splitlines():
        m = _ROW.match(line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} is listed twice"
            rows[m.group(1)] = [c.strip() for c in re.split(r"(?<!\\)\|", m.group(2))]
    return rows


def parse_default(name: str, cell: str) -> object:
    """A default as the table writes it: `1000`, `0.15`, `-60`, `15 × 1/15`."""
    cell = cell.replace("−", "-")
    if name == "tier_shares":
        m = _SHARES.match(cell)
        assert m, f"tier_shares default {cell!r} is not 'N × a/b'"
        return (Fraction(m.group(2)),) * int(m.group(1))
    return int(cell) if name in INT_FIELDS else float(cell)


def cited_sections(text: str) -> set[str]:
    """Every section number a text cites, both ends of a range `§8.2–8.3` included."""
    return {s for m in _CITATION.finditer(text) for s in m.groups() if s}


def _engine_citations() -> dict[str, list[str]]:
    """section -> the engine files citing it (all of engine/*.py: comments and docstrings)."""
    cited: dict[str, list[str]] = {}
    for path in sorted((REPO / "engine").glob("*.py")):
        for section in cited_sections(path.read_text()):
            cited.setdefault(section, []).append(path.name)
    return cited


def test_the_parameter_table_lists_exactly_params_fields() -> None:
    assert sorted(parameter_rows(_doc())) == sorted(Params.names())


@pytest.mark.parametrize("name", Params.names())
def test_each_documented_default_is_the_codes(name: str) -> None:
    row = parameter_rows(_doc()).get(name)
    assert row is not None, f"{name} is missing from docs/algorithm.md §9"
    _symbol, default, unit, meaning = row
    assert unit and meaning, f"{name}: give its unit and meaning"
    value = getattr(Params(), name)
    documented = parse_default(name, default)
    assert documented == value and type(documented) is type(value), (name, default, value)


def test_the_parser_reads_what_the_table_writes() -> None:
    assert parse_default("nu_min", "−60") == -60.0
    assert parse_default("window", "20") == 20 and isinstance(parse_default("window", "20"), int)
    assert parse_default("tier_shares", "3 × 1/3") == (Fraction(1, 3),) * 3
    assert cited_sections("(§8.2–8.3), §4.1 and §5") == {"8.2", "8.3", "4.1", "5"}


def test_the_engine_cites_sections() -> None:
    # The check below is only as good as this scan: the engine cites at least these.
    assert {"2.1", "3.2", "4.3", "5", "6.3", "8.4"} <= set(_engine_citations())


@pytest.mark.parametrize("section", sorted(_engine_citations()))
def test_every_cited_section_has_a_heading_and_an_anchor(section: str) -> None:
    text = _doc()
    headings = set(_HEADING.findall(text))
    anchors = set(_ANCHOR.findall(text))
    where = ", ".join(_engine_citations()[section])
    assert section in headings, f"§{section} (cited in {where}) has no '## §{section} …' heading"
    assert "s" + section.replace(".", "-") in anchors, f"§{section} has no anchor"


def test_every_heading_of_a_section_has_its_anchor_just_above() -> None:
    lines = _doc().splitlines()
    for i, line in enumerate(lines):
        m = _HEADING.match(line)
        if m:
            anchor = f'<a id="s{m.group(1).replace(".", "-")}"></a>'
            assert lines[i - 1] == anchor, f"line {i + 1}: {line!r} needs {anchor} above it"


def test_every_link_to_an_anchor_of_the_page_exists() -> None:
    anchors = set(_ANCHOR.findall(_doc()))
    missing = [a for a in re.findall(r"\]\(#([\w-]+)\)", _doc()) if a not in anchors]
    for path in [*REPO.glob("**/*.py"), *REPO.glob("**/*.md")]:
        parts = path.relative_to(REPO).parts
        if any(p.startswith(".") or p in {"node_modules", "build", "dist"} for p in parts):
            continue
        refs = re.findall(r"algorithm\.md#([\w-]+)", path.read_text(errors="replace"))
        missing += [f"{path.relative_to(REPO)}: #{a}" for a in refs if a not in anchors]
    assert missing == []


@pytest.mark.parametrize("page", ["README.md", "docs/README.md", "docs/design.md"])
def test_the_entry_pages_link_the_algorithm(page: str) -> None:
    target = "docs/algorithm.md" if page == "README.md" else "algorithm.md"
    assert f"]({target}" in (REPO / page).read_text()


def test_the_recommended_profile_is_documented_value_for_value() -> None:
    text = " ".join(_section(_doc(), "extensions").split())
    for name, value in PROFILES["recommended"].items():
        assert f"{name}={value}" in text, f"--profile recommended sets {name}={value}"


def test_every_opt_in_switch_is_off_by_default_and_described() -> None:
    extensions = _section(_doc(), "extensions")
    rows = parameter_rows(_doc())
    table = _section(_doc(), "s9").split("The opt-in extensions", 1)[1]
    switches = [name for name in rows if f"| `{name}` |" in table]
    assert switches, "§9 has no table of opt-in switches"
    defaults = Params()
    for name in switches:
        assert getattr(defaults, name) == 0, f"{name} is not off by default"
        assert f"**`{name} = " in extensions, f"{name} is not described under the extensions"
