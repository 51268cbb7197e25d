"""Tests of harness/codecheck.py: FileCheck blocks run in-process with diagnostics in the YAML."""

from __future__ import annotations

import pytest

from gemmconf.codecheck import (
    CheckBlock,
    check_artifacts,
    expecttest_accept_conflict,
    run_filecheck,
    validate_block,
)

TTGIR = """\
module attributes {"ttg.target" = "cuda:90"} {
  tt.func public @matmul_kernel(%a: !tt.ptr<f16>, %b: !tt.ptr<f16>) {
    %0 = ttng.tensormap_create %a
    %1 = tt.load %a : tensor<128x64xf16>
    %2 = tt.load %b : tensor<64x128xf16>
    %3 = ttng.warp_group_dot %1, %2, %acc : tensor<128x128xf32>
    tt.store %c, %3 : tensor<128x128xf32>
    tt.return
  }
  tt.func private @epilogue(%x: f32) {
    %4 = arith.maximumf %x, %zero : f32
    tt.return
  }
}
"""


def run(text: str, artifact: str = TTGIR, source: str = "suites/dense.yaml:42"):
    return run_filecheck(CheckBlock("ttgir", text, source), artifact, artifact_name="<ttgir>")


def test_passing_block_has_no_diagnostic():
    result = run(
        "CHECK: tt.func public @matmul_kernel\nCHECK: ttng.warp_group_dot\nCHECK: tt.store\n"
    )
    assert result.passed
    assert result.diagnostic == ""


def test_failure_points_at_the_yaml_line_and_where_the_scan_started():
    result = run(
        "CHECK: tt.func public @matmul_kernel\nCHECK: ttng.async_tma_copy_global_to_local\n"
    )
    assert not result.passed
    assert result.diagnostic.splitlines()[:6] == [
        # line 42 is the block's first line, so its second line is 43; col 8 = the pattern
        "suites/dense.yaml:43:8: error: CHECK: expected string not found in input",
        "CHECK: ttng.async_tma_copy_global_to_local",
        "       ^",
        "<ttgir>:2:32: note: scanning from here",
        "  tt.func public @matmul_kernel(%a: !tt.ptr<f16>, %b: !tt.ptr<f16>) {",
        "                               ^",
    ]


def test_column_of_an_indented_block_scalar_is_added():
    # "file:line:col": the text starts at column 7 (six spaces of YAML indentation)
    result = run("CHECK: tt.func\nCHECK: no_such_op\n", source="suites/dense.yaml:42:7")
    lines = result.diagnostic.splitlines()
    assert lines[0] == "suites/dense.yaml:43:14: error: CHECK: expected string not found in input"
    assert lines[1] == "      CHECK: no_such_op"
    assert lines[2] == "             ^"


def test_possible_intended_match_is_shown_for_a_near_miss():
    result = run("CHECK: ttng.warpgroup_dot\n")
    lines = result.diagnostic.splitlines()
    assert "<ttgir>:6:10: note: possible intended match here" in lines
    assert lines[lines.index("<ttgir>:6:10: note: possible intended match here") + 2] == (
        "         ^~~~~~~~~~~~~~~~~~~"
    )


def test_check_not_between_matches():
    ok = run(
        "CHECK: tt.func public @matmul_kernel\nCHECK-NOT: tt.dot\nCHECK: ttng.warp_group_dot\n"
    )
    assert ok.passed, ok.diagnostic
    bad = run(
        "CHECK: tt.func public @matmul_kernel\nCHECK-NOT: tt.load\nCHECK: ttng.warp_group_dot\n"
    )
    assert not bad.passed
    assert bad.diagnostic.splitlines() == [
        "suites/dense.yaml:43:12: error: CHECK-NOT: excluded string found in input",
        "CHECK-NOT: tt.load",
        "           ^",
        "<ttgir>:4:10: note: found here",
        "    %1 = tt.load %a : tensor<128x64xf16>",
        "         ^~~~~~~",
    ]


def test_check_not_after_the_last_match_reaches_the_end_of_an_unterminated_artifact():
    # filecheck 1.0.6 alone misses an excluded string in the last character of the input
    assert not run("CHECK: foo\nCHECK-NOT: x\n", artifact="foo x").passed
    assert run("CHECK: foo\nCHECK-NOT: y\n", artifact="foo x").passed


def test_check_dag_is_unordered_and_prints_nothing(capsys):
    ok = run(
        "CHECK: tt.func public\n"
        "CHECK-DAG: tt.load %b\n"
        "CHECK-DAG: tt.load %a\n"
        "CHECK-DAG: ttng.tensormap_create\n"
        "CHECK: ttng.warp_group_dot\n"
    )
    assert ok.passed, ok.diagnostic
    bad = run("CHECK-DAG: tt.load %b\nCHECK-DAG: ttng.async_tma_copy\nCHECK: tt.return\n")
    assert not bad.passed
    assert bad.diagnostic.startswith(
        "suites/dense.yaml:43:12: error: CHECK-DAG: expected string not found in input\n"
    )
    out, err = capsys.readouterr()
    assert out == ""  # filecheck 1.0.6 prints "moving to ..." during CHECK-DAG matching
    assert err == ""


def test_check_next():
    assert run("CHECK: tt.load %a\nCHECK-NEXT: tt.load %b\n").passed
    skipped_a_line = run("CHECK: tt.load %a\nCHECK-NEXT: ttng.warp_group_dot\n")
    assert not skipped_a_line.passed
    lines = skipped_a_line.diagnostic.splitlines()
    assert lines[0] == (
        "suites/dense.yaml:43:13: error: CHECK-NEXT: is not on the line after the previous match"
    )
    assert lines[3] == "<ttgir>:6:10: note: 'next' match was here"
    assert lines[6] == "<ttgir>:4:20: note: previous match ended here"
    same_line = run("CHECK: tt.load\nCHECK-NEXT: tensor<128x64xf16>\n")
    assert "CHECK-NEXT: is on the same line as previous match" in same_line.diagnostic
    missing = run("CHECK: tt.load %a\nCHECK-NEXT: tt.dot\n")
    assert "CHECK-NEXT: expected string not found in input" in missing.diagnostic


def test_check_same_and_count():
    assert run("CHECK: ttng.warp_group_dot\nCHECK-SAME: tensor<128x128xf32>\n").passed
    assert not run("CHECK: ttng.warp_group_dot\nCHECK-SAME: tt.store\n").passed
    assert run("CHECK-COUNT-2: tt.load\nCHECK-NOT: tt.load\n").passed
    three = run("CHECK-COUNT-3: tt.load\n")
    assert three.diagnostic.splitlines()[0] == (
        "suites/dense.yaml:42:16: error: CHECK-COUNT-3: expected string not found in input "
        "(2 out of 3)"
    )


def test_check_label_splits_the_input():
    assert run(
        "CHECK-LABEL: @matmul_kernel\nCHECK: warp_group_dot\n"
        "CHECK-LABEL: @epilogue\nCHECK: arith.maximumf\n"
    ).passed
    # the dot is in @matmul_kernel, not in the region after the @epilogue label
    wrong_region = run("CHECK-LABEL: @epilogue\nCHECK: warp_group_dot\n")
    assert not wrong_region.passed
    assert "error: CHECK: expected string not found in input" in wrong_region.diagnostic
    missing = run("CHECK-LABEL: @persistent_kernel\n")
    assert missing.diagnostic.startswith(
        "suites/dense.yaml:42:14: error: CHECK-LABEL: expected string not found in input"
    )


def test_variables_and_regexes():
    ok = run(
        "CHECK: %[[A:[0-9]+]] = tt.load %a\n"
        "CHECK: %[[B:[0-9]+]] = tt.load %b\n"
        "CHECK: ttng.warp_group_dot %[[A]], %[[B]], {{%[a-z]+}}\n"
    )
    assert ok.passed, ok.diagnostic
    swapped = run(
        "CHECK: %[[A:[0-9]+]] = tt.load %a\n"
        "CHECK: %[[B:[0-9]+]] = tt.load %b\n"
        "CHECK: ttng.warp_group_dot %[[B]], %[[A]]\n"
    )
    assert not swapped.passed
    assert swapped.diagnostic.startswith("suites/dense.yaml:44:8: error: CHECK: expected string")
    # a variable defined and used on one line (a back-reference)
    assert run(
        "CHECK: %[[V:[0-9]+]] = tt.load %a : tensor<128x64xf16>\n",
        artifact="%7 = tt.load %a : tensor<128x64xf16>\n",
    ).passed


def test_a_pattern_containing_com_is_not_a_comment():
    # with filecheck's default comment prefixes this line would be skipped as a comment
    result = run("CHECK: tt.call @COMPUTE_CHECKSUM\n")
    assert not result.passed
    assert "expected string not found" in result.diagnostic


def test_malformed_block_fails_with_a_located_diagnostic():
    result = run("CHECK: tt.func\nCHECK: {{(unclosed}}\n")
    assert not result.passed
    assert result.diagnostic.splitlines() == [
        "suites/dense.yaml:43:8: error: invalid regex {{(unclosed}}: missing ), unterminated "
        "subpattern at position 0",
        "CHECK: {{(unclosed}}",
        "       ^",
    ]


def test_block_without_directives_is_an_error_not_a_pass():
    result = run("COM: nothing to check yet\n")
    assert not result.passed
    assert result.diagnostic.startswith(
        "suites/dense.yaml:42:1: error: no check strings found with prefix 'CHECK:'"
    )


def test_empty_artifact_fails():
    result = run("CHECK-NOT: tt.dot\n", artifact="")
    assert not result.passed
    assert result.diagnostic.startswith("suites/dense.yaml:42:1: error: <ttgir> is empty")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("CHECK: a\nCHECK-NXT: b\n", "line 2, column 1: unknown FileCheck directive 'CHECK-NXT:'"),
        ("CHECK: a\nttng.warp_group_dot\n", "line 2, column 1: not a FileCheck directive"),
        ("", "line 1, column 1: no check strings found with prefix 'CHECK:'"),
        ("COM: only a comment\n", "line 1, column 1: no check strings found"),
        (
            "CHECK: a\n  CHECK-NOT:\n",
            "line 2, column 3: found empty check string with prefix 'CHECK-NOT:'",
        ),
        ("CHECK: {{[a-z}}\n", "line 1, column 8: invalid regex {{[a-z}}"),
        ("CHECK: a {{b\n", "line 1, column 10: Invalid regex block, no }}"),
        ("CHECK: [[X:a\n", "line 1, column 8: Invalid substitution block, no ]]"),
        ("CHECK: a\nCHECK: [[X]]\n", "line 2, column 8: undefined variable: X"),
        ("CHECK: [[X]] [[X:a]]\n", "line 1, column 8: undefined variable: X"),
        ("CHECK-NEXT: a\n", "line 1, column 1: found 'CHECK-NEXT' without previous 'CHECK:' line"),
        ("CHECK-DAG: a\nCHECK-SAME: b\n", "line 2, column 1: found 'CHECK-SAME' without previous"),
        ("CHECK-LABEL: @[[F:[a-z]+]]\n", "line 1, column 14: found 'CHECK-LABEL:' with variable"),
        (
            "CHECK: {{(?:x|y)}} [[V:[0-9]+]]\n",
            "line 1, column 20: filecheck would capture the wrong text into V",
        ),
        ("CHECK: [[#NUM:]]\nCHECK: [[#NUM+1]]\n", "line 2, column 8: numeric expressions"),
    ],
)
def test_validate_block_rejects_malformed_directives(text, expected):
    problem = validate_block(text)
    assert problem is not None
    assert problem.startswith(expected), problem


def test_validate_block_accepts_well_formed_blocks():
    assert (
        validate_block(
            "COM: the TMA path of the sm90 kernel\n"
            "# plain comments are allowed too\n"
            "CHECK-LABEL: @matmul_kernel\n"
            "CHECK: [[DESC:%[0-9]+]] = ttng.tensormap_create\n"
            "CHECK-DAG: tt.load %a\n"
            "CHECK-DAG: tt.load %b\n"
            "CHECK-NOT: tt.dot\n"
            "CHECK: ttng.warp_group_dot {{.*}} : tensor<{{[0-9]+}}x128xf32>\n"
            "CHECK-SAME: f32\n"
            "CHECK-NEXT: tt.store\n"
            "\n"
            "CHECK-COUNT-2: tt.return\n"
            "// CHECK: {{(a|b)}} [[R:[a-z]+]] [[R]] [[DESC]]\n"
        )
        is None
    )


def test_validate_block_with_source_gives_the_run_diagnostic():
    problem = validate_block("CHECK: a\nCHECK-NXT: b\n", source="suites/tma.yaml:10")
    assert problem is not None
    assert problem.splitlines() == [
        "suites/tma.yaml:11:1: error: unknown FileCheck directive 'CHECK-NXT:' (known: CHECK:, "
        "CHECK-NEXT:, CHECK-SAME:, CHECK-NOT:, CHECK-DAG:, CHECK-LABEL:, CHECK-EMPTY:, "
        "CHECK-COUNT-<n>:)",
        "CHECK-NXT: b",
        "^",
    ]


def test_check_artifacts_filters_by_target_and_names_missing_kinds():
    blocks = [
        CheckBlock("ttgir", "CHECK: tt.func\n", "suites/a.yaml:3"),
        CheckBlock("ttgir", "CHECK: ttng.warp_group_dot\n", "suites/a.yaml:6", target="sm90"),
        CheckBlock("ttgir", "CHECK: ttng.tc_gen5_mma\n", "suites/a.yaml:9", target="sm100"),
        CheckBlock("ptx", "CHECK: wgmma.mma_async\n", "suites/a.yaml:12", target="sm90"),
    ]
    artifacts = {"ttgir": TTGIR, "python": "def call(args): ..."}
    sm90 = check_artifacts(blocks, artifacts, target="sm90")
    assert [r.block.source for r in sm90] == [
        "suites/a.yaml:3",
        "suites/a.yaml:6",
        "suites/a.yaml:12",
    ]
    assert [r.passed for r in sm90] == [True, True, False]
    assert sm90[2].diagnostic == (
        "suites/a.yaml:12:1: error: no 'ptx' artifact to check (the backend gave: python, ttgir)"
    )
    sm100 = check_artifacts(blocks, artifacts, target="sm100")
    assert [r.block.source for r in sm100] == ["suites/a.yaml:3", "suites/a.yaml:9"]
    assert sm100[1].diagnostic.startswith("suites/a.yaml:9:8: error: CHECK: expected string")
    assert "<ttgir>:1:1: note: scanning from here" in sm100[1].diagnostic
    cpu = check_artifacts(blocks, {}, target=None)
    assert [r.block.source for r in cpu] == ["suites/a.yaml:3"]
    assert cpu[0].diagnostic.endswith("(the backend gave: none)")


def test_the_same_block_runs_many_times_with_independent_state():
    block = CheckBlock("ttgir", "CHECK: %[[A:[0-9]+]] = tt.load %a\nCHECK: dot %[[A]]\n", "s:1")
    for value in range(3):
        artifact = f"%{value} = tt.load %a\nwarp_group_dot %{value}\n"
        assert run_filecheck(block, artifact).passed
    assert not run_filecheck(block, "%1 = tt.load %a\nwarp_group_dot %2\n").passed


@pytest.mark.parametrize(
    "env, n, dist, conflict",
    [
        ({}, 2, "load", False),
        ({"EXPECTTEST_ACCEPT": ""}, 2, "load", False),
        ({"EXPECTTEST_ACCEPT": "1"}, None, None, False),
        ({"EXPECTTEST_ACCEPT": "1"}, 0, "no", False),
        ({"EXPECTTEST_ACCEPT": "1"}, 2, "loadfile", False),
        ({"EXPECTTEST_ACCEPT": "1"}, 2, "load", True),
        ({"EXPECTTEST_ACCEPT": "1"}, 2, None, True),  # xdist's default is load
        ({"EXPECTTEST_ACCEPT": "1"}, 4, "loadscope", True),
        ({"EXPECTTEST_ACCEPT": "1"}, 4, "each", True),
        ({"EXPECTTEST_ACCEPT": "0"}, "auto", "worksteal", True),  # expecttest accepts on any value
    ],
)
def test_expecttest_accept_conflict(env, n, dist, conflict):
    message = expecttest_accept_conflict(env, n, dist)
    assert (message is not None) == conflict
    if conflict:
        assert "--dist loadfile" in message and "-n 0" in message
