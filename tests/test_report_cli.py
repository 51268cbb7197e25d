"""gemmconf report html: writes the page; bad input exits 2 with the file named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_report_page import sample_document

from gemmconf.report.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_html_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = tmp_path / "results.json"
    source.write_text(json.dumps(sample_document()))
    out = tmp_path / "out" / "page.html"
    assert main(["html", str(source), "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert '<table id="matrix">' in out.read_text()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"format": "gemmconf-results", "version": 1, "records": [', "not JSON (truncated?)"),
        ('{"tests": []}', "not a gemmconf results file"),
        ('{"format": "gemmconf-results", "version": 0, "records": []}', "results version 0"),
    ],
)
def test_html_rejects_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: str, message: str
) -> None:
    source = tmp_path / "input.json"
    source.write_text(content)
    assert main(["html", str(source), "-o", str(tmp_path / "p.html")]) == 2
    err = capsys.readouterr().err
    assert f"{source}: {message}" in err and err.startswith("gemmconf report html: error:")
    assert not (tmp_path / "p.html").exists()


def test_module_runs_alone(tmp_path: Path) -> None:
    source = tmp_path / "r.json"
    source.write_text(json.dumps(sample_document()))
    done = subprocess.run(
        [sys.executable, "-m", "gemmconf.report.cli", "diff", str(source), str(source)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "0 regression(s)" in done.stdout


def test_groups_prints_every_group_of_a_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """An outside author's trial (2026-11-30): the run's end shows 8 groups, and nothing printed
    the rest."""
    document = sample_document()
    reason = "Backend raised during the call: RuntimeError: cause {}"
    for n in range(10):  # ten causes, two items each, beside the sample's own failures
        for item in range(2):
            record = {
                "id": f"s/mm[c{n}-{item}]",
                "nodeid": f"suites/s.yaml::mm[c{n}-{item}@b]",
                "backend": "b",
                "outcome": "failed",
                "kind": "crash",
                "reason": reason.format(chr(ord("a") + n)),
            }
            document["records"].append(record)
    source = tmp_path / "results.json"
    source.write_text(json.dumps(document))
    assert main(["groups", str(source)]) == 0
    out = capsys.readouterr().out
    assert "more group(s)" not in out
    titles = [line for line in out.splitlines() if "failures (crash)" in line and "b: " in line]
    assert len(titles) == 10
    assert main(["groups", str(source), "--limit", "3"]) == 0
    assert "more group(s)" in capsys.readouterr().out
    assert main(["groups", str(source), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sum(1 for g in listed if g["backend"] == "b") == 10
    assert all(g["repro"].startswith("gemmconf repro ") for g in listed if g["backend"] == "b")
