"""gemmconf report csv: one row per record, fields flattened; bad input exits 2."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from test_report_page import sample_document

from gemmconf.report.cli import CSV_COLUMNS, main


def test_csv_has_a_row_per_record(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    document = sample_document()
    document["records"][0]["metrics"].update(max_ratio=3.0, draws=3, draws_failed=0)
    source = tmp_path / "results.json"
    source.write_text(json.dumps(document))
    assert main(["csv", str(source)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == len(document["records"]) and tuple(rows[0]) == CSV_COLUMNS
    first = document["records"][0]
    row = next(r for r in rows if r["id"] == first["id"] and r["backend"] == first["backend"])
    assert row["outcome"] == first["outcome"] and row["markers"] == ";".join(first["markers"])
    assert row["axes"] == ";".join(f"{k}={v}" for k, v in first["axes"].items())
    assert float(row["err_ratio"]) == first["metrics"]["err_ratio"]
    assert CSV_COLUMNS[-6:] == (  # added last
        "max_ratio",
        "draws",
        "draws_failed",
        "computed_by",
        "inherited",
        "host_memory_peak_bytes",
    )
    assert (row["max_ratio"], row["draws"], row["draws_failed"]) == ("3.0", "3", "0")
    out = tmp_path / "out.csv"
    assert main(["csv", str(source), "-o", str(out)]) == 0
    assert f"wrote {len(rows)} rows to {out}" in capsys.readouterr().out
    assert len(out.read_text().splitlines()) == len(rows) + 1


def test_csv_of_a_bad_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = tmp_path / "x.json"
    source.write_text('{"tests": []}')
    assert main(["csv", str(source)]) == 2
    assert "not a gemmconf results file" in capsys.readouterr().err
