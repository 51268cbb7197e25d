"""What an outside user's first hour ran into and the run now says (issue 42, item 8): a diff of
two runs whose backends have different names, a node id pasted into a run of another backend,
and a pytest run in a folder with no suite."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from test_report_page import sample_document

from gemmconf.report.cli import main as report_main

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent
SUITE = """
suite: tiny
scenarios:
  - name: mm
    op: mm
    shape: {M: 8, N: 8, K: 8}
  - name: addmm
    op: addmm
    shape: {M: 8, N: 8, K: 16}
    axes:
      bias: [[M, N], [N]]
"""


def one_backend(document: dict, backend: str, name: str) -> dict:
    records = [{**r, "backend": name} for r in document["records"] if r["backend"] == backend]
    return {**document, "records": records, "backends": [name]}


def test_a_diff_of_runs_under_two_backend_names_says_so_and_as_compares_them(tmp_path, capsys):
    old = one_backend(sample_document(), "eager", "dynamo:inductor")
    new = copy.deepcopy(one_backend(sample_document(), "eager", "my-gemm"))
    broken = next(r for r in new["records"] if r["outcome"] == "passed")
    broken["outcome"], broken["reason"] = "failed", "Tensor-likes are not close!"
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    files = [str(tmp_path / "old.json"), str(tmp_path / "new.json")]

    assert report_main(["diff", *files]) == 2
    said = capsys.readouterr().err
    assert "share no backend" in said and "dynamo:inductor" in said and "my-gemm" in said
    assert "--as NAME" in said

    assert report_main(["diff", *files, "--as", "inductor-config"]) == 1
    table = capsys.readouterr().out
    assert f"{broken['id']}" in table and "1 regression(s)" in table


@pytest.fixture
def tiny(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.syspathinsert(TESTS)  # planted_backends
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "tiny.yaml").write_text(SUITE)
    pytester.makeini("[pytest]\ngemmconf_suites = suites\n")
    return pytester


def test_a_pasted_node_id_of_another_backend_names_the_mismatch(tiny):
    spec = "planted_backends:bias_broadcast_dropped"
    ran = tiny.runpytest("suites", "--backend", spec, "--no-isolate")
    assert ran.ret == pytest.ExitCode.TESTS_FAILED
    pasted = next(line.split()[1] for line in ran.outlines if line.startswith("FAILED "))
    assert pasted.endswith("@bias-broadcast-dropped]")

    again = tiny.runpytest(pasted, "--no-isolate")  # no --backend: the default, reference
    assert again.ret == pytest.ExitCode.USAGE_ERROR
    said = again.stderr.str()
    assert "the node id is of backend 'bias-broadcast-dropped'" in said
    assert "this run tests reference (the default: no --backend given)" in said
    assert f"add --backend {spec}" in said  # as the last results file ran it
    assert "not found" not in said

    # the id's own backend selected: it runs
    assert tiny.runpytest(pasted, "--backend", spec, "--no-isolate").ret == 1


def test_a_run_that_collects_no_suite_points_at_gemmconf_run(pytester):
    result = pytester.runpytest("--backend", "eager", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "gemmconf: no suite file was collected: pytest collects from the paths it is given*",
            "gemmconf: `gemmconf run --backend eager [[]pytest args[]]` runs the suite from any*",
        ]
    )


def test_the_backend_options_help_names_the_way_in_for_a_torch_compile_backend():
    """An OpenVINO trial (2026-11-30): `gemmconf run --help` listed built-ins, entry points and
    import paths, not `dynamo:NAME`, the way in for a registered torch.compile backend."""
    from gemmconf.plugin.run import OPTIONS

    (backend,) = (o for o in OPTIONS if o.name == "--backend")
    assert "dynamo:NAME[,key=value...]" in backend.help
    assert "gemmconf backends" in backend.help


def test_a_list_pattern_that_names_no_whole_id_says_what_it_matches(tmp_path, capsys):
    """An OpenVINO trial (2026-11-30): `gemmconf list -m cpu dense`, a folder `gemmconf run`
    takes, printed "0 instances" and nothing else."""
    from gemmconf.cli import main

    (tmp_path / "tiny.yaml").write_text(SUITE)
    assert main(["list", "--suites", str(tmp_path), "tiny"]) == 1
    err = capsys.readouterr().err
    assert "0 instances" in err
    assert "'tiny*' lists the ids that start so" in err
    assert main(["list", "--suites", str(tmp_path), "tiny*"]) == 0
    out, err = capsys.readouterr()
    assert out.split() == ["tiny/mm", "tiny/addmm[bias_MN]", "tiny/addmm[bias_N]"]
    assert "start so" not in err
