"""A run with many failures, read as its author reads it: failures grouped by cause (largest
first, each with a representative and its repro command) in the terminal summary and on the
conformance page, and one terminal line per failure, the details on the page unless pytest's own
flags ask for them."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest

from gemmconf import capability
from gemmconf.report.groups import group_failures, signature

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent
FIRST = TESTS.parent / "suites" / "dense" / "first.yaml"

# three planted bugs in one backend: the first rewrite that applies to a call wins
THREE_BUGS = """
import torch
from planted_backends import (
    PlantedBackend, _crash_on_zero_size, _drop_bias_broadcast, _wrong_output_dtype,
)


def _three(func, args, kwargs):
    for rewrite in (_drop_bias_broadcast, _crash_on_zero_size):
        result = rewrite(func, args, kwargs)
        if result is not NotImplemented:
            return result
    if func is torch.mm:
        return _wrong_output_dtype(func, args, kwargs)
    return NotImplemented


three_bugs = PlantedBackend("three-bugs", _three)
"""


@pytest.fixture
def first(pytester: pytest.Pytester) -> pytest.Pytester:
    """suites/dense/first.yaml (74 items) as the suite, and the three-bug backend."""
    pytester.syspathinsert(TESTS)  # planted_backends
    pytester.makepyfile(composed=THREE_BUGS)
    pytester.syspathinsert()
    (pytester.path / "suites" / "dense").mkdir(parents=True)
    (pytester.path / "suites" / "dense" / "first.yaml").write_text(FIRST.read_text())
    pytester.makeini("[pytest]\ngemmconf_suites = suites\n")
    return pytester


def run_three_bugs(first: pytest.Pytester, *args: str) -> pytest.RunResult:
    return first.runpytest("suites", "--backend", "composed:three_bugs", "-p", "no:xdist", *args)


def test_three_planted_bugs_are_three_groups_largest_first_with_one_line_per_failure(first):
    result = run_three_bugs(first)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    records = json.loads((first.path / "reports" / "results.json").read_text())["records"]
    failed = [r for r in records if r["outcome"] == "failed"]
    groups = group_failures(records)
    assert [(g.kind, g.size) for g in groups] == [
        ("wrong layout", 19),  # mm in fp16/bf16 returns fp32
        ("wrong values", 18),  # addmm drops a bias that must broadcast
        ("crash", 2),  # M = 0 raises
    ]
    assert sum(g.size for g in groups) == len(failed) == 39
    assert groups[1].pattern[0] == "op addmm"
    # the full (M, N) bias and beta = 0 passed
    assert groups[1].pattern[1:] == (
        "bias bias_1N, bias_M1, bias_N (of 4)",
        "scale a2_b-0.5, plain (of 3)",
    )
    assert groups[0].pattern == ("op mm", "dtype bf16, fp16 (of 3)")
    assert groups[1].representative.id.startswith("first/addmm[")

    lines = result.outlines
    text = "\n".join(lines)
    head = lines.index(next(line for line in lines if "failures by cause" in line))
    assert lines[head].strip() == "failures by cause (39 in 3 groups):"
    # a title four spaces in, a line longer than the terminal going on deeper (at most three)
    titles = [line.strip() for line in lines[head + 1 :] if re.match(r"    \S", line)]
    assert [t.split(": ", 2)[1] for t in titles[:3]] == [
        "19 failures (wrong layout)",
        "18 failures (wrong values)",
        "2 failures (crash)",
    ]
    # the group's smallest item
    repro = next(line.strip() for line in lines[head:] if line.strip().startswith("repro: "))
    assert repro == "repro: gemmconf repro first/mm_mark_dynamic --backend composed:three_bugs"

    # one line per failure: pytest's FAILED lines, gemmconf's summary, no FAILURES section
    assert sum(line.startswith("FAILED ") for line in lines) == 39
    assert "= FAILURES =" not in text and "Reproduce:" not in text
    assert len(lines) <= len(failed) + 60, text
    assert "--tb=short, -v or -rA print them here" in lines[-2]

    # the page opens with the same groups, in the same order
    page = (first.path / "reports" / "conformance.html").read_text()
    causes = page[
        page.index('<section id="causes"') : page.index("</section>", page.index('id="causes"'))
    ]
    assert re.findall(r"<strong>three-bugs: (\d+) failures? \(([a-z ]+)\)", causes) == [
        ("19", "wrong layout"),
        ("18", "wrong values"),
        ("2", "crash"),
    ]
    assert "gemmconf repro" in causes


def test_pytests_own_flags_bring_the_details_back(first):
    result = run_three_bugs(first, "-k", "mm_zero_m", "--tb=short")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    # pytest's FAILURES section, one diagnosis per failure (the short summary after it repeats
    # whole messages where the CI variable is set: pytest's own choice once details are asked)
    failures = text.partition("= FAILURES =")[2].partition("short test summary info")[0]
    assert failures.count("Reproduce:") == 2
    assert "ZeroDivisionError" in text
    assert "print them here" not in text


def test_a_signature_leaves_out_what_differs_between_items_of_one_cause():
    one = "Tensor-likes are not close! err_ratio 2.921e+06 > 3.0 allowed (bf16, K=48)"
    other = "Tensor-likes are not close! err_ratio 17.5 > 3.0 allowed (fp32, K=1024)"
    assert signature(one) == signature(other)
    crash = "Backend raised during the call on shape set 0 (M=0 N=32 K=16): ZeroDivisionError: x"
    assert signature(crash) == signature(crash.replace("M=0 N=32", "M=4 N=7"))
    assert signature(crash) != signature(crash.replace("ZeroDivisionError", "RuntimeError"))
    nan = "Tensor-likes are not close! NaN/Inf positions differ from eager (bf16, K=48)"
    assert signature(nan) != signature(one)
    # whichever dimensions the op has (a TVM trial, 2026-11-29: one cause made 510 and 176)
    assert signature(crash) == signature(crash.replace("(M=0", "(B=2 M=0"))
    # torch's C++ element type names are dtypes too
    mixed = (
        "Backend raised during the call on shape set 0 (M=4 N=4 K=4): expected c10::Half got float"
    )
    assert signature(mixed) == signature(mixed.replace("c10::Half", "c10::BFloat16"))
    assert signature(mixed) == signature(mixed.replace("float", "signed char"))
    # and its legacy tensor type names (a lightning-thunder trial, 2026-11-30: one cause, 3 groups)
    legacy = "expected CPUBFloat16Type got torch.HalfTensor for argument #2 'mat1'"
    assert signature(legacy) == signature(
        legacy.replace("CPUBFloat16Type", "CPUFloatType").replace("HalfTensor", "FloatTensor")
    )
    assert signature(legacy) == signature(
        legacy.replace("torch.HalfTensor", "torch.cuda.DoubleTensor")
    )
    # and its scalar type names (a gemlite trial, 2026-12-02: one cause, six groups)
    bare = "expected m1 and m2 to have the same dtype, but got: Half != BFloat16"
    assert signature(bare) == signature(bare.replace("Half != BFloat16", "Float != Double"))
    assert "Tensor-likes" in signature("Tensor-likes are not close!")  # words that merely end so
    # the arguments of a call a compiler quotes from its IR (a TVM trial, 2026-12-01: 5 groups)
    quoted = (
        "Backend raised during the call: TypeError: Binary operators must have the same datatype "
        "for both operands. However, R.add(lv1, inp_2) uses datatype T.float32 on the LHS (Type "
        'of R.Tensor((1, 1), dtype="float32")), and datatype T.bfloat16 on the RHS'
    )
    assert signature(quoted) == signature(
        quoted.replace("lv1, inp_2", "inp_0, lv").replace("(1, 1)", "(127, 65)")
    )
    assert signature(quoted) != signature(quoted.replace("R.add", "R.multiply"))
    assert signature("f(a) then g(b") == "f(…) then g(…)"  # an argument list cut off ends it
    # an error wrapped once per helper it passed through (Triton's interpreter, 2026-12-02)
    root = " (raised from TypeError: only 0-dimensional arrays can be converted to Python scalars)"
    shallow = "Backend raised during the call: InterpreterError: TypeError('only 0-d…')" + root
    deep = (
        "Backend raised during the call: InterpreterError: "
        "InterpreterError('InterpreterError(\"TypeError(\\'only 0-d…\\')\")')" + root
    )
    assert signature(shallow) == signature(deep)
    assert "InterpreterError: (raised from TypeError: only" in signature(deep)
    assert signature(shallow) != signature(
        shallow.replace("(raised from TypeError", "(raised from ValueError")
    )
    assert "ValueError(…)" in signature("RuntimeError: ValueError('x')")  # nothing it came from
    assert signature("mm(): argument 'input' must be Tensor") == (
        "mm(): argument 'input' must be Tensor"  # no arguments: nothing to take out
    )


def test_a_group_title_names_the_error_not_the_shape_set_it_met():
    reason = (
        "Backend raised during the call on shape set 0 (B=3 M=127 N=65 K=33): AssertionError: "
        "Unsupported function types ['mm']"
    )
    records = [
        {"id": f"s/mm[{n}]", "backend": "b", "outcome": "failed", "kind": "crash", "reason": reason}
        for n in (1, 2)
    ]
    (group,) = group_failures(records)
    assert (
        group.cause
        == "Backend raised during the call: AssertionError: Unsupported function types ['mm']"
    )
    assert group.title().endswith(group.cause)


def test_failures_behind_one_generic_message_are_grouped_by_the_error_their_worker_printed():
    """An IREE trial (2026-11-30): "JIT compilation failed. See diagnostics." stood for four
    compiler errors, which IREE printed on stderr; the records keep those lines
    (`record.printed_note`) and the groups split by the first error diagnostic in them."""
    from gemmconf.record import printed_note
    from gemmconf.report.groups import summary_lines

    reason = "Backend raised during the call on shape set 0 (M=4 N=4 K=4): JIT compilation failed."

    def failed(item: str, printed: str | None) -> dict:
        details = reason + ("" if printed is None else "\n\n" + printed_note(printed))
        return {
            "id": f"s/mm[{item}]",
            "backend": "b",
            "outcome": "failed",
            "kind": "crash",
            "reason": reason,
            "details": details,
        }

    legalize = "note: in mm\n<unknown>:0: error: failed to legalize operation 'torch.constant.{}'"
    records = [
        failed("1", legalize.format("bool")),
        failed("2", legalize.format("bool").replace(":0:", ":7:") + ": %0 = {value = true}"),
        failed("3", legalize.format("int")),
        failed("4", "UserWarning: nothing that names an error"),
        failed("5", None),
        # two missing symbols, two causes: the message goes on past its first ": "
        failed("6", "JIT session error: Symbols not found: [ __truncdfhf2 ]"),
        failed("7", "JIT session error: Symbols not found: [ __truncdfhf2 ]"),
        failed("8", "JIT session error: Symbols not found: [ __truncsfbf2 ]"),
    ]
    groups = group_failures(records)
    by_ids = {g.ids: g for g in groups}
    assert set(by_ids) == {
        ("s/mm[1]", "s/mm[2]"),
        ("s/mm[3]",),
        ("s/mm[4]", "s/mm[5]"),
        ("s/mm[6]", "s/mm[7]"),
        ("s/mm[8]",),
    }
    assert "__truncsfbf2" in by_ids[("s/mm[8]",)].cause
    # from "error:" on: the location took the room of the cause (a torch-mlir trial, 2026-12-01)
    assert by_ids[("s/mm[1]", "s/mm[2]")].cause.endswith(
        "(stderr: error: failed to legalize operation 'torch.constant.bool')"
    )
    assert "stderr" not in by_ids[("s/mm[4]", "s/mm[5]")].cause
    # in a terminal the title is cut to its width: the printed error has a line of its own
    lines = summary_lines(groups, width=100)
    printed = "error: failed to legalize operation 'torch.constant.int'"
    assert f"      stderr: {printed}" in lines
    assert sum(line.startswith("      stderr: ") for line in lines) == 4  # groups 1, 3, 6, 8


def test_a_diagnostic_printed_on_stdout_before_an_abort_is_kept_and_named_so():
    """A torch-mlir trial (2026-12-01): MLIR's runtime checks print their error on stdout, then
    abort; 146 crashes kept only stderr (faulthandler's stack), and one group mixed two causes."""
    from gemmconf.record import printed_note, typed
    from gemmconf.report.groups import summary_lines

    crash = "crashed: SIGABRT: the worker process running this item was killed by SIGABRT."
    stack = "Fatal Python error: Aborted\n\nCurrent thread 0x01 (most recent call first):\n  File x"

    def aborted(rid: str, check: str) -> dict:
        printed = f"ERROR: Runtime op verification failed\n{check}\nLocation: loc(x)"
        details = "\n\n".join(
            [crash, printed_note(stack), printed_note(printed, "stdout")]  # as the runner adds them
        )
        return {
            "id": f"s/mm[{rid}]",
            "backend": "b",
            "outcome": "failed",
            "kind": "crash",
            "reason": crash,
            "details": details,
        }

    records = [aborted("1", "^ stride mismatch of dim 0"), aborted("2", "^ stride mismatch")]
    (record,) = typed(records[:1])
    assert record.printed_error == "ERROR: Runtime op verification failed"
    assert record.printed_stream == "stdout"
    (group,) = group_failures(records)
    assert group.cause == f"{crash} (stdout: ERROR: Runtime op verification failed)"
    assert "      stdout: ERROR: Runtime op verification failed" in summary_lines([group])


def test_faulthandler_s_line_interleaved_with_a_frame_is_no_diagnostic():
    """An optimum-quanto trial (2026-12-02): two threads' stacks printed at once put
    faulthandler's "Fatal Python error:" inside a frame's line, which read as an error
    diagnostic and made one SIGSEGV of 31 a group of its own, titled by that line."""
    from gemmconf.record import printed_note, typed

    crash = "crashed: SIGSEGV: the worker process running this item was killed by SIGSEGV."
    frame = '"/lib/qbytes_mm.py", line 57'

    def segfault(rid: str, first: str) -> dict:
        stack = f"Fatal Python error: Segmentation fault\nCurrent thread 0x01:\n{first}\n  File x"
        details = "\n\n".join([crash, printed_note(stack)])
        return {"id": f"s/mm[{rid}]", "backend": "b", "outcome": "failed", "kind": "crash",
                "reason": crash, "details": details}  # fmt: skip

    plain = segfault("1", f"  File {frame} in qbytes_int8pack_mm")
    mixed = segfault("2", f"  File Fatal Python error: {frame}Segmentation fault in")
    assert [r.printed_error for r in typed([plain, mixed])] == [None, None]
    (group,) = group_failures([plain, mixed])
    assert group.cause == crash


def test_mlir_types_and_dtype_suffixes_are_not_taken_for_addresses():
    """`memref<1x40xbf16>` lost "0xbf16" to the address rule, and each shape made a group of its
    own: one bf16 defect in 15 groups of a 74-item file (a torch-mlir trial, 2026-12-01)."""
    from gemmconf.report.groups import signature

    base = "argument must be a memref of f16, f32, but got 'memref<{}>'"
    shapes = ["64x64xbf16", "1x40xbf16", "33x1xbf16", "?x40xbf16", "*xbf16"]
    assert len({signature(base.format(shape)) for shape in shapes}) == 1
    assert signature("at 0x7f3a2c00 and 0xdeadbeef") == "at # and #"
    assert signature(base.format("64x64xbf16")) != signature(base.format("64x64xi64"))


def test_a_long_title_goes_on_over_three_lines_so_the_message_shows():
    """An inductor CPP-template trial (2026-12-01): 470 crashes, the title cut at the terminal's
    width after the exception's qualified name, the message that says why out of sight."""
    from gemmconf.report.groups import SUMMARY_LINES, summary_lines

    reason = (
        "Backend raised during the call on shape set 0 (B=3 M=17 N=24 K=40): "
        "torch._inductor.select_algorithm.NoValidChoicesError: No choices to select. Provided "
        "reason: No choices exist for backend. please consider adding ATEN into "
        "max_autotune_gemm_backends config (defined in torch/_inductor/config.py) to allow at "
        "least one choice. " + "More words. " * 40
    )
    records = [
        {
            "id": f"s/bmm[{i}]",
            "backend": "b",
            "outcome": "failed",
            "kind": "crash",
            "reason": reason,
            "op": "bmm",
        }
        for i in range(3)
    ]
    lines = summary_lines(group_failures(records), width=100)
    title = lines[1 : 1 + SUMMARY_LINES]
    assert title[0] == "    3 failures (crash): Backend raised during the call:"
    assert all(line.startswith("        ") for line in title[1:])
    assert max(len(line) for line in lines[:-1]) <= 100  # the repro line is whole: it is pasted
    assert "No choices exist for backend" in " ".join(title)
    assert title[-1].endswith("...")  # past three lines it is cut
    assert lines[1 + SUMMARY_LINES].startswith("      op bmm")  # what the items share
    assert lines[2 + SUMMARY_LINES].startswith("      repro: gemmconf repro ")


def test_a_groups_representative_has_a_repro_and_elements_where_a_member_does():
    """A lightning-thunder trial (2026-11-30): the largest group's repro command named a K = 0
    MX item, for which no standalone repro is written, and so failed."""
    from gemmconf.ids import NO_STANDALONE
    from gemmconf.report.groups import summary_lines

    def failed(item: str, dims: dict[str, int], repro: bool) -> dict:
        details = "Standalone repro ..." if repro else f"{NO_STANDALONE} (mx): run the item again"
        return {
            "id": f"s/f[{item}]",
            "nodeid": f"suites/s.yaml::f[{item}@b]",
            "backend": "b",
            "outcome": "failed",
            "kind": "crash",
            "reason": "Backend raised during the call: AssertionError: no swizzles",
            "dims": dims,
            "details": details,
        }

    zero_mx = failed("mx-k0", {"M": 16, "N": 16, "K": 0}, repro=False)
    small_mx = failed("mx-small", {"M": 1, "N": 1, "K": 32}, repro=False)
    zero = failed("rowwise-k0", {"M": 16, "N": 16, "K": 0}, repro=True)
    large = failed("rowwise-large", {"M": 64, "N": 64, "K": 64}, repro=True)
    (group,) = group_failures([zero_mx, small_mx, zero, large])
    assert group.representative.id == "s/f[rowwise-large]"
    (group,) = group_failures([zero_mx, small_mx, zero])
    assert group.representative.id == "s/f[rowwise-k0]"
    (group,) = group_failures([zero_mx, small_mx])
    assert group.representative.id == "s/f[mx-small]"
    lines = summary_lines([group])
    assert "gemmconf repro" not in "\n".join(lines)
    assert (
        lines[-1].strip()
        == "no standalone repro; its node id runs it again: suites/s.yaml::f[mx-small@b]"
    )


def test_a_groups_pattern_says_how_many_of_its_items_an_axis_covers_most_first():
    """An OpenVINO trial (2026-11-30): 350 crashes of padded layouts (8 of the run's 23 layouts)
    showed only `zero m0, n0 (of 4)`, an axis that 2 of them had, and read as zero-size ones."""
    reason = "Backend raised during the call: AssertionError: sources must not be empty for s7"
    layouts = [f"layout{n:02d}" for n in range(20)]

    def record(item: str, axes: dict[str, str], failed: bool) -> dict:
        return {
            "id": f"s/mm[{item}]",
            "suite": "s",
            "scenario": "mm",
            "op": "mm",
            "dtype": "fp32",
            "backend": "b",
            "outcome": "failed" if failed else "passed",
            "kind": "crash" if failed else None,
            "reason": reason if failed else None,
            "axes": axes,
        }

    records = [record(f"{name}", {"layout": name}, name < "layout08") for name in layouts]
    records += [record(f"zero-{z}", {"zero": z}, z == "m0") for z in ("m0", "k0")]
    (group,) = group_failures(records)
    assert group.size == 9
    assert group.pattern == (
        "op mm",
        "layout layout00, layout01, layout02, layout03, layout04, layout05 and 2 more "
        "(of 20; in 8 of the 9 items)",
        "zero m0 (of 2; in 1 of the 9 items)",
    )


# What an author writes after the three-bug run: one cause expected, one with the wrong kind,
# one rule that takes passes and one cause, and entries on passing items of each other status.
THREE_BUGS_EXPECTED = """
backend: three-bugs
expectations:
  - {match: "first/mm[fp32-127x65x33-nn]", reason: fixed since}
  - {match: "first/mm[fp32-127x65x33-nt]", strict: false, reason: comes and goes}
  - {match: "first/mm[fp32-127x65x33-col]", status: skip, reason: not run}
  - {match: {op: mm, dtype: fp16}, kind: wrong layout, reason: returns its fp32 accumulator}
  - {match: "first/addmm[*]", status: either, kind: wrong values, reason: a broadcast bias}
  - {match: {op: mm, dtype: bf16}, kind: crash, reason: the wrong kind for this cause}
"""


def _outcomes(path: Path) -> dict[str, tuple[str, str | None]]:
    records = json.loads(path.read_text())["records"]
    return {r["id"]: (r["outcome"], r.get("xpass")) for r in records}


def test_expect_judges_a_run_again_as_a_run_under_the_file_judges_it(first, capsys):
    """`gemmconf expect` puts each record of a run made without the file to the file's entries;
    the run made with the file gives every item the outcome it said, strict xpasses and the
    failures the file does not explain included (a skip entry skips a passing item)."""
    from gemmconf.cli import main

    assert run_three_bugs(first).ret == pytest.ExitCode.TESTS_FAILED
    plain = first.path / "plain.json"
    (first.path / "reports" / "results.json").rename(plain)
    (first.path / "expected.yaml").write_text(THREE_BUGS_EXPECTED)

    capsys.readouterr()
    status = main(
        ["expect", str(plain), "--expectations", str(first.path / "expected.yaml"), "--json"]
    )
    judged = json.loads(capsys.readouterr().out)
    assert status == 1  # the bf16 mm failures (a crash is expected) and a strict xpass remain

    result = run_three_bugs(first, "--expectations", "expected.yaml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    under_file = _outcomes(first.path / "reports" / "results.json")
    before = _outcomes(plain)
    predicted = dict(before)
    for change in judged["changed"]:
        now = change["now"]
        predicted[change["id"]] = (
            ("xpassed", "strict")
            if now == "xpassed (strict)"
            else ("xpassed", "non-strict")
            if now == "xpassed"
            else (now, None)
        )
    assert {i: o for i, (o, _) in predicted.items()} == {i: o for i, (o, _) in under_file.items()}
    xpassed = {i: x for i, (o, x) in under_file.items() if o == "xpassed"}
    assert xpassed == {
        "first/mm[fp32-127x65x33-nn]": "strict",
        "first/mm[fp32-127x65x33-nt]": "non-strict",
    }
    assert under_file["first/mm[fp32-127x65x33-col]"] == ("skipped", None)
    failing = {i for i, (o, x) in under_file.items() if o == "failed" or x == "strict"}
    assert {c["id"] for c in judged["unexplained"]} == failing
    assert any(i.startswith("first/mm[bf16") for i in failing)  # the wrong kind expected
    assert not any(i.startswith(("first/addmm[", "first/mm[fp16")) for i in failing)
    counts = judged["counts"]["three-bugs"]
    assert counts == dict(collections.Counter(o for o, _ in under_file.values())) | (
        {"xpassed (strict)": 1, "xpassed": 1}
    )


def test_expect_drafts_a_file_that_explains_each_failure_and_takes_no_pass(first, capsys):
    """A bitsandbytes trial (2026-12-02): a hand-written file's wide entries took 162 passes
    as strict XPASSes, and the author wrote a script listing 1,645 ids by cause. `--draft`
    writes that file: one entry per cause, items by id; a run under it fails nothing, and its
    passes stay passes. With --expectations, it drafts only what those leave."""
    from gemmconf.cli import main

    some = ("-k", "127x65x33 or addmm")  # items of each bug, and passes
    run_three_bugs(first, *some)
    plain = first.path / "plain.json"
    (first.path / "reports" / "results.json").rename(plain)
    failed = {i for i, (o, _) in _outcomes(plain).items() if o == "failed"}
    capsys.readouterr()
    assert main(["expect", str(plain), "--draft", str(first.path / "draft.yaml")]) == 0
    out = capsys.readouterr().out
    assert f"wrote {first.path / 'draft.yaml'}: {len(failed)} failure(s) of three-bugs" in out
    assert "every failure is explained and no strict xfail entry is contradicted" in out
    text = (first.path / "draft.yaml").read_text()
    assert text.count("  - match:") == 2  # the two planted bugs these items meet, one entry each
    hardware = capability.detect().hardware_class  # the class the items failed on
    assert '    kind: "wrong values"' in text and f"    hardware: {hardware}" in text
    result = run_three_bugs(first, *some, "--expectations", "draft.yaml")
    assert result.ret == pytest.ExitCode.OK
    under = _outcomes(first.path / "reports" / "results.json")
    assert {i for i, (o, _) in under.items() if o == "xfailed"} == failed
    assert not any(o == "xpassed" for o, _ in under.values())
    # what a file already explains is not drafted again; an author's file is never overwritten
    (first.path / "expected.yaml").write_text(THREE_BUGS_EXPECTED)
    more = str(first.path / "more.yaml")
    args = ["expect", str(plain), "--expectations", str(first.path / "expected.yaml")]
    assert main([*args, "--draft", more]) == 1  # the file's strict xpass is still left
    drafted = Path(more).read_text()
    assert "first/mm[bf16" in drafted and "first/addmm[" not in drafted
    assert main([*args, "--draft", more]) == 2
    assert "the file exists; name a new one" in capsys.readouterr().err


def test_expect_says_what_it_cannot_judge(first, capsys):
    """A file for a backend the results do not hold, an expectations file with a mistake and a
    file that is not a results file are exit 2, each named; nothing is judged."""
    from gemmconf.cli import main

    run_three_bugs(first, "-k", "fp32-127x65x33")
    results = str(first.path / "reports" / "results.json")
    other = first.path / "other.yaml"
    other.write_text("backend: somebody-else\nexpectations: []\n")
    bad = first.path / "bad.yaml"
    bad.write_text(
        "backend: three-bugs\nexpectations:\n  - {match: 'first/mm[*]', status: maybe}\n"
    )
    capsys.readouterr()
    assert main(["expect", results, "--expectations", str(other)]) == 2
    assert "backend 'somebody-else' has no record" in capsys.readouterr().err
    assert main(["expect", results, "--expectations", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml:3" in err and "status" in err
    assert main(["expect", str(bad), "--expectations", str(other)]) == 2
    assert "not JSON" in capsys.readouterr().err


def test_expect_groups_a_long_list_of_what_is_left_by_cause_and_escapes_what_it_prints(
    tmp_path, capsys
):
    """Past twenty unexplained records `gemmconf expect` prints their causes as `report groups`
    does (each with its repro), and a reason from the results file reaches the terminal with its
    control characters escaped (the file may come from anyone)."""
    from gemmconf.cli import main
    from gemmconf.report.results import FORMAT, VERSION

    def record(n: int, reason: str) -> dict:
        return {
            "id": f"s/mm[case{n:02d}]",
            "suite": "s",
            "scenario": "mm",
            "op": "mm",
            "dtype": "fp32",
            "backend": "b",
            "outcome": "failed",
            "kind": "wrong values",
            "reason": reason,
            "axes": {"case": f"case{n:02d}"},
        }

    records = [
        record(n, "Tensor-likes are not close! err_ratio 9 > 3.0 allowed") for n in range(30)
    ]
    records.append(record(99, "Backend raised during the call: \x1b[2J boom"))
    results = tmp_path / "results.json"
    document = {
        "format": FORMAT,
        "version": VERSION,
        "records": records,
        "backend_specs": {"b": "b"},
    }
    results.write_text(json.dumps(document))
    entries = tmp_path / "b.yaml"
    entries.write_text('backend: b\nexpectations:\n  - {match: "s/mm[case0*]", reason: known}\n')

    assert main(["expect", str(results), "--expectations", str(entries)]) == 1
    out = capsys.readouterr().out
    assert "  not explained (21):" in out  # case00..case09 expected; 20 others and case99 left
    assert "failures by cause (21 in 2 groups):" in out
    assert "repro: gemmconf repro 's/mm[case10]' --backend b" in out
    assert "\x1b" not in out and "\\x1b[2J boom" in out
    assert "  1 would change" not in out and "10 would change: 10 failed -> xfailed" in out

    # passes a non-strict entry expects to fail are explained xpasses, not failures by cause (a
    # torchao trial: 82 grouped as "xpassed" failures)
    for n in range(30, 50):
        passed = record(n, "")
        passed.update(outcome="passed", kind=None, reason=None)
        records.append(passed)
    results.write_text(json.dumps(document))
    entries.write_text(
        "backend: b\nexpectations:\n"
        '  - {match: "s/mm[case3*]", reason: lossy, strict: false}\n'
        '  - {match: "s/mm[case4*]", reason: lossy, strict: false}\n'
    )
    assert main(["expect", str(results), "--expectations", str(entries)]) == 1
    out = capsys.readouterr().out
    assert "  not explained (31):" in out and "failures by cause (31 in 2 groups):" in out, out
    # strict, the same passes contradict the entries, and the lines say which (an
    # optimum-quanto trial: 236 strict xpasses, their entry named in --json alone)
    entries.write_text(entries.read_text().replace(", strict: false", ""))
    assert main(["expect", str(results), "--expectations", str(entries)]) == 1
    out = capsys.readouterr().out
    assert f"    10 pass(es) contradict the strict xfail entry at {entries}:3" in out, out
    assert f"    10 pass(es) contradict the strict xfail entry at {entries}:4" in out, out


def test_a_group_says_how_far_its_items_err():
    """A torchao trial: its largest group (452 wrong values) was headed by its smallest item's
    reason, "err_ratio 24.77 > 3.0 allowed (fp16, K=1)", where its median was about 2e4. The
    group's lines give the spread; a group with one err_ratio says nothing more."""
    from gemmconf.report.groups import group_failures, summary_lines

    def failed(n: int, ratio: float | None) -> dict:
        return {
            "id": f"s/mm[case{n}]",
            "backend": "lib",
            "op": "mm",
            "outcome": "failed",
            "kind": "wrong values",
            "reason": f"Tensor-likes are not close! err_ratio {ratio or 7.5} > 3.0 allowed",
            "axes": {"case": f"case{n}"},
            "metrics": {} if ratio is None else {"err_ratio": ratio, "max_ratio": 3.0},
        }

    ratios = [24.77, 3.2e3, 2.0e4, 2.1e4, 9.9e4, None]
    (group,) = group_failures([failed(n, r) for n, r in enumerate(ratios)])
    assert group.err_ratios == (24.77, 2.0e4, 9.9e4) and group.err_ratio_count == 5
    lines = summary_lines([group])
    assert "      err_ratio 24.8 to 9.9e+04, median 2e+04 (of 5 items)" in lines
    (alone,) = group_failures([failed(0, 24.77), failed(1, None)])
    assert alone.err_ratios is None
    (under,) = group_failures([failed(0, 0.0), failed(1, 2.65)])  # NaN/Inf positions, say
    assert under.err_ratios is None
    assert not any("median" in line for line in summary_lines([alone]))


def test_a_group_says_where_aten_s_kernels_computed_its_failures():
    """A bitsandbytes trial: 56 failures that aten's CPU `_int_mm` computed wrong sat in a group
    of 1,406 whose reason could not say that aten's kernel made the numbers. A group says who
    computed its failures where aten's kernels had a hand; a group of the backend's own
    kernels (an aten override's, a compiler's) says nothing more, nor one never observed."""
    from gemmconf.report.groups import group_failures, page_groups, summary_lines

    def failed(n: int, who: str | None, kernels: dict[str, int]) -> dict:
        return {
            "id": f"s/mm[case{n}]",
            "backend": "lib",
            "op": "mm",
            "outcome": "failed",
            "kind": "wrong values",
            "reason": "Tensor-likes are not close! err_ratio 40.0 > 3.0 allowed",
            "axes": {"case": f"case{n}"},
            "computed_by": who,
            "metrics": {"aten_gemm_kernels": kernels},
        }

    int_mm = {"aten::_int_mm": 1}
    mixed = [failed(0, "backend", int_mm), failed(1, "backend", int_mm), failed(2, "backend", {})]
    mixed.append(failed(3, "pytorch", {"aten::mm": 1}))
    (group,) = group_failures(mixed)
    said = "computed by the backend 3 (through aten::_int_mm in 2), by PyTorch 1"
    assert group.computed == said
    assert f"      {said}" in summary_lines([group])
    assert page_groups([group])[0]["computed"] == said
    own = [failed(0, "backend", {}), failed(1, "backend", {}), failed(2, None, {})]
    (group,) = group_failures(own)
    assert group.computed is None
    assert not any("computed" in line for line in summary_lines([group]))


def test_one_numeric_cause_over_an_item_s_outputs_is_one_group():
    """A torchao trial: one precision loss came as four groups, their reasons differing only in
    where the judgment was ("output [0]", "longest sum 65", "the gradient of a")."""
    from gemmconf.report.groups import signature

    where = (
        "(fp16, K=1)",
        "(bf16, longest sum 65, output [0], the forward result)",
        "(fp32, K=1, output [0])",
        "(bf16, longest sum 64, output [1], the gradient of a)",
    )
    reasons = {
        signature(f"Tensor-likes are not close! err_ratio 4.5 > 3.0 allowed {w}") for w in where
    }
    assert reasons == {"Tensor-likes are not close! err_ratio # > # allowed (T, …)"}
    assert signature("Tensor-likes are not equal! (exact, K=8)") != signature(
        "Tensor-likes are not close! err_ratio 4.5 > 3.0 allowed (fp16, K=1)"
    )


def test_a_group_s_dtypes_that_err_orders_of_magnitude_apart_are_groups_of_their_own():
    """A gemlite trial (2026-12-02): one "wrong values" group of 419 held int8 weights' loss
    (fp16 about 20, fp32 about 1e4) and a bf16 kernel's garbage (1e9 to 1e16), titled by its
    smallest. Dtypes whose median err_ratios are over 100 times apart are groups of their own;
    within that, one group."""
    from gemmconf.report.groups import group_failures

    def failed(n: int, dtype: str, ratio: float) -> dict:
        return {
            "id": f"s/mm[{dtype}-case{n}]",
            "backend": "lib",
            "op": "mm",
            "dtype": dtype,
            "outcome": "failed",
            "kind": "wrong values",
            "reason": f"Tensor-likes are not close! err_ratio {ratio} > 3.0 allowed ({dtype}, K=8)",
            "metrics": {"err_ratio": ratio, "max_ratio": 3.0},
        }

    # int8 weights: fp16 about 20, fp32 about 1e4 (the same relative error, 1e-2 and 6e-4);
    # garbage in bf16 (1e9 to 1e16 times bf16's precision)
    apart = [failed(0, "fp16", 20.0), failed(1, "fp16", 24.0), failed(2, "fp32", 1.2e4)]
    apart += [failed(3, "bf16", 1e9), failed(4, "bf16", 1e16)]
    groups = group_failures(apart)
    assert sorted(g.ids for g in groups) == [
        ("s/mm[bf16-case3]", "s/mm[bf16-case4]"),
        ("s/mm[fp16-case0]", "s/mm[fp16-case1]", "s/mm[fp32-case2]"),
    ]
    # one cause in three dtypes: err_ratios 1e4 apart, as their precisions are (a torchao trial)
    one_cause = [failed(0, "fp32", 2e4), failed(1, "bf16", 4.7), failed(2, "fp16", 40.0)]
    (one,) = group_failures(one_cause)
    assert one.size == 3
    # an error that scales with each dtype's precision: the same err_ratio, one cause
    (same,) = group_failures([failed(0, "fp32", 223.0), failed(1, "bf16", 223.0)])
    assert same.size == 2
    # failing on NaN/Inf positions, their finite elements under the bar and dtype-apart: one
    # cause (a FlagGems trial: NaN kept where beta = 0 came as a bf16 and an fp32 group)
    nan_kept = [failed(0, "fp32", 2.5), failed(1, "bf16", 1e-7), failed(2, "bf16", 2e-7)]
    (kept,) = group_failures(nan_kept)
    assert kept.size == 3


def test_a_group_of_strict_xpasses_says_what_they_are():
    """A gemlite trial (2026-12-02): `gemmconf expect` printed "91 failures (xpassed): xpassed"
    for the passes its new file expected to fail."""
    from gemmconf.report.groups import group_failures

    passed = {
        "id": "s/mm[case0]",
        "backend": "lib",
        "op": "mm",
        "outcome": "xpassed",
        "xpass": "strict",
    }
    (group,) = group_failures([passed, {**passed, "id": "s/mm[case1]"}])
    assert group.title() == (
        "2 failures (xpassed): passed, where a strict xfail entry expects it to fail "
        "(a stale entry?)"
    )
