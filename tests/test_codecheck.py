"""Tests of harness/codecheck.py: blocks run by a FileCheck program, diagnostics in the YAML.

Matching tests run on every engine this machine has (LLVM FileCheck from the triton wheel, the
`filecheck` package); tests of LLVM's own diagnostics and load-time syntax errors skip without it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import warm_python

from gemmconf import codecheck, kinds
from gemmconf.codecheck import (
    IR_SPELLINGS,
    CheckBlock,
    NotRunHere,
    available_engines,
    check_artifacts,
    default_engine,
    expand,
    expecttest_accept_conflict,
    run_filecheck,
    split_by_target,
    validate_block,
)
from gemmconf.outcome import describe
from gemmconf.runner import run_item
from gemmconf.scenario import discover, load_suite

ROOT = Path(__file__).resolve().parents[1]
SM100_NOT_RUN = (
    "checks sm100 code; this run checks sm90 code (an sm100 GPU runs it, or --target-arch sm100 "
    "with a backend that cross-compiles)"
)
ENGINES = {engine.name: engine for engine in available_engines()}
LLVM = ENGINES.get("llvm-filecheck")
needs_llvm = pytest.mark.skipif(LLVM is None, reason="the triton wheel here ships no FileCheck")

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


@pytest.fixture(params=sorted(ENGINES))
def engine(request) -> codecheck.Engine:
    return ENGINES[request.param]


def run(text: str, artifact: str = TTGIR, source="suites/dense.yaml:42", engine=None):
    block = CheckBlock("ttgir", text, source)
    return run_filecheck(block, artifact, artifact_name="<ttgir>", engine=engine)


# (block, passes) over TTGIR: the LLVM syntax the suites use, judged alike by every engine
SEMANTICS = [
    ("CHECK: tt.func public @matmul_kernel\nCHECK: ttng.warp_group_dot\nCHECK: tt.store\n", True),
    ("CHECK: tt.func public @matmul_kernel\nCHECK: ttng.async_tma_copy_global_to_local\n", False),
    ("CHECK: ttng.warp_group_dot\nCHECK: tt.load\n", False),  # order matters
    ("CHECK: tt.func public\nCHECK-NOT: tt.dot\nCHECK: ttng.warp_group_dot\n", True),
    ("CHECK: tt.func public\nCHECK-NOT: tt.load\nCHECK: ttng.warp_group_dot\n", False),
    ("CHECK-NOT: ttng.async_tma_copy_global_to_local\n", True),
    ("CHECK: tt.load %a\nCHECK-NEXT: tt.load %b\n", True),
    ("CHECK: tt.load %a\nCHECK-NEXT: ttng.warp_group_dot\n", False),
    ("CHECK: ttng.warp_group_dot\nCHECK-SAME: tensor<128x128xf32>\n", True),
    ("CHECK: ttng.warp_group_dot\nCHECK-SAME: tt.store\n", False),
    ("CHECK-COUNT-2: tt.load\nCHECK-NOT: tt.load\n", True),
    ("CHECK-COUNT-3: tt.load\n", False),
    ("CHECK: tt.func\nCHECK-DAG: tt.load %b\nCHECK-DAG: tt.load %a\nCHECK: warp_group\n", True),
    ("CHECK-DAG: tt.load %b\nCHECK-DAG: ttng.async_tma_copy\nCHECK: tt.return\n", False),
    ("CHECK-LABEL: @matmul_kernel\nCHECK: warp_group_dot\nCHECK-LABEL: @epilogue\n", True),
    ("CHECK-LABEL: @epilogue\nCHECK: warp_group_dot\n", False),  # in the other function
    ("CHECK: %[[A:[0-9]+]] = tt.load %a\nCHECK: warp_group_dot %[[A]], {{%[a-z0-9]+}}\n", True),
    ("CHECK: %[[A:[0-9]+]] = tt.load %a\nCHECK: %[[B:[0-9]+]] = tt.load %b\n"
     "CHECK: ttng.warp_group_dot %[[B]], %[[A]]\n", False),
    ("CHECK: %{wgmma}\nCHECK-NOT: %{tma_load}\n", True),
    ("CHECK: %{tensormap_create}\nCHECK: %{tma_load}\n", False),
    ("CHECK: tt.call @COMPUTE_CHECKSUM\n", False),  # "COM" inside a pattern is no comment
    ("COM: a comment\n# another one\nCHECK: tt.return\n", True),
]  # fmt: skip


@pytest.mark.parametrize("text, passes", SEMANTICS)
def test_every_engine_judges_the_suites_syntax_alike(engine, text, passes):
    result = run(text, engine=engine)
    assert result.passed == passes, result.diagnostic
    assert result.engine == engine.name
    assert (result.diagnostic == "") == passes


def test_a_failure_names_the_suite_file_and_line_in_every_engine(engine):
    result = run("CHECK: tt.func public\nCHECK: %{tma_load}\n", engine=engine)
    assert not result.passed
    # line 42 is the block's first line, so the failing second line is 43
    assert result.diagnostic.startswith("suites/dense.yaml:43:"), result.diagnostic
    assert "error:" in result.diagnostic.splitlines()[0]


@needs_llvm
def test_llvm_diagnostic_is_filecheck_own_output_at_the_suite_line():
    result = run(
        "CHECK: tt.func public @matmul_kernel\nCHECK: %{tma_load}\n",
        source="suites/tma/codecheck.yaml:52:13",
        engine=LLVM,
    )
    # FileCheck prints the check file as laid out (indentation folded to one blank, so the
    # column is FileCheck's own) with the substitution expanded, then where it scanned from.
    assert result.diagnostic.splitlines()[:6] == [
        "suites/tma/codecheck.yaml:53:9: error: CHECK: expected string not found in input",
        " CHECK: ttng.async_tma_copy_global_to_local",
        "        ^",
        "<ttgir>:2:31: note: scanning from here",
        " tt.func public @matmul_kernel(%a: !tt.ptr<f16>, %b: !tt.ptr<f16>) {",
        "                              ^",
    ]
    assert "<ttgir>:3:7: note: possible intended match here" in result.diagnostic


@needs_llvm
def test_llvm_check_not_shows_what_it_found():
    bad = run("CHECK: tt.func public\nCHECK-NOT: tt.load\nCHECK: warp_group\n", engine=LLVM)
    assert bad.diagnostic.splitlines() == [
        "suites/dense.yaml:43:12: error: CHECK-NOT: excluded string found in input",
        "CHECK-NOT: tt.load",
        "           ^",
        "<ttgir>:4:7: note: found here",
        " %1 = tt.load %a : tensor<128x64xf16>",
        "      ^~~~~~~",
    ]


@pytest.mark.parametrize(
    "source, shown",
    [
        ("/abs/suites/x.yaml:5:3", "/abs/suites/x.yaml:5:"),
        ("../elsewhere/x.yaml:5", "../elsewhere/x.yaml:5:"),
        ("tests/test_cutlass_backend.py::ptx", "tests/test_cutlass_backend.py::ptx:1:"),
    ],
)
def test_any_source_path_is_shown_as_given(engine, source, shown):
    result = run("CHECK: no_such_op\n", source=source, engine=engine)
    assert result.diagnostic.startswith(shown), result.diagnostic
    assert "gemmconf-filecheck-" not in result.diagnostic  # no temporary path leaks


def test_the_same_block_runs_many_times_with_independent_state(engine):
    block = CheckBlock("ttgir", "CHECK: %[[A:[0-9]+]] = tt.load %a\nCHECK: dot %[[A]]\n", "s:1")
    for value in range(3):
        artifact = f"%{value} = tt.load %a\nwarp_group_dot %{value}\n"
        assert run_filecheck(block, artifact, engine=engine).passed
    assert not run_filecheck(block, "%1 = tt.load %a\nwarp_group_dot %2\n", engine=engine).passed


def test_check_not_reaches_the_end_of_an_unterminated_artifact(engine):
    assert not run("CHECK: foo\nCHECK-NOT: x\n", artifact="foo x", engine=engine).passed
    assert run("CHECK: foo\nCHECK-NOT: y\n", artifact="foo x", engine=engine).passed


def test_engines_print_nothing_into_the_test_output(engine, capfd):
    run("CHECK-DAG: tt.load %b\nCHECK-DAG: nothing\n", engine=engine)
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")  # the package prints "moving to ..." during -DAG matching


def test_a_long_engine_diagnostic_is_cut():
    package = ENGINES["filecheck-package"]
    artifact = "".join(f"line {i}\n" for i in range(500))
    result = run("CHECK-DAG: line 1\nCHECK-DAG: nothing\n", artifact=artifact, engine=package)
    lines = result.diagnostic.splitlines()
    assert len(lines) == codecheck._MAX_LINES + 1
    assert lines[-1].endswith("more lines of filecheck-package cut]")


def test_empty_artifact_fails_naming_the_suite_line():
    result = run("CHECK-NOT: tt.dot\n", artifact="")
    assert not result.passed
    assert result.diagnostic == (
        "suites/dense.yaml:42: error: <ttgir> is empty: the backend generated no ttgir code "
        "to check"
    )


def test_a_malformed_block_fails_at_run_time_too(engine):
    result = run("CHECK: tt.func\nCHECK-NXT: b\n", engine=engine)
    assert not result.passed
    assert result.diagnostic.startswith("suites/dense.yaml:43: error: unknown directive")


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("CHECK: a\nCHECK-NXT: b\n", 43, "unknown directive 'CHECK-NXT:' in 'CHECK-NXT: b'"),
        ("CHECK: a\nCHECKNEXT: b\n", 43, "unknown directive 'CHECKNEXT:'"),
        ("CHECK: a\nttng.warp_group_dot\n", 43, "not a FileCheck directive"),
        ("", 42, "no check strings found with prefix 'CHECK:'"),
        ("COM: only a comment\n", 42, "no check strings found"),
        ("COM: CHECK: commented out\n", 42, "no check strings found"),
        ("CHECK: a\nCHECK: %{wgmm}\n", 43, "unknown substitution %{wgmm} (did you mean %{wgmma}?)"),
        ("CHECK: %{mma_sync}\n", 42, "%{mma_sync} is a ptx spelling (mma.sync); the block checks"),
    ],
)
def test_pre_check_rejects_what_filecheck_would_ignore(engine, text, line, message):
    problem = validate_block(text, source="suites/x.yaml:42:7", artifact="ttgir", engine=engine)
    assert problem is not None
    assert problem.where == f"suites/x.yaml:{line}"
    assert problem.message.startswith(message), problem.message
    assert str(problem).startswith(f"suites/x.yaml:{line}: error: {message}")


@needs_llvm
@pytest.mark.parametrize(
    "text, located",
    [
        ("CHECK: a\n  CHECK-NOT:\n", "suites/x.yaml:43:12: error: found empty check string"),
        ("CHECK: {{[a-z}}\n", "suites/x.yaml:42:10: error: invalid regex"),
        ("CHECK: a {{b\n", "suites/x.yaml:42:10: error: found start of regex string with no end"),
        ("CHECK: [[X:a\n", "suites/x.yaml:42:8: error: Invalid substitution block, no ]] found"),
        ("CHECK-NEXT: a\n", "suites/x.yaml:42:1: error: found 'CHECK-NEXT' without previous"),
        ("CHECK-LABEL: @[[F:[a-z]+]]\n", "suites/x.yaml:42:1: error: found 'CHECK-LABEL:' with"),
        ("CHECK: {{(?:x|y)}}\n", "suites/x.yaml:42:10: error: invalid regex"),  # POSIX ERE
    ],
)
def test_llvm_rejects_syntax_errors_at_load_time(text, located):
    problem = validate_block(text, source="suites/x.yaml:42", engine=LLVM)
    assert problem is not None
    assert problem.where == "suites/x.yaml:42"
    assert problem.message.startswith("llvm-filecheck rejects the block:\n" + located), problem


@pytest.mark.parametrize(
    "text",
    [
        "CHECK: a\nCHECK: [[X]]\n",  # an undefined variable is a match-time error in LLVM
        "CHECK-NOT: %{tma_load}\n",
        "COM: the TMA path of the sm90 kernel\n"
        "# plain comments are allowed too\n"
        "CHECK-LABEL: @matmul_kernel\n"
        "CHECK: [[DESC:%[0-9]+]] = %{tensormap_create}\n"
        "CHECK-DAG: tt.load %a\n"
        "CHECK-DAG: tt.load %b\n"
        "CHECK-NOT: tt.dot\n"
        "CHECK: %{wgmma} {{.*}} : tensor<{{[0-9]+}}x128xf32>\n"
        "CHECK-SAME: f32\n"
        "CHECK-NEXT: tt.store\n"
        "\n"
        "CHECK-COUNT-2: tt.return\n"
        "// CHECK: {{(a|b)}} [[R:[a-z]+]] [[R]] [[DESC]]\n"
        "CHECK{LITERAL}: {{not a regex}}\n",
    ],
)
def test_validate_block_accepts_well_formed_blocks(engine, text):
    assert validate_block(text, source="suites/x.yaml:1", artifact="ttgir", engine=engine) is None


def test_substitutions_come_from_one_table():
    assert expand("CHECK: %{wgmma}\nCHECK-NOT: %{cp_async_bulk_tensor}\n") == (
        "CHECK: ttng.warp_group_dot\nCHECK-NOT: cp.async.bulk.tensor\n"
    )
    assert expand("CHECK: %{{[0-9]+}} = tt.load\n") == "CHECK: %{{[0-9]+}} = tt.load\n"
    kinds = {kind for kind, _ in IR_SPELLINGS.values()}
    assert kinds == {"ttgir", "ptx"}
    # no block on Triton's code spells an op the table names: they write %{name} (the cutlass
    # blocks check nvcc's PTX, pinned to its own nvcc and CUTLASS versions)
    for path in discover([ROOT / "suites"], ROOT):
        for instance in load_suite(path, root=ROOT):
            for block in instance.checks.filecheck:
                if "cutlass" in block.backends:
                    continue
                for name, (_, spelling) in IR_SPELLINGS.items():
                    assert spelling not in block.text, f"{block.source}: write %{{{name}}}"


def test_split_by_target_records_what_is_not_run_here():
    blocks = [
        CheckBlock("ttgir", "CHECK: tt.func\n", "suites/a.yaml:3:7"),
        CheckBlock("ttgir", "CHECK: %{wgmma}\n", "suites/a.yaml:6:7", target="sm90"),
        CheckBlock("ttgir", "CHECK: %{tcgen05_mma}\n", "suites/a.yaml:9:7", target="sm100"),
    ]
    run_here, not_run = split_by_target(blocks, "sm90")
    assert run_here == blocks[:2]
    assert not_run == [
        NotRunHere(
            "ttgir",
            "sm100",
            "suites/a.yaml:9:7",
            SM100_NOT_RUN,
        )
    ]
    assert not_run[0].record() == {
        "artifact": "ttgir",
        "target": "sm100",
        "source": "suites/a.yaml:9:7",
        "reason": SM100_NOT_RUN,
    }
    run_here, not_run = split_by_target(blocks, None)
    assert run_here == blocks[:1]
    assert [n.target for n in not_run] == ["sm90", "sm100"]
    assert "this run has no code-check target" in not_run[0].reason


def test_check_artifacts_runs_this_targets_blocks_and_names_missing_kinds():
    blocks = [
        CheckBlock("ttgir", "CHECK: tt.func\n", "suites/a.yaml:3"),
        CheckBlock("ttgir", "CHECK: %{wgmma}\n", "suites/a.yaml:6", target="sm90"),
        CheckBlock("ttgir", "CHECK: %{tcgen05_mma}\n", "suites/a.yaml:9", target="sm100"),
        CheckBlock("ptx", "CHECK: %{wgmma_ptx}\n", "suites/a.yaml:12", target="sm90"),
    ]
    artifacts = {"ttgir": TTGIR, "python": "def call(args): ..."}
    sm90 = check_artifacts(blocks, artifacts, target="sm90")
    assert [r.block.source for r in sm90] == [
        "suites/a.yaml:3",
        "suites/a.yaml:6",
        "suites/a.yaml:12",
    ]
    assert [r.passed for r in sm90] == [True, True, False]
    assert [r.engine for r in sm90] == [default_engine().name] * 2 + [""]
    assert sm90[2].diagnostic == (
        "suites/a.yaml:12: error: no 'ptx' artifact to check (the backend gave: python, ttgir)"
    )
    sm100 = check_artifacts(blocks, artifacts, target="sm100")
    assert [r.block.source for r in sm100] == ["suites/a.yaml:3", "suites/a.yaml:9"]
    assert sm100[1].diagnostic.startswith("suites/a.yaml:9:")
    cpu = check_artifacts(blocks, {}, target=None)
    assert [r.block.source for r in cpu] == ["suites/a.yaml:3"]
    assert cpu[0].diagnostic.endswith("(the backend gave: none)")


def test_engine_choice(monkeypatch):
    monkeypatch.setenv(codecheck.ENGINE_ENV, "filecheck")
    assert default_engine().name == "filecheck-package"
    assert default_engine().version == "1.0.6"
    monkeypatch.setenv(codecheck.ENGINE_ENV, "/no/such/FileCheck")
    with pytest.raises(RuntimeError, match="neither a FileCheck that runs here nor 'filecheck'"):
        default_engine()
    monkeypatch.delenv(codecheck.ENGINE_ENV)
    assert default_engine().name == ("llvm-filecheck" if LLVM else "filecheck-package")
    if LLVM is not None:
        monkeypatch.setenv(codecheck.ENGINE_ENV, LLVM.argv[0])
        assert default_engine() == LLVM
        assert LLVM.version[0].isdigit()


class _PlantedArtifacts:
    """Right numbers (eager), but its sm90 TTGIR lacks the TMA copies the suite promises."""

    name = "reference"  # the suite's blocks name the reference backend

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        return _PlantedCompiled(fn)


class _PlantedCompiled:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return self.fn(*args)

    def artifacts(self) -> dict[str, str]:
        return {"ttgir": TTGIR.replace("ttng.tensormap_create %a", "tt.make_range")}

    def compiles(self) -> int:
        return 1


def test_planted_artifact_without_the_promised_copy_fails_at_the_suite_line():
    instances = load_suite(ROOT / "suites" / "tma" / "codecheck.yaml", root=ROOT)
    (instance,) = [i for i in instances if i.id == "tma_codecheck/sm90_tma[mm-bf16-aligned]"]
    result = run_item(instance, _PlantedArtifacts(), seed=0, device="cpu", target="sm90")
    assert not result.passed and result.kind == kinds.CODE_CHECK
    (problem,) = [p for p in describe(result) if p.startswith("Code check failed")]
    tma_block = next(b for b in instance.checks.filecheck if "%{tma_load}" in b.text)
    line = int(tma_block.source.split(":")[1])
    head = problem.splitlines()[0]  # the reason: it stands alone, the suite line included
    assert head.startswith(f"Code check failed on 'ttgir': suites/tma/codecheck.yaml:{line}:")
    assert "error:" in head
    assert IR_SPELLINGS["tma_load"][1] in problem  # what was looked for, expanded
    assert result.metrics["code_checks"] == 2  # the TMA copy (failed) and wgmma (passed)
    assert result.metrics["code_check_engine"] == default_engine().name
    assert "code_checks_not_run" not in result.metrics


def test_blocks_for_another_target_are_recorded_as_not_run_here(tmp_path):
    path = tmp_path / "two_targets.yaml"
    path.write_text(
        "scenarios:\n"
        "  - name: x\n"
        "    op: mm\n"
        "    dtype: bf16\n"
        "    shape: {M: 8, N: 8, K: 8}\n"
        "    checks:\n"
        "      filecheck:\n"
        "        - artifact: ttgir\n"
        "          target: sm90\n"
        "          check: |\n"
        "            CHECK: %{wgmma}\n"
        "        - artifact: ttgir\n"
        "          target: sm100\n"
        "          check: |\n"
        "            CHECK: %{tcgen05_mma}\n"
    )
    (instance,) = load_suite(path, root=tmp_path)
    result = run_item(instance, _PlantedArtifacts(), seed=0, device="cpu", target="sm90", repro="-")
    assert result.passed, result.problems
    assert result.metrics["code_checks"] == 1
    assert result.metrics["code_checks_not_run"] == [
        {
            "artifact": "ttgir",
            "target": "sm100",
            "source": "two_targets.yaml:15:13",
            "reason": SM100_NOT_RUN,
        }
    ]
    on_cpu = run_item(instance, _PlantedArtifacts(), seed=0, device="cpu", target=None, repro="-")
    assert on_cpu.passed
    assert "code_checks" not in on_cpu.metrics
    assert [n["target"] for n in on_cpu.metrics["code_checks_not_run"]] == ["sm90", "sm100"]


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


def test_a_code_check_target_binds_only_the_backends_its_checks_are_for(tmp_path):
    """A torchao trial (2026-12-02): 34 `requires: {target: ...}` items skipped on its backend
    with "need an sm90 GPU or --target-arch sm90", though each item's code checks name the
    reference backend only; for another backend such an item is a GEMM like any other."""
    results = tmp_path / "results.json"
    command = [sys.executable, "-m", "pytest", "suites/tma/codecheck.yaml"]
    command += ["--backend", "eager,reference", "-k", "sm90_tma and mm-bf16-aligned"]
    command += ["-p", "no:xdist", "-p", "no:randomly", "-q", "--no-isolate"]
    command += ["--results", str(results), "--conformance-html", "none"]
    done = warm_python.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == pytest.ExitCode.OK, done.stdout[-2000:]
    records = {r["backend"]: r for r in json.loads(results.read_text())["records"]}
    assert records["eager"]["outcome"] == "passed"
    reference = records["reference"]
    import torch  # the machine decides: an sm90 GPU runs the reference's item

    if torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0):
        assert reference["outcome"] == "passed"  # its checks' target is this GPU's
    else:
        assert reference["outcome"] == "skipped" and reference["skip_class"] == "sm90"
