"""gemmconf report diff: an injected regression is flagged and exits 1; progressions show."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from test_report_page import ENV, record, sample_document

from gemmconf.report import diff
from gemmconf.report.cli import main


def find(doc: dict, backend: str, outcome: str) -> dict:
    return next(r for r in doc["records"] if r["backend"] == backend and r["outcome"] == outcome)


def write(tmp_path: Path, name: str, doc: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("new_outcome", ["failed", "error", "xpassed"])
def test_injected_regression_is_flagged_and_exits_1(
    tmp_path: Path, new_outcome: str, capsys: pytest.CaptureFixture
) -> None:
    old = sample_document()
    new = copy.deepcopy(old)
    victim = find(new, "eager", "passed")
    victim["outcome"], victim["reason"] = new_outcome, "err_ratio 9.1 > 3.0 allowed"
    code = main(
        ["diff", str(write(tmp_path, "old.json", old)), str(write(tmp_path, "new.json", new))]
    )
    out = capsys.readouterr().out
    assert code == 1
    regressions = out.split("REGRESSIONS (1)")[1].split("PROGRESSIONS")[0]
    assert victim["id"] in regressions and f"passed  {new_outcome}" in regressions
    assert "err_ratio 9.1 > 3.0 allowed" in regressions
    assert "1 regression(s), 0 progression(s)" in out


def test_progression_is_reported_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    old = sample_document()
    new = copy.deepcopy(old)
    fixed = find(new, "planted", "failed")
    fixed["outcome"] = "passed"
    del fixed["reason"]
    code = main(
        [
            "diff",
            str(write(tmp_path, "old.json", old)),
            str(write(tmp_path, "new.json", new)),
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["regressions"] == []
    assert [(c["id"], c["backend"], c["old"], c["new"]) for c in report["progressions"]] == [
        (fixed["id"], "planted", "failed", "passed")
    ]
    assert report["unchanged"] == len(old["records"]) - 1


def test_newly_failing_item_is_a_regression_new_passing_item_is_not() -> None:
    old = sample_document()
    new = copy.deepcopy(old)
    new["records"].append(
        record(
            "dense", "mm", "mm", "fp16", {"M": 3, "N": 5, "K": 7}, "eager", "failed", reason="boom"
        )
    )
    new["records"].append(
        record("dense", "mm", "mm", "fp16", {"M": 3, "N": 5, "K": 9}, "eager", "passed")
    )
    result = diff.diff(old, new)
    assert [(c.id, c.old, c.new) for c in result.regressions] == [
        ("dense/mm[fp16-3x5x7]", None, "failed")
    ]
    assert result.added == 1 and result.removed == 0
    assert "absent  failed" in "\n".join(diff.render(result))


def test_other_changes_do_not_fail_the_diff() -> None:
    old = sample_document()
    new = copy.deepcopy(old)
    find(new, "eager", "passed")["outcome"] = "skipped"  # coverage lost: shown, not a regression
    find(new, "planted", "failed")["outcome"] = "xfailed"  # an expectation was added
    find(new, "planted", "error")["outcome"] = "failed"  # still failing
    result = diff.diff(old, new)
    assert result.regressions == [] and result.progressions == []
    assert sorted((c.old, c.new) for c in result.other) == [
        ("error", "failed"),
        ("failed", "xfailed"),
        ("passed", "skipped"),
    ]


def test_classify_table() -> None:
    assert diff.classify("passed", "failed") == "regression"
    assert diff.classify("xfailed", "xpassed") == "regression"
    assert diff.classify("skipped", "error") == "regression"
    assert diff.classify(None, "error") == "regression"
    assert diff.classify("failed", "passed") == "progression"
    assert diff.classify("xpassed", "passed") == "progression"
    assert diff.classify("failed", "error") == "other"
    assert diff.classify("passed", None) is None
    assert diff.classify("passed", "passed") is None


def test_items_on_several_devices_are_matched_per_device() -> None:
    old = sample_document()
    gpu = dict(ENV, device_name="NVIDIA H100")
    extra = copy.deepcopy(find(old, "eager", "passed"))
    extra["environment"] = gpu
    old["records"].append(extra)
    new = copy.deepcopy(old)
    new["records"][-1]["outcome"] = "failed"  # only the H100 record regressed
    result = diff.diff(old, new)
    assert result.by_device
    assert [(c.id, c.device) for c in result.regressions] == [(extra["id"], "NVIDIA H100")]
    assert "device" in diff.render(result)[0]


def test_notes_on_suite_version_and_incomplete_runs() -> None:
    old = sample_document()
    new = dict(copy.deepcopy(old), suite_version="zzz", complete=False)
    notes = " ".join(diff.diff(old, new).notes)
    assert "different suite versions" in notes and "incomplete run" in notes


def test_bad_file_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    good = write(tmp_path, "old.json", sample_document())
    other = tmp_path / "report.html"
    other.write_text("<html></html>")
    assert main(["diff", str(good), str(other)]) == 2
    err = capsys.readouterr().err
    assert "report.html: not JSON" in err
    assert main(["diff", str(good), str(tmp_path / "missing.json")]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err
