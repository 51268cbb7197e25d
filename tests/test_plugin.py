"""The plugin end to end through pytester: items, outcomes, records, bad input, expectations."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest
import suite_files
import torch
import warm_python
from faulty_backends import runs_mm_sm90

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent
BOTH = "eager,planted_backends:bias_broadcast_dropped"
SUITE = """
suite: tiny
scenarios:
  - name: mm
    op: mm
    axes:
      dtype: [fp32, fp16]
      shape: [{M: 8, N: 8, K: 8}, {M: 17, N: 9, K: 33}]
  - name: addmm
    op: addmm
    shape: {M: 8, N: 8, K: 16}
    axes:
      bias: [[M, N], [N]]
  - name: mm_dyn
    op: mm
    shapes: [{M: 8, N: 8, K: 8}, {M: 9, N: 8, K: 8}, {M: 16, N: 8, K: 8}]
    compile: dynamic
  - name: mm_sm90
    op: mm
    shape: {M: 8, N: 8, K: 8}
    requires: {min_class: sm90}
"""


@pytest.fixture
def suite(make_suite) -> pytest.Pytester:
    return make_suite(SUITE, cache=True)  # --lf and --ff read pytest's cache


def records(pytester: pytest.Pytester, name: str = "reports/results.json") -> dict:
    return json.loads((pytester.path / name).read_text())


def outcomes(document: dict) -> dict[tuple[str, str], str]:
    return {(r["id"], r["backend"]): r["outcome"] for r in document["records"]}


def test_a_run_keeps_the_previous_runs_results_beside_its_own(suite):
    """A torchao trial pasted a failure's one-item run line after a whole run and lost that
    run's default results file. A run with the default --results keeps the file it finds there
    as reports/results.previous.json (and says so, with the diff that compares the two); a file
    of the run's own choosing is replaced, as before."""
    first = suite.runpytest("suites", "--backend", "eager")
    assert first.ret == pytest.ExitCode.OK
    first.stdout.no_fnmatch_line("*previous run's results*")
    whole = outcomes(records(suite))
    again = suite.runpytest("suites/tiny.yaml::mm[fp16-17x9x33@eager]", "--backend", "eager")
    assert again.ret == pytest.ExitCode.OK
    again.stdout.fnmatch_lines(
        [
            "gemmconf: the previous run's results kept as reports/results.previous.json "
            "(`gemmconf report diff reports/results.previous.json reports/results.json` "
            "compares the two)"
        ]
    )
    assert outcomes(records(suite, "reports/results.previous.json")) == whole
    assert set(outcomes(records(suite))) == {("tiny/mm[fp16-17x9x33]", "eager")}
    own = suite.runpytest("suites", "--backend", "eager", "--results", "mine.json")
    assert own.ret == pytest.ExitCode.OK
    own = suite.runpytest("suites", "--backend", "eager", "--results", "mine.json", "-k", "fp16")
    own.stdout.no_fnmatch_line("*previous run's results*")
    assert not (suite.path / "mine.previous.json").exists()


def test_eager_passes_and_writes_records(suite):
    sm90 = runs_mm_sm90()
    result = suite.runpytest("suites", "--backend", "eager")
    result.assert_outcomes(passed=7 + sm90, skipped=1 - sm90)
    document = records(suite)
    assert document["complete"] is True and document["format"] == "gemmconf-results"
    assert document["counts"]["passed"] == 7 + sm90
    assert document["counts"]["skipped"] == 1 - sm90
    record = next(r for r in document["records"] if r["id"] == "tiny/mm[fp16-17x9x33]")
    assert record["backend"] == "eager" and record["op"] == "mm" and record["dtype"] == "fp16"
    assert record["axes"] == {"dtype": "fp16", "shape": "17x9x33"}
    assert record["metrics"]["err_ratio"] == pytest.approx(1.0)
    assert record["metrics"]["max_ratio"] == 3.0  # the bar err_ratio was held to
    assert record["environment"]["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    if sm90:
        return
    skipped = next(r for r in document["records"] if r["id"] == "tiny/mm_sm90")
    assert skipped["outcome"] == "skipped" and "sm90" in skipped["reason"]
    result.stdout.fnmatch_lines(["*gemmconf summary*", "*skipped for hardware: 1*"])


def test_item_names_markers_and_selection(suite):
    result = suite.runpytest(
        "suites", "--backend", "eager", "--collect-only", "-q", "-m", "addmm", "--strict-markers"
    )
    result.stdout.fnmatch_lines(
        ["suites/tiny.yaml::addmm[[]bias_MN@eager[]]", "suites/tiny.yaml::addmm[[]bias_N@eager[]]"]
    )
    assert "mm[fp32" not in result.stdout.str()
    result = suite.runpytest("suites", "--backend", "eager", "--collect-only", "-q", "-k", "dyn")
    result.stdout.fnmatch_lines(["suites/tiny.yaml::mm_dyn[[]@eager[]]"])  # no axes: no params


def test_last_failed_reruns_exactly_the_failures(suite):
    """Node ids carry every bracket at the end, so pytest's cache reads them back: --lf reruns
    the failures of the previous run and nothing else, --ff runs them first."""
    backends = "planted_backends:bias_broadcast_dropped,planted_backends:recompiles_every_shape"
    first = suite.runpytest("suites", "--backend", backends, "--no-isolate", "-rf")
    failed = sorted(line.split()[1] for line in first.stdout.lines if line.startswith("FAILED "))
    assert len(failed) == 2 and first.ret == pytest.ExitCode.TESTS_FAILED
    again = suite.runpytest("suites", "--backend", backends, "--no-isolate", "-rf", "--lf")
    again.stdout.fnmatch_lines(["*run-last-failure: rerun previous 2 failures*"])
    rerun = sorted(line.split()[1] for line in again.stdout.lines if line.startswith("FAILED "))
    assert rerun == failed
    again.assert_outcomes(failed=2)
    assert {r["nodeid"] for r in records(suite)["records"]} == set(failed)
    first_failed = suite.runpytest("suites", "--backend", backends, "--no-isolate", "--ff", "-v")
    ran = [
        line.split()[0]
        for line in first_failed.stdout.lines
        if " PASSED" in line or " FAILED" in line
    ]
    assert sorted(ran[:2]) == failed


def test_planted_bugs_fail_the_right_items(suite):
    result = suite.runpytest(
        "suites",
        "--backend",
        "planted_backends:bias_broadcast_dropped,planted_backends:recompiles_every_shape",
        "--tb=short",  # pytest's per-failure sections: each failure's details
    )
    document = records(suite)
    found = outcomes(document)
    assert found[("tiny/addmm[bias_N]", "bias-broadcast-dropped")] == "failed"
    assert found[("tiny/addmm[bias_MN]", "bias-broadcast-dropped")] == "passed"
    assert found[("tiny/mm_dyn", "recompiles-every-shape")] == "failed"
    assert found[("tiny/mm[fp32-8x8x8]", "recompiles-every-shape")] == "passed"
    result.stdout.fnmatch_lines(
        [
            "*Recompiled: 3 compiles over 3 shape set(s)*allows 1*",
            "*Reproduce: python -m pytest *tiny.yaml::mm_dyn?@recompiles-every-shape?*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_unknown_backend_fails_at_start_listing_known_ones(suite):
    result = suite.runpytest("suites", "--backend", "no-such")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown backend 'no-such'*Known backends: reference*eager*"])
    assert not (suite.path / "reports" / "results.json").exists()


def test_misspelled_key_is_a_usage_error_naming_file_and_line(suite):
    (suite.path / "suites" / "bad.yaml").write_text(
        "scenarios:\n  - name: x\n    op: mm\n    shape: {M: 1, N: 1, K: 1}\n    dtpye: fp16\n"
    )
    result = suite.runpytest("suites", "--backend", "eager")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*suites/bad.yaml:5: dtpye: unknown key*did you mean 'dtype'*"])
    assert not (suite.path / "reports" / "results.json").exists()


@pytest.mark.parametrize(
    ("option", "words"),
    [
        (["--seed", "x"], "--seed: expected an integer"),
        (["--target-arch", "sm70"], "--target-arch: 'sm70' is not one of"),
        (["--require-hardware", "tpu"], "--require-hardware: unknown hardware class tpu"),
    ],
)
def test_bad_option_values(suite, option, words):
    result = suite.runpytest("suites", "--backend", "eager", *option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{words}*"])


def test_require_hardware_turns_the_skip_into_a_failure(suite):
    # an item this machine cannot run: sm100 is above both a CPU and a Hopper GPU
    (suite.path / "suites" / "tiny.yaml").write_text(SUITE.replace("class: sm90", "class: sm100"))
    result = suite.runpytest("suites", "--backend", "eager", "--require-hardware", "sm100")
    result.assert_outcomes(passed=7, errors=1)
    result.stdout.fnmatch_lines(["*--require-hardware sm100: this item would be skipped*"])
    assert outcomes(records(suite))[("tiny/mm_sm90", "eager")] == "error"


def expectations(pytester: pytest.Pytester, backend: str, body: str) -> None:
    directory = pytester.path / "suites" / "expectations"
    directory.mkdir(exist_ok=True)
    (directory / f"{backend}.yaml").write_text(
        f"backend: {backend}\nexpectations:\n" + textwrap.indent(textwrap.dedent(body), "  ")
    )


def test_expectations_xfail_skip_and_strict_xpass(suite):
    expectations(
        suite,
        "bias-broadcast-dropped",
        """
        - match: "tiny/addmm[bias_N]"
          reason: drops broadcast biases
          issue: https://example.invalid/1
        - match: "tiny/mm[fp32-*]"
          reason: claims fp32 fails, but it passes
        - match: "tiny/mm_dyn"
          status: skip
          reason: not today
    """,
    )
    result = suite.runpytest("suites", "--backend", "planted_backends:bias_broadcast_dropped")
    found = outcomes(records(suite))
    assert found[("tiny/addmm[bias_N]", "bias-broadcast-dropped")] == "xfailed"
    assert found[("tiny/mm[fp32-8x8x8]", "bias-broadcast-dropped")] == "xpassed"
    assert found[("tiny/mm_dyn", "bias-broadcast-dropped")] == "skipped"
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the strict xpasses
    xpassed = [r for r in records(suite)["records"] if r["outcome"] == "xpassed"]
    assert xpassed and {r["xpass"] for r in xpassed} == {"strict"}
    result.stdout.fnmatch_lines(["*failing by kind: bias-broadcast-dropped: xpass *"])
    # the xfailed record keeps what the run found and says which entry expected it
    (xfailed,) = [r for r in records(suite)["records"] if r["outcome"] == "xfailed"]
    assert xfailed["kind"] == "wrong values" and "not close" in xfailed["reason"]
    assert xfailed["details"].endswith(
        "Expected to fail: drops broadcast biases (https://example.invalid/1) "
        "[suites/expectations/bias-broadcast-dropped.yaml:4]"
    )


def test_non_strict_xfail_passes_as_xpass_and_strict_must_be_a_bool(suite):
    expectations(
        suite,
        "eager",
        """
        - match: "tiny/mm[fp32-*]"
          reason: wrong on some runs only
          strict: false
    """,
    )
    result = suite.runpytest("suites", "--backend", "eager")
    assert outcomes(records(suite))[("tiny/mm[fp32-8x8x8]", "eager")] == "xpassed"
    assert result.ret == pytest.ExitCode.OK
    # reported, and failing nothing: the record says so, and the summary does not call it failing
    xpassed = [r for r in records(suite)["records"] if r["outcome"] == "xpassed"]
    assert xpassed and {r["xpass"] for r in xpassed} == {"non-strict"}
    assert "failing by kind" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*XPASS tiny/mm[[]fp32-8x8x8[]]@eager - [[]XPASS[]] wrong on*"])
    expectations(
        suite,
        "eager",
        """
        - match: "tiny/mm[fp32-*]"
          reason: wrong on some runs only
          strict: sometimes
    """,
    )
    result = suite.runpytest("suites", "--backend", "eager")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*expectations/eager.yaml:6: strict: expected true or false*"])


def test_expectation_matching_nothing_is_an_error(suite):
    expectations(
        suite,
        "eager",
        """
        - match: "tiny/mm[fp64-*]"
          reason: there is no fp64 mm
    """,
    )
    result = suite.runpytest("suites", "--backend", "eager")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*expectations/eager.yaml:4: match: pattern 'tiny/mm[[]fp64-*]' "
            "matches no scenario instance*"
        ]
    )


@pytest.fixture(scope="module")
def eager_and_planted_runs(tmp_path_factory) -> dict[str, tuple[int, Path]]:
    """The suite on eager and a planted backend, in a pytest process of its own, serially
    (`-n 0`) and on two xdist workers (`-n 2`), each with its junit.xml: by worker count, the
    exit status and the run's folder. The tests below only read them (one xdist worker runs
    them all: `xdist_group`)."""
    runs = {}
    for workers in ("0", "2"):
        folder = tmp_path_factory.mktemp(f"workers{workers}")
        suite_files.lay_out(folder, SUITE)
        command = [sys.executable, "-m", "pytest", "suites", "--backend", BOTH]
        command += ["--junitxml", "junit.xml", "-n", workers, "-p", "no:randomly"]
        done = warm_python.run(
            command,
            cwd=folder,
            # planted_backends, in the workers
            env={**os.environ, "PYTHONPATH": suite_files.python_path(TESTS)},
            capture_output=True,
            text=True,
            timeout=600,
        )
        runs[workers] = (done.returncode, folder)
    return runs


@pytest.mark.xdist_group("eager_and_planted_runs")
def test_xdist_and_serial_runs_agree(eager_and_planted_runs):
    (serial, one), (parallel, two) = eager_and_planted_runs["0"], eager_and_planted_runs["2"]
    assert serial == parallel == pytest.ExitCode.TESTS_FAILED
    a = json.loads((one / "reports" / "results.json").read_text())
    b = json.loads((two / "reports" / "results.json").read_text())
    assert outcomes(a) == outcomes(b) and len(outcomes(a)) == 16
    assert "failed" in outcomes(a).values()  # the planted backend's failures agree too
    assert b["complete"] is True
    # xdist's controller names the backends' packages as the serial run does
    assert a["backend_packages"] == b["backend_packages"]
    assert len(b["backend_packages"]) == 2 and all(b["backend_packages"].values())


@pytest.mark.xdist_group("eager_and_planted_runs")
@pytest.mark.parametrize("workers", ["0", "2"])
def test_junit_properties_are_each_items_verdict_record_as_json(eager_and_planted_runs, workers):
    status, folder = eager_and_planted_runs[workers]
    assert status == pytest.ExitCode.TESTS_FAILED
    document = json.loads((folder / "reports" / "results.json").read_text())
    written = {r["nodeid"]: r for r in document["records"]}
    cases = ElementTree.parse(folder / "junit.xml").getroot().iter("testcase")
    found = {}
    for case in cases:
        (prop,) = [p for p in case.iter("property") if p.get("name") == "gemmconf"]
        record = json.loads(prop.get("value"))  # JSON, not Python's repr of a dict
        found[record["nodeid"]] = record
        assert case.get("name") == record["nodeid"].split("::")[1]
    assert found == written and len(found) == 16
    dropped = found["suites/tiny.yaml::addmm[bias_N@bias-broadcast-dropped]"]
    assert dropped["outcome"] == "failed" and dropped["kind"] and dropped["reason"]


def test_a_report_is_a_plugin_through_gemmconf_hooks(suite):
    """A conftest that implements gemmconf's report hooks sees every record and the finished
    run, adds a field to the results file (as --benchmark adds its block) and lines to the
    summary: a new report needs no edit of gemmconf."""
    suite.makeconftest(
        """
        seen = []

        def pytest_gemmconf_record(record, config):
            seen.append((record["id"], record["outcome"]))

        def pytest_gemmconf_results_fields(records, config):
            return {"my_report": len(records)}

        def pytest_gemmconf_summary_lines(records, config):
            return [f"my-table: {len(records)} rows"]

        def pytest_gemmconf_run_finished(results_path, records, config):
            assert len(records) == len(seen)
            return f"my-report: {len(seen)} records, {results_path.name}"
        """
    )
    sm90 = runs_mm_sm90()
    result = suite.runpytest("suites", "--backend", "eager", "-k", "mm_dyn or mm_sm90")
    result.assert_outcomes(passed=1 + sm90, skipped=1 - sm90)
    result.stdout.fnmatch_lines(
        ["my-table: 2 rows", "gemmconf: results in *", "my-report: 2 records, results.json"]
    )
    assert records(suite)["my_report"] == 2


PACKAGED_BACKEND = """
from pathlib import Path

from planted_backends import PlantedBackend, _drop_bias_broadcast

backend = PlantedBackend("bias-broadcast-dropped", _drop_bias_broadcast)
backend.expectations = Path(__file__).with_name("packaged.yaml")
"""


def packaged_backend(pytester: pytest.Pytester, match: str, reason: str) -> None:
    """`packaged_backend:backend`, a backend that ships packaged.yaml with one entry."""
    pytester.makepyfile(packaged_backend=PACKAGED_BACKEND)
    pytester.syspathinsert()
    (pytester.path / "packaged.yaml").write_text(
        f'backend: bias-broadcast-dropped\nexpectations:\n  - match: "{match}"\n'
        f"    reason: {reason}\n"
    )


def test_a_backends_packaged_expectations_apply_unless_the_suite_has_its_own(suite):
    packaged_backend(suite, "tiny/addmm[bias_N]", "drops broadcast biases")
    suite.runpytest("suites", "--backend", "packaged_backend:backend")
    assert outcomes(records(suite))[("tiny/addmm[bias_N]", "bias-broadcast-dropped")] == "xfailed"

    expectations(suite, "bias-broadcast-dropped", '- {match: "tiny/mm_dyn", reason: x}\n')
    suite.runpytest("suites", "--backend", "packaged_backend:backend")
    found = outcomes(records(suite))
    assert found[("tiny/addmm[bias_N]", "bias-broadcast-dropped")] == "failed"  # suite's file
    assert found[("tiny/mm_dyn", "bias-broadcast-dropped")] == "xpassed"


def test_a_stale_pattern_in_a_packaged_expectations_file_is_an_error(suite):
    packaged_backend(suite, "tiny/gone[*]", "fixed long ago")
    result = suite.runpytest("suites", "--backend", "packaged_backend:backend")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*packaged.yaml:3: match: pattern 'tiny/gone[[]*]' matches no*"])
    (suite.path / "packaged.yaml").unlink()
    result = suite.runpytest("suites", "--backend", "packaged_backend:backend")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*packaged.yaml: expectations: backend 'bias-broadcast-dropped'*"])


def test_silent_in_a_project_that_does_not_run_the_suite(pytester):
    """Installed, the plugin is loaded in every pytest run; in one that collects no suite file
    and names no gemmconf option it prints nothing and writes nothing."""
    pytester.makepyfile(test_unrelated="def test_ok():\n    assert True\n")
    # (pytest-benchmark, where installed, writes a .benchmarks folder of its own)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:benchmark")
    result.assert_outcomes(passed=1)
    assert "gemmconf:" not in result.stdout.str() and "gemmconf summary" not in result.stdout.str()
    written = sorted(p.name for p in pytester.path.iterdir() if p.name != "__pycache__")
    assert written == ["test_unrelated.py"]  # (__pycache__: Python's, where it writes bytecode)
    # a yaml file outside the suite folder is not the suite's either
    pytester.makefile(".yaml", other="scenarios: []\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "other.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # pytest's "not found": nobody collects it
    assert "gemmconf:" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "reports").exists()


def test_a_gemmconf_option_alone_turns_it_on(pytester):
    pytester.makepyfile(test_unrelated="def test_ok():\n    assert True\n")
    result = pytester.runpytest("--backend", "eager", "test_unrelated.py")
    result.stdout.fnmatch_lines(["gemmconf: backends eager;*"])


def test_disabled_with_no_gemmconf(suite):
    result = suite.runpytest("suites", "-p", "no:gemmconf")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED  # nothing collects the suite files
    assert "gemmconf:" not in result.stdout.str() and not (suite.path / "reports").exists()


def test_a_project_with_its_own_backend_option_runs_both(suite):
    """A conftest.py that declares --backend and --seed keeps them; gemmconf's are then
    --gemmconf-backend and --gemmconf-seed, and the run says so in its header."""
    suite.makeconftest(
        """
        def pytest_addoption(parser):
            parser.addoption("--backend", default="theirs")
            parser.addoption("--seed")

        def pytest_report_header(config):
            return f"project backend: {config.getoption('backend')}"
        """
    )
    suite.makepyfile(
        test_theirs="def test_ok(pytestconfig):\n"
        "    assert pytestconfig.getoption('backend') == 'mine'\n"
    )
    result = suite.runpytest("test_theirs.py", "--backend", "mine")
    result.assert_outcomes(passed=1)
    assert "gemmconf:" not in result.stdout.str()
    result = suite.runpytest(
        "suites",
        "test_theirs.py",
        "--backend",
        "mine",
        "--gemmconf-backend",
        "eager",
        "-k",
        "mm_dyn or ok",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "gemmconf: the project's own options: --backend (gemmconf's: --gemmconf-backend), "
            "--seed (gemmconf's: --gemmconf-seed)",
            "gemmconf: backends eager;*",
            "project backend: mine",
        ]
    )
    assert outcomes(records(suite)) == {("tiny/mm_dyn", "eager"): "passed"}


def test_a_failure_eager_is_expected_to_share_says_so(suite):
    """A backend that leaves an op to aten inherits PyTorch's own bugs: its failure of an item
    eager's expectations list says so (the suite's eager.yaml is read even when eager does not
    run); an item eager passes gets no such note."""
    (suite.path / "suites" / "expectations").mkdir()
    (suite.path / "suites" / "expectations" / "eager.yaml").write_text(
        "backend: eager\nexpectations:\n"
        '  - {match: "tiny/addmm[bias_N]", reason: "this CPU eager drops the bias"}\n'
    )
    result = suite.runpytest(
        "suites", "--backend", "planted_backends:bias_broadcast_dropped", "--tb=short"
    )
    document = records(suite)
    failed = {r["id"]: r for r in document["records"] if r["outcome"] == "failed"}
    assert set(failed) == {"tiny/addmm[bias_N]"}
    note = "Eager PyTorch is expected to fail this item the same way: this CPU eager drops the bias"
    assert note in failed["tiny/addmm[bias_N]"]["details"]
    assert failed["tiny/addmm[bias_N]"]["eager_fails"] is True
    # the planted backend computes through aten (torch.addmm): PyTorch computed the item
    assert failed["tiny/addmm[bias_N]"]["computed_by"] == "pytorch"
    assert failed["tiny/addmm[bias_N]"]["inherited"] == "eager"
    result.stdout.fnmatch_lines([f"*{note}*eager.yaml:3*inherits that*"])
    result.stdout.fnmatch_lines(
        ["*inherited failures (not counted above; --count-inherited counts them in):*",
         "*bias-broadcast-dropped 1 (eager fails them too and PyTorch computed them: 1)"]
    )  # fmt: skip
    assert not any(r.get("eager_fails") for r in document["records"] if r["outcome"] == "passed")
    assert "Eager PyTorch" not in json.dumps(
        [r for r in document["records"] if r["id"] != "tiny/addmm[bias_N]"]
    )


def test_a_failure_eager_is_expected_to_have_in_another_kind_is_the_backends_own(suite):
    """Inherited from eager only when it is eager's failure: where eager's entry expects another
    kind (it crashes; the backend's values are wrong), the failure is the backend's own."""
    (suite.path / "suites" / "expectations").mkdir()
    (suite.path / "suites" / "expectations" / "eager.yaml").write_text(
        "backend: eager\nexpectations:\n"
        '  - {match: "tiny/addmm[bias_N]", kind: crash, reason: "this CPU eager raises"}\n'
    )
    suite.runpytest("suites", "--backend", "planted_backends:bias_broadcast_dropped")
    failed = {r["id"]: r for r in records(suite)["records"] if r["outcome"] == "failed"}
    record = failed["tiny/addmm[bias_N]"]
    assert record["kind"] == "wrong values" and record["computed_by"] == "pytorch"
    assert record["eager_fails"] is True  # eager is expected to fail it, ...
    assert "inherited" not in record  # ... but not this way
    assert (
        "expected to fail this item too, but not this way: crash: this CPU eager raises"
        in (record["details"])
    )


def test_a_suite_folder_named_as_a_path_outside_the_suites_folder_gets_a_hint(suite):
    # pytest collects suite files from the suites folder only; a user who names their own folder
    # as a pytest path runs nothing, and is told how to run it
    (suite.path / "mine").mkdir()
    (suite.path / "mine" / "a.yaml").write_text(SUITE)
    result = suite.runpytest("mine", "--backend", "eager")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "*gemmconf: mine holds suite files, but gemmconf collects them only from its suites "
            "folder (*suites): run `--suites mine` to make it the suite"
        ]
    )
    result = suite.runpytest("--suites", "mine", "--backend", "eager")
    assert result.ret == pytest.ExitCode.OK
    assert "holds suite files" not in result.stdout.str()
