"""`gemmconf run` and the suite's location: the suite runs from any folder, with results there,
and where the suite is never depends on pytest's rootdir guess."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import suite_files
import warm_python

from gemmconf import bundled_suites, cli

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
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
"""


@pytest.fixture
def elsewhere(pytester: pytest.Pytester) -> Path:
    """A suite in a folder of its own; the current folder holds an ini file that would select
    nothing if gemmconf run read it."""
    (pytester.path / "elsewhere").mkdir()
    suites = suite_files.lay_out(pytester.path / "elsewhere", SUITE, expectations={}, ini=False)
    work = pytester.path / "work"
    work.mkdir()
    (work / "pytest.ini").write_text("[pytest]\naddopts = -k nothing_has_this_name\n")
    pytester.syspathinsert(TESTS)  # planted_backends
    return suites


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """`gemmconf run ARGS` from the folder `work`, in this process."""
    work = pytester.path / "work"
    command = cli.pytest_arguments(list(args), work)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        return pytester.runpytest_inprocess(*command)


def test_run_from_any_folder_writes_reports_there(pytester, elsewhere):
    result = run(pytester, "--suites", str(elsewhere), "--backend", "eager", "--no-isolate")
    result.assert_outcomes(passed=6)
    document = json.loads((pytester.path / "work" / "reports" / "results.json").read_text())
    assert document["complete"] and len(document["records"]) == 6
    assert (pytester.path / "work" / "reports" / "conformance.html").is_file()
    # node ids are relative to the suite folder, whatever folder the run started in
    nodeids = {r["nodeid"] for r in document["records"]}
    assert "tiny.yaml::mm[fp16-17x9x33@eager]" in nodeids
    assert not (elsewhere / "reports").exists() and not (elsewhere / ".pytest_cache").exists()


def test_a_printed_node_id_pastes_back_and_last_failed_works(pytester, elsewhere):
    backend = "planted_backends:bias_broadcast_dropped"
    first = run(pytester, "--suites", str(elsewhere), "--backend", backend, "--no-isolate")
    first.assert_outcomes(passed=5, failed=1)
    # as the suite names it, not relative to the folder the run started in (../elsewhere/...)
    first.stdout.fnmatch_lines(["FAILED tiny.yaml::addmm[[]bias_N@bias-broadcast-dropped[]]*"])
    first.stdout.fnmatch_lines(["tiny.yaml [.F]*"])  # the progress line's file name too
    assert not [line for line in first.stdout.lines if line.startswith("../")]
    assert (pytester.path / "work" / ".pytest_cache").is_dir()  # --lf's memory: here
    again = run(pytester, "--suites", str(elsewhere), "--backend", backend, "--no-isolate", "--lf")
    again.assert_outcomes(failed=1)
    one = run(
        pytester,
        "tiny.yaml::addmm[bias_MN@bias-broadcast-dropped]",
        "--suites",
        str(elsewhere),
        "--backend",
        backend,
        "--no-isolate",
    )
    one.assert_outcomes(passed=1)


def test_a_name_found_nowhere_is_an_error_naming_the_suites_folders_or_a_suite_ids_file(
    tmp_path,
):
    """`gemmconf run nosuchthing -n 2` said "no tests ran" and nothing else (pytest's own
    "file or directory not found" stays in xdist's workers)."""
    with pytest.raises(FileNotFoundError, match=r"nosuchthing: no such .*folders: .*dense"):
        cli.pytest_arguments(["nosuchthing", "-n", "2"], tmp_path)
    with pytest.raises(FileNotFoundError, match=r"'first' is the id of the suite in dense/first"):
        cli.pytest_arguments(["first"], tmp_path)
    # an option's value is never looked at, whether gemmconf knows the option or not
    assert "yes" in cli.pytest_arguments(["dense", "--color", "yes"], tmp_path)
    assert cli.pytest_arguments(["-m", "first"], tmp_path)[-1] == str(bundled_suites())


def test_run_defaults_to_the_installed_suite(tmp_path):
    command = cli.pytest_arguments(["--backend", "eager", "-m", "mm"], tmp_path)
    suites = bundled_suites()
    assert command[-1] == str(suites) and ["--suites", str(suites)] == command[6:8]
    assert command[:2] == ["-c", str(Path(cli.__file__).with_name("run.ini"))]
    assert f"cache_dir={tmp_path / '.pytest_cache'}" in command
    # the value of -m is no suite path, even though the suite has a folder named like it
    assert "mm" in command and cli.pytest_arguments(["fp8/errors.yaml"], tmp_path)[-1] == str(
        suites / "fp8" / "errors.yaml"
    )
    # a folder of the suite (gemmconf bench's default) runs alone; an option's .yaml value is none
    bench = cli.pytest_arguments([str(suites / "bench"), "--expectations", "x.yaml"], tmp_path)
    assert bench[-3:] == [str(suites / "bench"), "--expectations", "x.yaml"]


def test_suite_folders_are_looked_up_in_the_suite_and_option_values_are_not(tmp_path):
    """`gemmconf run dense epilogue/`: folders of the suite by the names `gemmconf list` and
    node ids use, from any folder; `-m epilogue` and `-k dense` stay what they are."""
    suites = bundled_suites()
    command = cli.pytest_arguments(
        ["dense", "epilogue/", "-m", "epilogue", "-k", "dense", "--backend", "eager"], tmp_path
    )
    assert command[-8:] == [
        str(suites / "dense"),
        str(suites / "epilogue/"),
        "-m",
        "epilogue",
        "-k",
        "dense",
        "--backend",
        "eager",
    ]
    (tmp_path / "dense").mkdir()  # a folder of the current folder comes first (not the suite's)
    assert cli.pytest_arguments(["dense"], tmp_path)[-2:] == ["dense", str(suites)]


def test_a_path_found_nowhere_is_an_error_naming_both_places(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "desne/first.yaml", "--backend", "eager"]) == 4
    error = capsys.readouterr().err
    assert "desne/first.yaml: no such suite file or folder here" in error
    assert str(bundled_suites()) in error
    # a value of a path option is not looked up (it may be written by the run)
    command = cli.pytest_arguments(["--durations-from", "old/r.json", "-n", "2"], tmp_path)
    assert "old/r.json" in command


def test_list_and_explain_use_the_installed_suite_from_any_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # explain makes the current folder importable
    assert cli.main(["list", "first/mm[fp32-127x65x33-*"]) == 0
    listed = capsys.readouterr()
    assert "first/mm[fp32-127x65x33-nn]" in listed.out.splitlines()
    assert cli.main(["explain", "first/mm[fp32-127x65x33-nn]", "--backend", "eager"]) == 0
    out = capsys.readouterr().out
    assert (
        "run: gemmconf run 'dense/first.yaml::mm[fp32-127x65x33-nn@eager]' "
        "--backend eager --seed 0" in out
    )


def test_explain_and_repro_expand_only_the_file_that_holds_the_item(tmp_path, monkeypatch, capsys):
    """With the suite's facts stored (any run stores them), finding one item expands the one
    file whose facts hold it, by id or by node id; a name no file holds expands none."""
    from gemmconf import scenario

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("GEMMCONF_CACHE", str(tmp_path / "cache"))
    expanded: list[str] = []
    load_suite = scenario.load_suite

    def counted(path, **kwargs):
        expanded.append(Path(path).name)
        return load_suite(path, **kwargs)

    monkeypatch.setattr(scenario, "load_suite", counted)
    assert cli.main(["explain", "first/mm[fp32-127x65x33-nn]"]) == 0  # stores every file's
    every = [path.name for path in scenario.discover([bundled_suites()], tmp_path)]
    assert len(every) > 20 and expanded == every
    for wanted in ("first/mm[fp32-127x65x33-nn]", "dense/first.yaml::mm[fp32-127x65x33-nn@eager]"):
        expanded.clear()
        assert cli.main(["explain", wanted]) == 0
        assert "first/mm[fp32-127x65x33-nn]  (" in capsys.readouterr().out
        assert expanded == ["first.yaml"]
    expanded.clear()
    assert (
        cli.main(["repro", "first/mm[fp32-64x64x64-nn]", "--backend", "eager", "-o", "r.py"]) == 0
    )
    assert expanded == ["first.yaml"] and (tmp_path / "r.py").is_file()
    expanded.clear()
    assert cli.main(["explain", "first/mm[fp32-1x2x3-nn]"]) == 2
    assert expanded == [] and "no instance 'first/mm[fp32-1x2x3-nn]'" in capsys.readouterr().err


def test_list_selects_by_markers_as_a_run_does(tmp_path, monkeypatch, capsys, pytester):
    """`gemmconf list -m EXPR` lists the instances `gemmconf run -m EXPR` runs, one item each
    for one backend; a malformed expression exits 2 naming the option."""
    monkeypatch.chdir(tmp_path)
    expression = "sm90 and fp8 and not error_case"
    assert cli.main(["list", "-m", expression]) == 0
    listed = capsys.readouterr().out.split()
    assert listed
    collected = pytester.runpytest_inprocess(
        str(ROOT / "suites"), "--backend", "eager", "--collect-only", "-q", "-m", expression
    )
    ids = {line.split("::")[-1] for line in collected.outlines if "@eager]" in line}
    assert len(ids) == len(listed)
    assert cli.main(["list", "-m", "sm90 and"]) == 2
    assert "gemmconf list -m 'sm90 and':" in capsys.readouterr().err


def test_explain_names_an_outside_backend_as_its_items_do(tmp_path, monkeypatch, capsys):
    """A fresh-venv trial (2026-11-25): `gemmconf explain ID --backend mybackend:Mine --run`
    raised a traceback (the current folder was not importable, as it is under `gemmconf run`),
    and its `run:` line named the item `@mybackend:Mine`, where the run names it by `name`."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "mybackend.py").write_text(
        "from gemmconf.backends.eager import EagerBackend\n\n"
        "class Mine(EagerBackend):\n    name = 'my-gemm'\n"
    )
    ident = "first/mm[fp32-127x65x33-nn]"
    assert cli.main(["explain", ident, "--backend", "mybackend:Mine", "--run"]) == 0
    out = capsys.readouterr().out
    assert (
        "run: gemmconf run 'dense/first.yaml::mm[fp32-127x65x33-nn@my-gemm]' "
        "--backend mybackend:Mine --seed 0" in out
    )
    assert "verdict: PASSED (err_ratio " in out and "; largest absolute error " in out
    assert " against a bar of 3: the backend's error" in out  # the bar beside it (torchao trial)
    assert "\n  computed by PyTorch\n" in out  # an eager subclass: its pass is PyTorch's
    error_case = "errors/inner_dim_mismatch[mm-fp32]"
    assert cli.main(["explain", error_case, "--backend", "mybackend:Mine", "--run"]) == 0
    out = capsys.readouterr().out
    assert "verdict: PASSED (the backend raised RuntimeError: " in out and "as eager does" in out
    # a failure says who computed it too, and which of aten's kernels (a bitsandbytes trial,
    # 2026-12-02: aten's _int_mm computed 56 failures, and explain said nothing of it)
    (tmp_path / "doubled.py").write_text(
        "from gemmconf.backends.eager import EagerBackend\n\n"
        "class Doubled(EagerBackend):\n    name = 'doubled'\n\n"
        "    def compile(self, fn, example_inputs, *, dynamic):\n"
        "        doubled = lambda *args: fn(*args) * 2\n"
        "        return super().compile(doubled, example_inputs, dynamic=dynamic)\n"
    )
    assert cli.main(["explain", ident, "--backend", "doubled:Doubled", "--run"]) == 1
    out = capsys.readouterr().out
    assert "verdict: FAILED (wrong values)" in out
    assert "\n  computed by PyTorch; aten's GEMM kernels that ran: aten::mm x1\n" in out
    assert cli.main(["explain", ident, "--backend", "nosuchmodule:Mine"]) == 2
    err = capsys.readouterr().err
    assert "no module 'nosuchmodule' is on the import path" in err and "Traceback" not in err


def test_explain_runs_the_item_in_a_worker_and_names_a_crash(tmp_path, monkeypatch, capsys):
    """An outside author's trial (TVM's relax frontend, 2026-11-30): `explain --run` on an item
    whose backend segfaults ended explain itself with status 139 and no verdict. It runs the
    item in an isolation worker, as `gemmconf run` does: the crash is the verdict."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "crashy.py").write_text(
        "import ctypes\n"
        "from gemmconf.backends.dynamo import dynamo_backend\n\n"
        "def _compile(gm, example_inputs):\n"
        "    def run(*args):\n"
        "        ctypes.string_at(0)\n"
        "    return run\n\n"
        "backend = dynamo_backend(_compile, name='crashy')\n"
    )
    ident = "first/mm[fp32-64x64x64-nn]"
    assert cli.main(["explain", ident, "--backend", "crashy:backend", "--run"]) == 1
    out = capsys.readouterr().out
    assert "verdict: FAILED (crash)" in out and "killed by SIGSEGV" in out


def test_missing_suite_folder_is_a_usage_error(pytester, tmp_path, monkeypatch, capsys):
    pytester.makeini("[pytest]\ngemmconf_suites = suites\n")
    result = pytester.runpytest("--suites", "no/such/folder", "--backend", "eager")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--suites no/such/folder: no such folder*"])
    result = pytester.runpytest("--backend", "eager")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*gemmconf_suites = suites (*tox.ini): no such folder*"])
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "--suites", "no/such/folder"]) == pytest.ExitCode.USAGE_ERROR
    assert "gemmconf run: error: --suites: no such folder:" in capsys.readouterr().err


def test_the_suite_does_not_follow_rootdir(tmp_path):
    """The issue's case in the checkout: `--results /elsewhere/x.json` (space form) moves pytest's
    rootdir once x.json exists; the suite stays the same, and so does the outcome."""
    results = tmp_path / "elsewhere" / "x.json"
    results.parent.mkdir()
    command = [
        sys.executable,
        "-m",
        "pytest",
        "suites/dense/first.yaml",
        "--backend",
        "eager",
        "--no-isolate",
        "-k",
        "mm and fp32-64x64x64 and not addmm",
        "-q",
        "-p",
        "no:xdist",
        "--results",
        str(results),
    ]
    outcomes = []
    for _ in range(2):
        done = warm_python.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
        last = done.stdout.strip().splitlines()[-1].split(" in ")[0]
        # (less pytest's warning count: forked warm with gemmconf installed by `pip --target`, as
        # on the GPU machines, pytest warns that it cannot rewrite the imported plugin package)
        outcomes.append(re.sub(r", \d+ warnings?$", "", last))
        assert done.returncode == 0, done.stdout + done.stderr
        assert results.is_file()
    assert outcomes == ["3 passed, 71 deselected"] * 2


def test_explain_says_where_a_pass_is_borderline():
    """A torchao trial: `explain --run` printed `PASSED (err_ratio 4.29: ...)` for a pass at 1.4
    times its bar, with neither the bar nor that fresh draws had left it undecided."""
    from types import SimpleNamespace

    metrics = {"err_ratio": 4.29, "max_abs_err": 0.1, "max_ratio": 3.0, "borderline": 1}
    why = cli._why_passed(SimpleNamespace(raised=None, metrics=metrics))
    assert why.startswith(" (borderline: err_ratio 4.29 against a bar of 3: the backend's error")


def test_the_run_line_names_an_installed_suite_by_gemmconf_run_even_inside_the_folder(tmp_path):
    """A torchao trial (2026-12-02) kept its virtualenv inside the project folder: the item's
    run line read `python -m pytest venv/lib/python3.11/site-packages/gemmconf/suites/...`, a
    path that works only from there. An installed suite is `gemmconf run`'s; a checkout's suite
    under the current folder stays a pytest node id."""
    from gemmconf.ids import reproduce_command

    installed = tmp_path / "venv/lib/python3.11/site-packages/gemmconf/suites"
    checkout = tmp_path / "suites"
    for suites in (installed, checkout):
        (suites / "dense").mkdir(parents=True)
        (suites / "dense" / "first.yaml").write_text("")
    options = ["--backend", "eager", "--seed", "0"]
    ident, label = "first/mm[fp32-127x65x33-nn]", "eager"
    line = reproduce_command(
        installed / "dense" / "first.yaml", ident, label, options,
        suites=installed, explicit_suites=False, cwd=tmp_path,
    )  # fmt: skip
    assert line == (
        "gemmconf run 'dense/first.yaml::mm[fp32-127x65x33-nn@eager]' --backend eager --seed 0"
    )
    line = reproduce_command(
        checkout / "dense" / "first.yaml", ident, label, options,
        suites=checkout, explicit_suites=False, cwd=tmp_path,
    )  # fmt: skip
    assert line.startswith(
        "python -m pytest 'suites/dense/first.yaml::mm[fp32-127x65x33-nn@eager]'"
    )


def test_version_names_the_code_a_results_file_records(capsys):
    """A gemlite trial (2026-12-02): two trees of version 0.1.0 differed in their expectations
    rules, and `gemmconf --version` printed the usage. It prints the version and the code's
    hash, as a results file's `gemmconf` field records them."""
    from gemmconf.provenance import gemmconf_source

    with pytest.raises(SystemExit) as stopped:
        cli.main(["--version"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    source = gemmconf_source()
    assert out.startswith(f"gemmconf {source['version']} (") and f"code {source['code']}" in out
