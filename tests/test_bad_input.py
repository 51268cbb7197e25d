"""Bad input loses nothing: usage errors keep the previous results, bad --results paths are
usage errors naming the path, unreadable results files are clear errors, runaway axes stop at a
limit naming file:line, and *.yml is a suite file like *.yaml everywhere."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import warm_python
from planted_backends import K_TAIL_COMPILER

from gemmconf import cli
from gemmconf.plugin.recording import suite_version
from gemmconf.report.cli import main as report_main
from gemmconf.scenario import ScenarioError, load_suite

pytest_plugins = ["pytester"]

SUITE = """
suite: tiny
scenarios:
  - name: mm
    op: mm
    shape: {M: 8, N: 8, K: 8}
    axes:
      dtype: [fp32, fp16]
"""


@pytest.fixture
def suite(make_suite) -> pytest.Pytester:
    return make_suite(SUITE)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("suites", "--backend", "eager", "--no-isolate", *args)


def test_a_second_run_on_a_results_file_being_written_is_a_usage_error(suite):
    """Two shards started side by side in one folder used to share reports/results.json: each
    unlinked the other's .partial and the last to finish wrote the file. The second now stops
    before anything runs, naming the first's command; the first's file is untouched."""
    from gemmconf.report.results import ResultsWriter

    writing = ResultsWriter(suite.path / "reports" / "results.json", run={"command": "shard 1/2"})
    writing.start()
    try:
        result = run(suite, "--shard", "2/2")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["*--results reports/results.json: another run is writing it now (shard 1/2); give*"]
        )
        assert writing.partial.read_text().count("\n") == 1  # its header, as it wrote it
        assert run(suite, "--shard", "2/2", "--results", "reports/shard2.json").ret == 0
    finally:
        writing.finish(complete=False, exit_status=2)
    assert run(suite).ret == pytest.ExitCode.OK


def test_a_usage_error_keeps_the_previous_results(suite):
    assert run(suite).ret == pytest.ExitCode.OK
    results = suite.path / "reports" / "results.json"
    before = results.read_bytes()
    (suite.path / "suites" / "bad.yaml").write_text(
        "scenarios:\n  - name: x\n    op: mm\n    shape: {M: 1, N: 1, K: 1}\n    dtpye: fp16\n"
    )
    assert run(suite).ret == pytest.ExitCode.USAGE_ERROR
    assert results.read_bytes() == before
    (suite.path / "suites" / "bad.yaml").unlink()
    assert run(suite, "--seed", "x").ret == pytest.ExitCode.USAGE_ERROR
    assert run(suite, "--backend", "no-such").ret == pytest.ExitCode.USAGE_ERROR
    assert results.read_bytes() == before
    # a selection of nothing is no run either
    nothing = run(suite, "-k", "no_item_has_this_name")
    assert nothing.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    nothing.stdout.fnmatch_lines(["gemmconf: no results written (no item ran); *is left as it was"])
    assert results.read_bytes() == before and not list(results.parent.glob("*.partial"))


def test_with_xdist_a_usage_error_is_shown_and_keeps_the_previous_results(suite):
    """xdist's controller collects nothing: a bad expectations entry failed in the workers
    (`INTERNALERROR ... no active workers`, exit 3, the cause unshown), and a selection of
    nothing replaced the previous results with an empty, incomplete file. One xdist worker is
    enough for both (a controller and a worker that collects), and starts two fewer processes."""
    assert run(suite).ret == pytest.ExitCode.OK
    results = suite.path / "reports" / "results.json"
    before = results.read_bytes()
    (suite.path / "eager.yaml").write_text(
        "backend: eager\nexpectations:\n  - match: tiny/mm[bf16]\n    reason: no such item\n"
    )
    bad = warm_python.runpytest(
        suite, "suites", "--backend", "eager", "-n", "1", "--expectations", "eager.yaml"
    )
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*eager.yaml:3: match: pattern 'tiny/mm[[]bf16[]]' matches no*"])
    nothing = warm_python.runpytest(
        suite, "suites", "--backend", "eager", "-n", "1", "-k", "no_item_has_this_name"
    )
    assert nothing.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert results.read_bytes() == before and not list(results.parent.glob("*.partial"))
    assert warm_python.runpytest(suite, "suites", "--backend", "eager", "-n", "1").ret == 0
    assert results.read_bytes() != before  # a run that ran replaces it


def unwritable_folder(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        folder = tmp_path / "locked"
        folder.mkdir()
        folder.chmod(0o500)
        return folder
    return Path("/sys")  # root may write anywhere else; /sys refuses even root


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("nope/deeper/r.json", "--results nope/deeper/r.json: folder */nope does not exist*"),
        ("tox.ini/r.json", "--results tox.ini/r.json: */tox.ini is not a folder"),
        ("suites", "--results suites: */suites is a folder; give a file name*"),
        ("UNWRITABLE/r.json", "--results */r.json: cannot write in *"),
    ],
)
def test_a_bad_results_path_is_a_usage_error_naming_it(suite, tmp_path, given, message):
    given = given.replace("UNWRITABLE", str(unwritable_folder(tmp_path)))
    result = run(suite, "--results", given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert not (suite.path / "nope").exists() and not (suite.path / "reports").exists()


def test_only_the_default_reports_folder_is_made(suite):
    assert run(suite, "--results", "reports/mine.json").ret == pytest.ExitCode.OK
    assert (suite.path / "reports" / "mine.json").is_file()
    assert run(suite, "--results", "elsewhere/mine.json").ret == pytest.ExitCode.USAGE_ERROR


def test_a_non_utf8_results_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "results.json"
    bad.write_bytes(b'{"format": "gemmconf-results", "note": "caf\xe9"}')
    assert report_main(["diff", str(bad), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: not UTF-8 text (byte 0xe9 at offset 43), so not a gemmconf results file" in err
    assert "Traceback" not in err
    assert report_main(["html", str(bad), "-o", str(tmp_path / "page.html")]) == 2
    assert report_main(["merge", str(bad), "-o", str(tmp_path / "m.json")]) == 2
    assert "not UTF-8 text" in capsys.readouterr().err
    assert report_main(["diff", str(tmp_path), str(bad)]) == 2
    assert f"{tmp_path}: cannot be read" in capsys.readouterr().err


RUNAWAY = """
suite: big
scenarios:
  - name: ok
    op: mm
    shape: {M: 8, N: 8, K: 8}
  - name: grid
    op: mm
    shape: {M: 8, N: 8, K: 8}
    axes:
"""


def runaway(*sizes: int) -> str:
    """A scenario with one named case axis per size (`{id: v0}`, ...): the product of `sizes`."""
    axes = "".join(
        f"      c{a}: [{', '.join(f'{{id: v{v}}}' for v in range(size))}]\n"
        for a, size in enumerate(sizes)
    )
    return RUNAWAY + axes


def test_a_scenario_expanding_past_the_limit_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(runaway(10, 10, 10, 10, 10, 10))  # 10^6 instances
    started = time.monotonic()
    with pytest.raises(ScenarioError) as caught:
        load_suite(path, root=tmp_path)
    assert time.monotonic() - started < 5  # refused before expanding
    assert str(caught.value).startswith(
        "big.yaml:10: axes: the axes expand to 1,000,000 instances, past the limit of 100,000 "
        "per scenario"
    )
    path.write_text(runaway(10, 10, 12))
    assert len(load_suite(path, root=tmp_path, max_instances=1200)) == 1201


def test_max_items_raises_the_limit(suite):
    (suite.path / "suites" / "big.yaml").write_text(runaway(3, 4))  # 12 instances
    result = run(suite, "--max-items", "10", "--co", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*suites/big.yaml:10: axes: the axes expand to 12 instances*"])
    result = run(suite, "--max-items", "12", "--co", "-q")
    result.stdout.fnmatch_lines(["15 tests collected*"])


def test_yml_is_a_suite_file_everywhere(suite, capsys):
    (suite.path / "suites" / "more.yml").write_text(SUITE.replace("tiny", "more"))
    (suite.path / "suites" / "expectations").mkdir()
    (suite.path / "suites" / "expectations" / "eager.yml").write_text(
        "backend: eager\nexpectations:\n"
        "  - {match: 'more/mm[fp16]', status: skip, reason: only in the .yml file}\n"
    )
    result = run(suite)  # the expectation's pattern matches an instance of more.yml only
    result.assert_outcomes(passed=3, skipped=1)
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(suite.path)
        assert cli.main(["list", "more/*", "--suites", "suites"]) == 0
    assert capsys.readouterr().out.split() == ["more/mm[fp32]", "more/mm[fp16]"]
    before = suite_version(suite.path / "suites")
    (suite.path / "suites" / "more.yml").write_text(SUITE.replace("tiny", "more") + "\n# edit\n")
    assert suite_version(suite.path / "suites") != before


def test_results_json_of_a_run_is_still_utf8_json(suite):
    assert run(suite).ret == pytest.ExitCode.OK
    document = json.loads((suite.path / "reports" / "results.json").read_text(encoding="utf-8"))
    assert document["complete"] is True


COMPILERS = (
    K_TAIL_COMPILER  # compile_graph: a compiler function, as torch.compile takes one
    + """

def relax_like():  # a factory of a compiler, as apache-tvm's `relax_dynamo()`
    return lambda gm, example_inputs: gm.forward


class Sized:  # a factory that needs an argument
    def __init__(self, size):
        self.size = size


def anything(*args):  # takes any arguments: a factory, called with none
    return lambda *args: None
"""
)


def test_a_torch_compile_compiler_given_as_a_backend_runs_under_its_spec(make_suite, monkeypatch):
    """`--backend pkg:attr` naming a torch.compile backend (`(gm, example_inputs) -> callable`), or
    a factory of one, runs through DynamoBackend under the spec as its name: the K-tail bug
    of the compiler function is charged to it and named, and the pass-through's passes are
    PyTorch's. Their reports, in this process, list no torch trace-log lines. Until
    2026-12-01 the first was a TypeError from our call of it with no arguments (an
    INTERNALERROR) and the second an error telling how to wrap it."""
    from gemmconf.backends import resolve
    from gemmconf.backends.dynamo import DynamoBackend

    suite = make_suite()  # the tiny suite: mm at K = 8 and K = 33
    (suite.path / "my_compilers.py").write_text(COMPILERS)
    monkeypatch.syspath_prepend(str(suite.path))
    for spec in ("my_compilers:relax_like", "my_compilers:compile_graph"):
        backend = resolve(spec)
        assert isinstance(backend, DynamoBackend) and backend.name == spec
    both = "my_compilers:relax_like,my_compilers:compile_graph"
    result = suite.runpytest("suites", "--backend", both, "--no-isolate", "--tb=short")
    # run in this process, the failures' reports hold no torch trace log pytest captured
    assert "torch.__trace" not in result.stdout.str()
    records = json.loads((suite.path / "reports" / "results.json").read_text())["records"]
    outcomes = {(r["backend"], r["id"]): r for r in records}
    relaxed = [r for (b, _), r in outcomes.items() if b == "my_compilers:relax_like"]
    said = {(r["outcome"], r.get("computed_by")) for r in relaxed}
    assert ("passed", "pytorch") in said and said <= {
        ("passed", "pytorch"),
        ("skipped", None),  # mm_sm90, below sm90
    }, said
    dropped = [r for (b, _), r in outcomes.items() if b == "my_compilers:compile_graph"]
    failed = [r for r in dropped if r["outcome"] == "failed"]
    assert failed and result.ret == pytest.ExitCode.TESTS_FAILED, result.stderr.str()[-3000:]
    assert {r["id"] for r in failed} == {"tiny/mm[fp32-17x9x33]", "tiny/mm[fp16-17x9x33]"}
    assert all("A K tail dropped" in r["details"] for r in failed), failed[0]["details"]


def test_a_backend_whose_import_or_making_raises_is_a_usage_error_naming_where(suite):
    """A `module:attr` backend whose module raises while imported (lightning-thunder 0.2.6 on
    torch 2.13: `AttributeError: ... 'align_as'`, a trial of 2026-12-01) or whose factory
    raises: exit 4 naming the backend, the error and its line, where both were an INTERNALERROR
    (exit 3) with pytest's traceback."""
    (suite.path / "bad.py").write_text('import os\nraise RuntimeError("no align_as here")\n')
    (suite.path / "boom.py").write_text(
        "class Boom:\n    def __init__(self):\n        raise ValueError('no device')\n"
    )
    for spec, said in (
        ("bad:backend", "importing 'bad' raised RuntimeError: no align_as here (at *bad.py:2)"),
        ("boom:Boom", "making it, Boom() raised ValueError: no device (at *boom.py:3)"),
    ):
        result = warm_python.runpytest(suite, "suites", "--backend", spec, "-p", "no:xdist")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stderr.str()[-2000:]
        result.stderr.fnmatch_lines([f"*--backend: backend '{spec}': {said}*"])
        assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


def test_a_backend_factory_that_needs_arguments_is_a_usage_error_naming_its_signature(
    tmp_path, monkeypatch
):
    from gemmconf.backends import UnknownBackendError, resolve

    (tmp_path / "my_compilers.py").write_text(COMPILERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UnknownBackendError, match=r"Sized\(size\) needs arguments"):
        resolve("my_compilers:Sized")
    with pytest.raises(UnknownBackendError) as raised:  # what a factory gave that is no backend
        resolve("my_compilers:anything")
    said = str(raised.value)
    assert "lacks name, availability, compile" in said
    assert "dynamo:NAME" in said and "dynamo_backend(compiler, name=...)" in said
