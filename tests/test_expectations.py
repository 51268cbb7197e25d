"""Expectation files: id patterns and patterns over record fields, the sources a backend's
entries come from, and a backend's declared refusals (`supports`)."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest
import torch

from gemmconf import capability, expectations
from gemmconf.scenario import ScenarioError, discover, load_suite

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent
SUITE = """
suite: tiny
scenarios:
  - name: mm
    op: mm
    shape: {M: 8, N: 8, K: 8}
    axes:
      dtype: [fp32, fp16]
      layout: [nn, nt]
  - name: addmm
    op: addmm
    shape: {M: 8, N: 8, K: 16}
    axes:
      bias: [[M, N], [N]]
  - name: mm_dyn
    op: mm
    shapes: [{M: 8, N: 8, K: 8}, {M: 9, N: 8, K: 8}, {M: 16, N: 8, K: 8}]
    compile: dynamic
"""


@pytest.fixture
def instances(tmp_path):
    (tmp_path / "tiny.yaml").write_text(SUITE)
    return load_suite(tmp_path / "tiny.yaml")


def table(
    tmp_path: Path, instances, body: str, backend: str = "b"
) -> expectations.ExpectationTable:
    directory = tmp_path / "expectations"
    directory.mkdir(exist_ok=True)
    (directory / f"{backend}.yaml").write_text(
        f"backend: {backend}\nexpectations:\n" + textwrap.indent(textwrap.dedent(body), "  ")
    )
    return expectations.load(directory, backend, instances, root=tmp_path)


def matched(table: expectations.ExpectationTable, instances) -> list[str]:
    return [i.id for i in instances if table.lookup(i.id) is not None]


def test_patterns_over_record_fields(tmp_path, instances):
    ids = [i.id for i in instances]
    everything_but_mm = table(tmp_path, instances, "- match: {not: {op: mm}}\n  reason: r\n")
    assert matched(everything_but_mm, instances) == ["tiny/addmm[bias_MN]", "tiny/addmm[bias_N]"]
    ops = table(
        tmp_path, instances, "- match: {op: [addmm, bmm], axes: {bias: bias_N}}\n  reason: r\n"
    )
    assert matched(ops, instances) == ["tiny/addmm[bias_N]"]
    fp16_nt = table(
        tmp_path, instances, "- match: {op: mm, dtype: fp16, axes: {layout: [nt]}}\n  reason: r\n"
    )
    assert matched(fp16_nt, instances) == ["tiny/mm[fp16-nt]"]
    dynamic = table(tmp_path, instances, "- match: {markers: [dynamic, fp8]}\n  reason: r\n")
    assert matched(dynamic, instances) == ["tiny/mm_dyn"]
    wildcard = table(
        tmp_path, instances, "- match: {id: 'tiny/mm[*]', not: {dtype: fp32}}\n  reason: r\n"
    )
    assert matched(wildcard, instances) == ["tiny/mm[fp16-nn]", "tiny/mm[fp16-nt]"]
    assert len(ids) == 7


def test_first_matching_entry_wins_and_text_names_the_entry(tmp_path, instances):
    narrow_then_wide = table(
        tmp_path,
        instances,
        """
        - match: "tiny/mm[fp16-nt]"
          status: skip
          reason: narrow
        - match: {op: mm}
          reason: wide
        """,
    )
    assert narrow_then_wide.lookup("tiny/mm[fp16-nt]").reason == "narrow"
    entry = narrow_then_wide.lookup("tiny/mm[fp32-nn]")
    assert entry.reason == "wide" and entry.pattern == "{op: mm}"
    assert entry.text() == "wide [expectations/b.yaml:7]"


def test_an_entry_on_some_hardware_holds_only_there(tmp_path, instances):
    """`hardware:` names where an expected failure was seen: elsewhere the next entry decides,
    or none (a pass there is no XPASS); outside a run (no hardware known) every entry holds."""
    on_sm90_then_anywhere = table(
        tmp_path,
        instances,
        """
        - match: {op: mm}
          hardware: [sm90, sm100]
          reason: padded strides on Hopper
        - {match: "tiny/mm[fp16-nt]", hardware: cpu, reason: no kernel on the CPU}
        """,
    )
    assert (
        on_sm90_then_anywhere.lookup("tiny/mm[fp32-nn]", "sm90").reason
        == "padded strides on Hopper"
    )
    assert on_sm90_then_anywhere.lookup("tiny/mm[fp32-nn]", "cpu") is None
    assert on_sm90_then_anywhere.lookup("tiny/mm[fp16-nt]", "cpu").reason == "no kernel on the CPU"
    assert on_sm90_then_anywhere.lookup("tiny/mm[fp16-nt]", "sm80") is None
    entry = on_sm90_then_anywhere.lookup("tiny/mm[fp32-nn]")  # outside a run
    assert entry.hardware == ("sm90", "sm100")
    assert entry.text() == "padded strides on Hopper [expectations/b.yaml:4; on sm90, sm100]"


def test_an_entry_for_some_torch_versions_holds_only_under_them(tmp_path, instances):
    """`torch:` is a version specifier: a dynamo limit of torch 2.11 is expected under 2.11, and
    a run under 2.13 judges the item on its own."""
    versions = table(
        tmp_path,
        instances,
        """
        - {match: {op: mm}, torch: "<2.13", hardware: sm90, reason: dynamo skips it}
        - {match: "tiny/mm[fp16-nt]", torch: ">=2.13", reason: a 2.13 regression}
        """,
    )
    assert versions.lookup("tiny/mm[fp32-nn]", "sm90", "2.11.0+cu130").reason == "dynamo skips it"
    assert versions.lookup("tiny/mm[fp32-nn]", "sm90", "2.13.0+cu130") is None
    assert versions.lookup("tiny/mm[fp32-nn]", "cpu", "2.11.0") is None
    assert versions.lookup("tiny/mm[fp16-nt]", "cpu", "2.13.0+cpu").reason == "a 2.13 regression"
    assert versions.lookup("tiny/mm[fp16-nt]", "cpu", "2.14.0.dev20261201").reason == (
        "a 2.13 regression"  # nightlies count as the version they lead to
    )
    entry = versions.lookup("tiny/mm[fp32-nn]")  # outside a run every entry holds
    assert entry.text() == "dynamo skips it [expectations/b.yaml:4; on sm90; torch <2.13]"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "- {match: {op: mm}, torch: 2.11, reason: r}\n",
            "expectations/b.yaml:3: torch: 2.11 is not a version specifier",
        ),
        ("- {match: {op: mm}, torch: '>>2', reason: r}\n", "'>>2' is not a version specifier"),
        (
            "- {match: {op: mm}, hardware: h100, reason: r}\n",
            "expectations/b.yaml:3: hardware: 'h100' is not a class of hardware, or a list of "
            "them: cpu, sm80, sm89, sm90, sm100, sm120",
        ),
        ("- {match: {op: mm}, hardware: [], reason: r}\n", "hardware: expected a class"),
        (
            "- match: {op: bmm}\n  reason: r\n",
            "expectations/b.yaml:3: match: pattern '{op: bmm}' matches no scenario instance",
        ),
        ("- match: {opp: mm}\n  reason: r\n", "expectations/b.yaml:3: match: unknown field 'opp'"),
        ("- match: {op: {x: 1}}\n  reason: r\n", "match: op: expected a value or a list"),
        ("- match: {not: mm}\n  reason: r\n", "match: not: expected a mapping"),
        ("- match: {}\n  reason: r\n", "match: needs an id pattern"),
    ],
)
def test_bad_field_patterns_are_errors_naming_file_and_line(tmp_path, instances, body, message):
    with pytest.raises(ScenarioError) as caught:
        table(tmp_path, instances, body)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "- {match: {op: mm}, status: either, reason: r}\n",
            "expectations/b.yaml:3: kind: status either needs the failure kind that is fine",
        ),
        (
            "- {match: {op: mm}, status: either, kind: wrong layot, reason: r}\n",
            "expectations/b.yaml:3: kind: 'wrong layot' is not a failure kind; known: wrong "
            "values, wrong layout",
        ),
        ("- {match: {op: mm}, kind: layout, reason: r}\n", "(did you mean 'wrong layout'?)"),
        (
            "- match: {op: mm}\n  status: either\n  kind: wrong layout\n  strict: false\n"
            "  reason: r\n",
            "expectations/b.yaml:6: strict: not allowed with status either: an either entry's "
            "pass is a plain pass",
        ),
        (
            "- {match: {op: mm}, status: skip, kind: crash, reason: r}\n",
            "kind: not allowed with status skip: a skipped item does not run",
        ),
        (
            "- {match: {op: mm}, kind: crash, message: 'stride(', reason: r}\n",
            "expectations/b.yaml:3: message: 'stride(' is not a regular expression",
        ),
        ("- {match: {op: mm}, status: flaky, reason: r}\n", "'flaky' is not one of xfail, skip"),
    ],
)
def test_bad_expected_failures_are_errors_naming_file_and_line(tmp_path, instances, body, message):
    with pytest.raises(ScenarioError) as caught:
        table(tmp_path, instances, body)
    assert message in str(caught.value)


def test_an_entry_with_a_kind_expects_only_that_failure(tmp_path, instances):
    loaded = table(
        tmp_path,
        instances,
        """\
        - match: {op: mm, dtype: fp32}
          status: either
          kind: wrong layout
          message: "strides .* are not row-major"
          reason: padded when the timing says so
        - {match: {op: addmm}, kind: crash, reason: r}
        - {match: {op: mm}, reason: anything}
        """,
    )
    either = loaded.lookup("tiny/mm[fp32-nt]")
    assert either.expects("wrong layout", "The output's strides (68, 1) are not row-major: ...")
    assert not either.expects("wrong layout", "The output's dtype is torch.float32")
    assert not either.expects("wrong values", "The output's strides (68, 1) are not row-major")
    assert either.text() == (
        "passes or fails as wrong layout: padded when the timing says so [expectations/b.yaml:3]"
    )
    crash = loaded.lookup("tiny/addmm[bias_N]")
    assert crash.expects("crash", "Backend raised") and not crash.expects("unsupported", "")
    assert crash.text() == "crash: r [expectations/b.yaml:8]"
    # a reason that already names its kind is not prefixed with it again
    said = dataclasses.replace(crash, reason="Crash: r")
    assert said.text() == "Crash: r [expectations/b.yaml:8]"
    assert loaded.lookup("tiny/mm[fp16-nn]").expects("timeout", "")


def test_yml_is_an_expectations_file_too_but_not_both(tmp_path, instances):
    directory = tmp_path / "expectations"
    directory.mkdir()
    (directory / "b.yml").write_text(
        "backend: b\nexpectations:\n  - {match: {op: addmm}, reason: r}\n"
    )
    loaded = expectations.load(directory, "b", instances, root=tmp_path)
    assert matched(loaded, instances) == ["tiny/addmm[bias_MN]", "tiny/addmm[bias_N]"]
    (directory / "b.yaml").write_text("backend: b\nexpectations: []\n")
    with pytest.raises(ScenarioError, match=r"both b\.yaml and b\.yml exist"):
        expectations.load(directory, "b", instances, root=tmp_path)


def test_non_utf8_expectations_file_is_an_error_naming_it(tmp_path, instances):
    path = tmp_path / "mine.yaml"
    path.write_bytes(b"backend: b\n# caf\xe9\n")
    with pytest.raises(ScenarioError, match=r"mine.yaml: file: cannot be read as UTF-8 text"):
        expectations.read(path)


# --- through pytest ----------------------------------------------------------------------------

PLANTED = "planted_backends:bias_broadcast_dropped"
REFUSING = "planted_backends:refuses_addmm"


@pytest.fixture
def suite(make_suite) -> pytest.Pytester:
    return make_suite(SUITE)


def records(pytester: pytest.Pytester) -> dict[tuple[str, str], dict]:
    document = json.loads((pytester.path / "reports" / "results.json").read_text())
    return {(r["id"], r["backend"]): r for r in document["records"]}


def test_expectations_option_adds_a_file_before_the_suites(suite):
    (suite.path / "mine.yaml").write_text(
        "backend: bias-broadcast-dropped\nexpectations:\n"
        "  - {match: {op: addmm, axes: {bias: bias_N}}, reason: drops broadcast biases}\n"
    )
    result = suite.runpytest(
        "suites", "--backend", PLANTED, "--no-isolate", "--expectations", "mine.yaml"
    )
    assert result.ret == pytest.ExitCode.OK
    found = records(suite)
    assert found[("tiny/addmm[bias_N]", "bias-broadcast-dropped")]["outcome"] == "xfailed"
    assert found[("tiny/addmm[bias_MN]", "bias-broadcast-dropped")]["outcome"] == "passed"


def test_expectations_file_for_a_backend_not_in_the_run_is_a_usage_error(suite):
    (suite.path / "other.yaml").write_text("backend: someone-else\nexpectations: []\n")
    result = suite.runpytest("suites", "--backend", "eager", "--expectations", "other.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*other.yaml: backend: --expectations *other.yaml: the file is for backend "
            "'someone-else', which this run does not test (backends: eager)*"
        ]
    )
    result = suite.runpytest("suites", "--backend", "eager", "--expectations", "missing.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*missing.yaml: file: no such file*"])


def test_an_entry_for_other_hardware_leaves_the_item_to_its_verdict(suite):
    """An expected failure seen only on a GPU class: on this machine's items (a CPU run, or a
    CPU item) the item runs to its own verdict, and passes; on its class it is expected."""
    here = "cpu" if not torch.cuda.is_available() else capability.detect().hardware_class
    elsewhere = "sm120" if here != "sm120" else "sm80"
    (suite.path / "mine.yaml").write_text(
        "backend: bias-broadcast-dropped\nexpectations:\n"
        f"  - {{match: {{op: addmm}}, hardware: {elsewhere}, reason: seen on {elsewhere}}}\n"
        "  - {match: {op: addmm}, torch: '<1.0', reason: seen under an old torch}\n"
        f"  - {{match: 'tiny/addmm[bias_N]', hardware: [{here}], torch: '>=2.0', reason: drops}}\n"
    )
    result = suite.runpytest(
        "suites", "--backend", PLANTED, "--no-isolate", "--expectations", "mine.yaml"
    )
    assert result.ret == pytest.ExitCode.OK
    found = records(suite)
    dropped = found[("tiny/addmm[bias_N]", "bias-broadcast-dropped")]
    assert dropped["outcome"] == "xfailed" and f"on {here}; torch >=2.0]" in dropped["details"]
    assert found[("tiny/addmm[bias_MN]", "bias-broadcast-dropped")]["outcome"] == "passed"


def test_an_either_entry_takes_a_pass_or_its_failure_and_nothing_else(suite):
    """Upstream behaviour that comes and goes with timing (inductor's pad_mm pads when its
    compile-time benchmark says so), expected by rule: a pass is a plain pass (no XPASS), a
    failure of the entry's kind and message is expected, and any other failure fails; an xfail
    that names a kind fails on another kind."""
    rules = (
        "  - match: {op: mm, dtype: fp32}\n"
        "    status: either\n"
        "    kind: wrong layout\n"
        "    message: strides .* are not row-major\n"
        "    reason: padded or not\n"
        "  - {match: {op: mm, dtype: fp16}, status: either, kind: wrong layout, message: dtype,"
        " reason: a dtype bug}\n"
    )
    xfail = "  - {match: {op: addmm}, kind: wrong values, reason: a values bug}\n"
    (suite.path / "eager.yaml").write_text(f"backend: eager\nexpectations:\n{rules}")
    (suite.path / "column-major-output.yaml").write_text(
        f"backend: column-major-output\nexpectations:\n{rules}{xfail}"
    )
    result = suite.runpytest(
        "suites",
        "--backend",
        "eager,planted_backends:column_major_output",
        "--no-isolate",
        "--expectations",
        "eager.yaml",
        "--expectations",
        "column-major-output.yaml",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = {key: r["outcome"] for key, r in records(suite).items()}
    assert {o for (_, label), o in outcomes.items() if label == "eager"} == {"passed"}
    found = {i: o for (i, label), o in outcomes.items() if label == "column-major-output"}
    assert found == {
        "tiny/mm[fp32-nn]": "xfailed",
        "tiny/mm[fp32-nt]": "xfailed",
        "tiny/mm_dyn": "xfailed",
        "tiny/mm[fp16-nn]": "failed",  # wrong layout, but its reason says nothing of a dtype
        "tiny/mm[fp16-nt]": "failed",
        "tiny/addmm[bias_MN]": "failed",  # an xfail for wrong values; it is a wrong layout
        "tiny/addmm[bias_N]": "failed",
    }
    expected = records(suite)[("tiny/mm[fp32-nn]", "column-major-output")]
    assert "Expected to fail: passes or fails as wrong layout: padded or not" in expected["details"]
    unexpected = records(suite)[("tiny/addmm[bias_N]", "column-major-output")]
    assert "Not the failure expected: wrong values: a values bug" in unexpected["details"]
    result.stdout.no_fnmatch_line("*XPASS*")


def test_a_later_entry_that_expects_the_failure_decides_where_the_first_expects_another(
    suite, capsys
):
    """An entry's kind and message take part in matching (a torchao trial: a wide `{dtype:
    bf16}, kind: wrong values` entry took the bf16 items that crash, and the narrower crash
    entry after it decided nothing): where the first matching entry expects another failure, a
    later one that expects the item's failure decides; where none does, the first still fails
    the item and says what it expected. A `match` may be a list of id patterns. `gemmconf
    expect` judges the results file the same way."""
    from gemmconf.cli import main

    (suite.path / "column-major-output.yaml").write_text(
        "backend: column-major-output\nexpectations:\n"
        "  - {match: {op: [mm, addmm]}, kind: wrong values, reason: a values bug}\n"
        "  - match: ['tiny/addmm[bias_N]', 'tiny/addmm[bias_MN]']\n"
        "    kind: wrong layout\n"
        "    message: not row-major\n"
        "    reason: a column-major output\n"
    )
    result = suite.runpytest(
        "suites",
        "--backend",
        "planted_backends:column_major_output",
        "--no-isolate",
        "--expectations",
        "column-major-output.yaml",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    found = {i: r for (i, _), r in records(suite).items()}
    assert {i: r["outcome"] for i, r in found.items()} == {
        "tiny/mm[fp32-nn]": "failed",
        "tiny/mm[fp32-nt]": "failed",
        "tiny/mm[fp16-nn]": "failed",
        "tiny/mm[fp16-nt]": "failed",
        "tiny/mm_dyn": "failed",
        "tiny/addmm[bias_MN]": "xfailed",
        "tiny/addmm[bias_N]": "xfailed",
    }

    assert (
        "Expected to fail: wrong layout: a column-major output"
        in (found["tiny/addmm[bias_N]"]["details"])
    )
    assert (
        "Not the failure expected: wrong values: a values bug"
        in (found["tiny/mm[fp32-nn]"]["details"])
    )
    capsys.readouterr()
    status = main(
        [
            "expect",
            str(suite.path / "reports" / "results.json"),
            "--expectations",
            str(suite.path / "column-major-output.yaml"),
        ]
    )
    out = capsys.readouterr().out
    assert status == 1 and "would change" not in out, out
    assert "2 xfailed" in out and "5 failed" in out, out


def test_a_refused_item_fails_as_unsupported_or_xfails_where_expected(suite):
    result = suite.runpytest("suites", "--backend", REFUSING, "--no-isolate", "-rf")
    found = records(suite)
    refused = found[("tiny/addmm[bias_N]", "refuses-addmm")]
    assert refused["outcome"] == "failed" and refused["kind"] == "unsupported"
    assert refused["reason"] == "unsupported by refuses-addmm: no addmm on this backend"
    assert "duration_s" in refused
    # it never ran: no metrics but what the harness measured of the process's memory (the host's
    # on every device) and, on a GPU, what the memory ledgers held for it
    memory = {"memory_estimate_bytes", "memory_admitted_bytes", "memory_admitted_by"}
    memory |= {"memory_peak_bytes", "memory_peak_allocated_bytes", "worker_max_rss_bytes"}
    memory |= {"host_memory_estimate_bytes", "host_memory_admitted_bytes"}
    memory |= {"host_memory_admitted_by", "host_memory_peak_bytes"}
    assert set(refused.get("metrics", {})) <= memory, refused["metrics"]
    assert found[("tiny/mm[fp16-nt]", "refuses-addmm")]["outcome"] == "passed"
    result.stdout.fnmatch_lines(["FAILED *addmm[[]bias_N@refuses-addmm[]] - unsupported by*"])
    (suite.path / "suites" / "expectations").mkdir()
    (suite.path / "suites" / "expectations" / "refuses-addmm.yaml").write_text(
        "backend: refuses-addmm\nexpectations:\n"
        "  - {match: {op: addmm}, reason: addmm is not implemented yet}\n"
    )
    result = suite.runpytest("suites", "--backend", REFUSING, "--no-isolate")
    assert result.ret == pytest.ExitCode.OK
    found = records(suite)
    assert found[("tiny/addmm[bias_N]", "refuses-addmm")]["outcome"] == "xfailed"
    assert found[("tiny/addmm[bias_N]", "refuses-addmm")]["kind"] == "unsupported"


def test_supports_must_return_none_or_a_reason():
    from gemmconf.backends.base import UnsupportedResult, refusal

    class Says:
        name = "says"

        def __init__(self, answer):
            self.answer = answer

        def supports(self, instance):
            return self.answer

    assert refusal(Says(None), None) is None and refusal(object(), None) is None
    assert refusal(Says("no fp8"), None) == "no fp8"
    with pytest.raises(UnsupportedResult, match="it returned False"):
        refusal(Says(False), None)


def test_the_suites_file_replaces_the_packages_and_given_files_come_first(tmp_path, instances):
    shipped = tmp_path / "shipped.yaml"
    shipped.write_text("backend: b\nexpectations:\n  - {match: {op: addmm}, reason: shipped}\n")
    directory = tmp_path / "expectations"
    directory.mkdir()
    packaged = [(shipped, "backend 'b' (its 'expectations' attribute)")]
    only_shipped = expectations.load(directory, "b", instances, tmp_path, packaged=packaged)
    assert only_shipped.lookup("tiny/addmm[bias_N]").reason == "shipped"
    (tmp_path / "given.yaml").write_text(
        "backend: b\nexpectations:\n  - {match: 'tiny/addmm[bias_N]', reason: given}\n"
    )
    given = expectations.read(tmp_path / "given.yaml", tmp_path)
    both = expectations.load(directory, "b", instances, tmp_path, extra=[given], packaged=packaged)
    assert both.lookup("tiny/addmm[bias_N]").reason == "given"
    assert both.lookup("tiny/addmm[bias_MN]").reason == "shipped"
    (directory / "b.yaml").write_text(
        "backend: b\nexpectations:\n  - {match: {op: mm}, reason: suite}\n"
    )
    suite = expectations.load(directory, "b", instances, tmp_path, packaged=packaged)
    assert suite.lookup("tiny/addmm[bias_MN]") is None  # the shipped file is not read
    assert suite.lookup("tiny/mm[fp16-nt]").reason == "suite"
    shipped.unlink()
    (directory / "b.yaml").unlink()
    with pytest.raises(ScenarioError, match="declares this file; it is missing"):
        expectations.load(directory, "b", instances, tmp_path, packaged=packaged)


def test_every_shipped_expectations_file_names_only_items_of_the_suite():
    """CI runs eager and the reference only, so a scenario renamed or dropped would leave an
    entry of another backend's file (inductor's, say) matching nothing: an error at start-up
    for the first outside user who runs that backend. Each shipped file is checked here."""
    suites = TESTS.parent / "suites"
    facts = [
        expectations.Facts.of(instance)
        for path in discover([suites], TESTS.parent)  # the suite files, as a run finds them
        for instance in load_suite(path)
    ]
    files = sorted(
        f for f in (suites / "expectations").iterdir() if f.suffix in expectations.SUFFIXES
    )
    assert {"eager.yaml", "reference.yaml", "inductor.yaml"} <= {f.name for f in files}
    for path in files:
        expectations.validate(expectations.read(path), facts)
