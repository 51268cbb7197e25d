"""suites/README.md's tables against the one schema (harness/scenario/schema.py,
gemmconf.gemm): a field, op, layout, value kind or epilogue step added to one and not the other
fails here, so the user's reference cannot drift from what the loader accepts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gemmconf import scenario
from gemmconf.gemm.ops import OPS

README = Path(__file__).resolve().parents[1] / "suites" / "README.md"
NAME = re.compile(r"`\{?([a-z_0-9]+)")


def first_column_names(heading: str) -> set[str]:
    """The backticked names in the first column of the first table under `heading`."""
    lines = README.read_text(encoding="utf-8").split(heading, 1)[1].splitlines()[1:]
    rows: list[str] = []
    for line in lines:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return {name for row in rows[2:] for name in NAME.findall(row.split("|")[1])}


# Fields explained in sections of their own rather than in the field table.
OWN_SECTIONS = {"axes": "## Axes", "exclude": "## Axes"}

TABLES = [
    ("## Scenario fields", set(scenario.SCENARIO_FIELDS) - set(OWN_SECTIONS)),
    ("### Ops and their operands", set(OPS)),
    ("## Layouts", {layout.rstrip("+") for layout in scenario.LAYOUTS}),
    ("## Value kinds", set(scenario.VALUE_KINDS)),
    ("## Epilogues", set(scenario.UNARY_EPILOGUES) | set(scenario.PARAM_EPILOGUES)),
]


@pytest.mark.parametrize(("heading", "schema"), TABLES, ids=[t[0].strip("# ") for t in TABLES])
def test_readme_table_matches_the_schema(heading, schema):
    documented = first_column_names(heading)
    assert schema - documented == set(), f"in the schema but not in suites/README {heading}"
    assert documented - schema == set(), f"in suites/README {heading} but not in the schema"


def test_fields_with_sections_of_their_own_are_documented_there():
    text = README.read_text(encoding="utf-8")
    for field, heading in OWN_SECTIONS.items():
        section = text.split(heading, 1)[1].split("\n## ", 1)[0]
        assert f"`{field}" in section or f"{field}:" in section, (field, heading)
