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


def test_a_wrong_values_reason_shows_its_err_ratio_in_the_table() -> None:
    """The reason column is cut to the width: "Tensor-likes are not close! err_r..." hid the
    err_ratio (an outside-user trial). The table leaves the comparison's preamble out."""
    old = sample_document()
    new = copy.deepcopy(old)
    victim = find(new, "eager", "passed")
    victim["outcome"] = "failed"
    victim["reason"] = "Tensor-likes are not close! err_ratio 7.153e+05 > 3.0 allowed (fp32, K=33)"
    victim["id"] = victim["id"] + "-" * 60  # a long id: little room is left for the reason
    old_victim = find(old, "eager", "passed")
    old_victim["id"] = victim["id"]
    line = next(x for x in diff.render(diff.diff(old, new), width=120) if victim["id"] in x)
    assert "err_ratio 7.153e+05" in line and "Tensor-likes" not in line


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
    assert report["progressions"][0]["computed_by"] is None
    # a fix that is a fallback to aten says so (a torchao trial: 49 progressions, all PyTorch's)
    fixed["computed_by"] = "pytorch"
    text = "\n".join(diff.render(diff.diff(old, new)))
    row = next(line for line in text.splitlines() if fixed["id"] in line)
    assert "failed  passed (PyTorch)" in row
    # and a regression from such a pass (a gemlite trial: 12 of its 14 regressions)
    backwards = diff.diff(new, old)
    assert [c.old_computed_by for c in backwards.regressions] == ["pytorch"]
    row = next(r for r in diff.render(backwards) if fixed["id"] in r)
    assert "passed (PyTorch)  failed" in row
    assert "1 of the 1 regression(s) were passes PyTorch computed" in "\n".join(backwards.notes)


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


def test_removed_items_are_named_not_compared() -> None:
    """A CI trial (2026-11-26): a narrower new run diffed clean with a bare '38 removed'. The
    removed items still do not fail the diff (a shard or a selection is no regression), but a
    note names them and --json lists every one."""
    old = sample_document()
    new = copy.deepcopy(old)
    gone = new["records"].pop()
    result = diff.diff(old, new)
    assert result.removed == 1 and not result.regressions
    label = f"{gone['id']}@{gone['backend']}"
    assert result.removed_ids == [label] and result.as_json()["removed_ids"] == [label]
    (note,) = [n for n in result.notes if "not in" in n]
    assert note.endswith(f"so their verdicts were not compared: {label}")
    assert f"note: {note}" in diff.render(result)


def test_runs_of_different_seeds_are_said_to_be_so() -> None:
    """A seed-stability trial diffed a seed-0 run against a seed-1 run: the draws' changes near
    the tolerance read as regressions, with no word that the seeds differed."""
    old = sample_document()
    new = copy.deepcopy(old)
    assert not [n for n in diff.diff(old, new).notes if "seeds" in n]
    old["seed"], new["seed"] = 0, 1
    (note,) = [n for n in diff.diff(old, new).notes if "seeds" in n]
    assert note.startswith("the runs drew their inputs with different seeds (0 -> 1)")
    merged = copy.deepcopy(old)  # a merge of seed-0 and seed-1 runs: its records keep theirs
    merged["seed"] = None
    for i, r in enumerate(merged["records"]):
        r["seed"] = i % 2
    (note,) = [n for n in diff.diff(merged, old).notes if "seeds" in n]
    assert note.startswith("the runs drew their inputs with different seeds (0, 1 -> 0)")


def test_the_passes_nearest_their_bar_are_listed_with_both_runs_ratios(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A seed-stability trial scripted this itself: which passes came near failing, in either
    run. Of the passes whose error exceeded eager's own (err_ratio > 1), nearest first as a
    share of each item's bar; files without the bar read '?'; at eager's error, none is listed."""
    old = sample_document()
    new = copy.deepcopy(old)
    passed = [
        (a, b)
        for a, b in zip(old["records"], new["records"], strict=True)
        if a["outcome"] == "passed" and (a.get("metrics") or {}).get("err_ratio") is not None
    ]
    assert len(passed) >= 4
    at_eager = diff.diff(old, copy.deepcopy(old))  # every ratio 1.0: as close as eager itself
    assert at_eager.closest == [] and at_eager.judged == len(passed)
    assert "CLOSEST PASSES: none of the" in "\n".join(diff.render(at_eager))
    unbarred_old = copy.deepcopy(old)  # files from before metrics.max_ratio
    unbarred_old["records"][old["records"].index(passed[3][0])]["metrics"]["err_ratio"] = 1.2
    unbarred = diff.diff(unbarred_old, copy.deepcopy(old))
    assert [(c.old, c.new, c.max_ratio) for c in unbarred.closest] == [(1.2, 1.0, None)]
    assert "1.20  1.00  ?" in "\n".join(diff.render(unbarred))
    (near_old, near_new), (halfway, _), (custom, custom_new) = passed[:3]
    for _, b in passed:
        b["metrics"]["max_ratio"] = 3.0
    near_old["metrics"]["err_ratio"], near_new["metrics"]["err_ratio"] = 2.9, 0.5
    halfway["metrics"]["err_ratio"] = 1.5
    custom["metrics"]["err_ratio"], custom_new["metrics"]["max_ratio"] = 3.5, 4.0
    result = diff.diff(old, new)
    assert result.judged == len(passed)
    assert [(c.id, c.max_ratio) for c in result.closest] == [
        (near_old["id"], 3.0),
        (custom["id"], 4.0),
        (halfway["id"], 3.0),
    ]
    assert len(result.closest) <= diff.CLOSEST_SHOWN
    text = "\n".join(diff.render(result))
    assert f"of the {len(passed)} judged items that passed in both runs, the 3 nearest" in text
    row = next(line for line in text.splitlines() if near_old["id"] in line)
    assert row.split()[-3:] == ["2.90", "0.50", "3.00"]
    assert "borderline pass" not in text  # every ratio under its bar
    near_new["metrics"]["err_ratio"] = 3.3  # over the bar, and passed: borderline
    assert "(an err_ratio above its bar is a borderline pass" in "\n".join(
        diff.render(diff.diff(old, new))
    )
    near_new["metrics"]["err_ratio"] = 0.5
    assert (
        main(
            [
                "diff",
                str(write(tmp_path, "a.json", old)),
                str(write(tmp_path, "b.json", new)),
                "--json",
            ]
        )
        == 0
    )
    listed = json.loads(capsys.readouterr().out)["closest_passes"]
    assert listed[0] == {
        "id": near_old["id"], "backend": near_old["backend"], "device": None,
        "old": 2.9, "new": 0.5, "max_ratio": 3.0,
    }  # fmt: skip


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


def test_runs_under_different_expectations_compare_their_own_results_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A torchao trial: a fix that also wrote an expectations file read "3 regression(s), 0
    progression(s), 668 other change(s)"; its 51 fixes were "failed -> xpassed (strict)" among
    the others. The diff counts such changes in a note, and --without-expectations compares each
    item's own result (xfailed as failed, xpassed as passed)."""
    old = sample_document()
    new = copy.deepcopy(old)
    fixed = find(new, "planted", "failed")
    fixed.update(outcome="xpassed", xpass="strict", reason="[XPASS(strict)] listed")
    listed = find(new, "planted", "error")
    listed.update(outcome="xfailed")  # an entry added for a failure the fix left
    find(old, "planted", "error")["outcome"] = "failed"
    plain = diff.diff(old, new)
    assert plain.progressions == [] and len(plain.other) == 2
    note = next(n for n in plain.notes if "--without-expectations" in n)
    assert note.startswith("2 of the 2 change(s) are between an expected and an unexpected")
    own = diff.diff(old, new, expectations=False)
    assert [(c.id, c.old, c.new) for c in own.progressions] == [(fixed["id"], "failed", "passed")]
    assert own.other == [] and own.regressions == []
    assert not any("--without-expectations" in n for n in own.notes)
    paths = [str(write(tmp_path, n, d)) for n, d in (("old.json", old), ("new.json", new))]
    assert main(["diff", *paths, "--without-expectations", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [c["new"] for c in report["progressions"]] == ["passed"]


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


def test_a_non_strict_xpass_is_no_regression_and_no_failure() -> None:
    old = sample_document()
    new = copy.deepcopy(old)
    for document, outcome in ((old, "xfailed"), (new, "xpassed")):
        document["records"].append(
            record("dense", "mm", "mm", "fp16", {"M": 3, "N": 5, "K": 7}, "eager", outcome)
        )
    lenient = new["records"][-1]
    lenient.update(xpass="non-strict", reason="[XPASS] wrong on some hosts only")
    result = diff.diff(old, new)
    assert result.regressions == []
    assert [(c.old, c.new) for c in result.other] == [("xfailed", "xpassed")]
    lenient["xpass"] = "strict"
    assert [(c.old, c.new) for c in diff.diff(old, new).regressions] == [("xfailed", "xpassed")]
    assert diff.classify("xfailed", "xpassed", new_fails=False) == "other"


def test_is_failing_reads_the_xpass_field_or_an_older_files_reason() -> None:
    from gemmconf.record import Record
    from gemmconf.report.results import count_kinds

    def is_failing(fields: dict) -> bool:
        from gemmconf.report.results import is_failing

        return is_failing(Record(id="tiny/mm", backend="b", **fields))

    assert is_failing({"outcome": "failed"}) and is_failing({"outcome": "error"})
    assert not is_failing({"outcome": "xfailed"}) and not is_failing({"outcome": "passed"})
    assert is_failing({"outcome": "xpassed", "xpass": "strict"})
    assert not is_failing(
        {"outcome": "xpassed", "xpass": "non-strict", "reason": "[XPASS(strict)]"}
    )
    assert is_failing({"outcome": "xpassed", "reason": "[XPASS(strict)] claims it fails"})
    assert not is_failing({"outcome": "xpassed", "reason": "[XPASS] wrong on some runs"})
    lenient = Record(id="tiny/mm", backend="b", outcome="xpassed", xpass="non-strict")
    crash = Record(id="tiny/mm", backend="c", outcome="failed", kind="crash")
    assert count_kinds([lenient, crash]) == {"crash": 1}
    assert count_kinds([lenient], ("xpassed",)) == {"xpass": 1}  # asked for by outcome: counted


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


def timed_pair(vs_old: float, vs_new: float, **spread: float) -> tuple[dict, dict]:
    """Two runs where one eager mm item was timed at vs_old then vs_new (x cuBLAS)."""
    old = sample_document()
    new = copy.deepcopy(old)
    for doc, value in ((old, vs_old), (new, vs_new)):
        item = find(doc, "eager", "passed")
        item["metrics"].update(vs_cublas=value, time_ms=1.0 / value, **spread)
    return old, new


def test_slower_benchmark_is_listed_and_fails_only_with_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    old, new = timed_pair(1.0, 0.8, vs_cublas_spread=0.02, bench_reps=100.0)
    paths = [str(write(tmp_path, "old.json", old)), str(write(tmp_path, "new.json", new))]
    assert main(["diff", *paths]) == 0  # shown, not failing by default
    out = capsys.readouterr().out
    slower = out.split("SLOWER (benchmark regressions) (1, vs_cublas)")[1].split("FASTER")[0]
    assert find(new, "eager", "passed")["id"] in slower and "-20.0%" in slower
    assert "1 slower, 0 faster" in out
    assert main(["diff", *paths, "--fail-on-regression"]) == 3
    capsys.readouterr()
    victim = find(new, "planted", "passed")
    victim["outcome"] = "failed"  # an outcome regression outranks a slower item
    paths[1] = str(write(tmp_path, "new2.json", new))
    assert main(["diff", *paths, "--fail-on-regression"]) == 1
    capsys.readouterr()
    assert main(["diff", *paths, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["benchmark"]["slower"][0]["new"] == 0.8


def test_changes_within_the_noise_or_under_the_minimum_are_not_flagged() -> None:
    # 20% down, but the repetitions scatter so much that 3 standard errors cover it
    old, new = timed_pair(1.0, 0.8, vs_cublas_spread=0.5, bench_reps=20.0)
    result = diff.diff(old, new)
    assert result.timed >= 1 and result.slower == [] and result.faster == []
    # 3% down with a tiny spread: beyond the repetitions' noise, under the 5% minimum
    old, new = timed_pair(1.0, 0.97, vs_cublas_spread=0.001, bench_reps=1000.0)
    assert diff.diff(old, new).slower == []
    assert len(diff.diff(old, new, min_change=0.01).slower) == 1


def test_a_host_bound_item_s_drift_between_runs_is_noise_a_steady_item_s_is_not() -> None:
    """Same code twice on one H100 (2026-11-25): wall-mode decode items, whose repetitions
    scatter by 7-43%, moved by up to 24% while one run's standard error was under 1%."""
    old, new = timed_pair(0.40, 0.34, vs_cublas_spread=0.04, bench_reps=2000.0)  # -15%, 10% spread
    assert diff.diff(old, new).slower == []
    old, new = timed_pair(0.90, 0.72, vs_cublas_spread=0.02, bench_reps=200.0)  # -20%, 2% spread
    (slower,) = diff.diff(old, new).slower
    assert slower.noise == pytest.approx(3 * 0.90 * 0.02 / 0.72)  # the new run's relative spread


def test_faster_and_time_metric_direction() -> None:
    old, new = timed_pair(1.0, 1.25)  # no spread recorded: the minimum change alone decides
    result = diff.diff(old, new)
    assert [c.kind for c in result.faster] == ["faster"] and result.faster[0].noise == 0
    assert "no spread recorded" in "\n".join(diff.render(result))
    by_time = diff.diff(old, new, metric="time_ms")  # 1.0 -> 0.8 ms: faster, too
    assert by_time.faster[0].change == pytest.approx(-0.2)
    slower = diff.diff(new, old, metric="time_ms")  # 0.8 -> 1.0 ms: slower
    assert slower.slower[0].change == pytest.approx(0.25)
    with pytest.raises(ValueError, match="unknown benchmark metric 'tflops'"):
        diff.diff(old, new, metric="tflops")


def test_items_failing_on_either_side_are_not_timed_against_each_other() -> None:
    old, new = timed_pair(1.0, 0.5)
    find(new, "eager", "passed")["outcome"] = "failed"
    result = diff.diff(old, new)
    assert result.slower == [] and len(result.regressions) == 1


def test_different_gpu_clocks_get_a_note() -> None:
    old, new = timed_pair(1.0, 1.0)
    find(old, "eager", "passed")["metrics"]["gpu_sm_clock_mhz"] = 1980.0
    find(new, "eager", "passed")["metrics"]["gpu_sm_clock_mhz"] = 1500.0
    assert "different SM clocks (median 1980 -> 1500 MHz" in " ".join(diff.diff(old, new).notes)


def test_page_lists_regressions_against_a_baseline(tmp_path: Path) -> None:
    old, new = timed_pair(1.0, 0.5, vs_cublas_spread=0.01, bench_reps=100.0)
    find(new, "planted", "passed")["outcome"] = "failed"
    out = tmp_path / "page.html"
    code = main(
        [
            "html",
            str(write(tmp_path, "new.json", new)),
            "-o",
            str(out),
            "--baseline",
            str(write(tmp_path, "old.json", old)),
        ]
    )
    assert code == 0
    html = out.read_text()
    section = html.split('<section id="baseline"')[1].split("</section>")[0]
    assert "Against <code>old.json</code>" in section and "1 regression(s)" in section
    assert "1 slower" in section and "-50.0%" in section
    assert find(new, "planted", "failed")["id"] in section
    plain = tmp_path / "plain.html"
    assert main(["html", str(tmp_path / "new.json"), "-o", str(plain)]) == 0
    assert 'id="baseline"' not in plain.read_text()


def test_a_reader_that_stops_reading_gets_no_traceback(tmp_path: Path) -> None:
    """`gemmconf report diff OLD NEW | head` ended in a BrokenPipeError traceback (a fresh-venv
    trial, 2026-11-25)."""
    import subprocess
    import sys

    old, new = timed_pair(1.0, 1.0)
    for doc in (old, new):  # enough changed items that the output outgrows the pipe
        template = doc["records"][0]
        doc["records"] = [
            {**template, "id": f"x/y[{i}]", "outcome": "passed" if doc is old else "failed"}
            for i in range(3000)
        ]
    paths = [str(write(tmp_path, "old.json", old)), str(write(tmp_path, "new.json", new))]
    reader = subprocess.Popen(
        ["head", "-c", "10"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    done = subprocess.run(
        [sys.executable, "-m", "gemmconf.cli", "report", "diff", *paths],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    reader.stdin.close()
    reader.wait()
    assert "BrokenPipeError" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1


def test_run_help_into_a_closed_pipe_gets_no_traceback() -> None:
    """`gemmconf run --help | head` ended in a BrokenPipeError traceback (an MoE trial)."""
    import subprocess
    import sys

    reader = subprocess.Popen(["true"], stdin=subprocess.PIPE)
    reader.wait()  # gone before a byte is written: every write meets a closed pipe
    done = subprocess.run(
        [sys.executable, "-m", "gemmconf.cli", "run", "--help"],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        timeout=120,
    )
    reader.stdin.close()
    assert "BrokenPipeError" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1
