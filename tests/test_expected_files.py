"""make test runs eager on the suite files its expectations file names (tools/expected_files.py):
those files hold every item an entry matches, by id pattern or by field, and no other file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("expected_files", REPO / "tools/expected_files.py")
expected_files = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(expected_files)

SUITE = """\
suite: {name}
scenarios:
  - name: mm
    op: mm
    dtype: fp32
    shape: {{M: 8, N: 8, K: 8}}
"""


def test_the_files_hold_what_the_entries_match_and_nothing_else(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / "suites" / name).mkdir(parents=True)
        (tmp_path / "suites" / name / f"{name}.yaml").write_text(SUITE.format(name=name))
    listed = tmp_path / "eager.yaml"
    listed.write_text(
        "backend: eager\nexpectations:\n"
        "  - {match: 'a/mm', status: xfail, reason: by id}\n"
        "  - {match: {suite: c}, status: skip, reason: by field}\n"
    )
    found = expected_files.expected_files(listed, tmp_path / "suites")
    assert [Path(f).name for f in found] == ["a.yaml", "c.yaml"]


def test_eagers_own_file_names_the_suites_it_fails_on_a_cpu():
    found = expected_files.expected_files(REPO / "suites/expectations/eager.yaml", REPO / "suites")
    assert "suites/integrity/integrity.yaml" in [str(Path(f)) for f in found]
    assert not [f for f in found if f.endswith("dense/first.yaml")]
