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
