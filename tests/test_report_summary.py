"""The terminal summary: a table per backend, op and dtype with a column per outcome."""

from __future__ import annotations

from types import SimpleNamespace

from test_report_page import record, sample_document

from gemmconf.report.summary import render_terminal_summary

CPU = SimpleNamespace(name="CPU (x86_64, 2 cores)", hardware_class="cpu")


def table_start(lines: list[str]) -> int:
    """Where the table's header is (the failure groups come first)."""
    return next(i for i, line in enumerate(lines) if line.split()[:2] == ["backend", "op"])


def test_summary_table_format() -> None:
    lines = render_terminal_summary(sample_document()["records"], CPU)
    text = "\n".join(lines)
    assert lines[0] == ""
    assert lines[1] == "gemmconf summary: 14 items on CPU (x86_64, 2 cores) (cpu)"
    start = table_start(lines)
    header = lines[start].split()
    assert header == ["backend", "op", "dtype", "FAIL", "ERROR", "pass", "xfail", "skip"]
    rows = {
        tuple(line.split()[:3]): line.split()[3:] for line in lines[start + 1 :] if line.strip()
    }
    assert rows[("planted", "mm", "bf16")] == ["1", ".", "1", "1", "."]  # one is dynamic's
    assert rows[("planted", "mm", "fp32")] == [".", "1", ".", ".", "."]
    assert rows[("eager", "scaled_mm", "e4m3fn")] == [".", ".", ".", ".", "1"]
    total = next(line for line in lines if line.strip().startswith("total"))
    assert total.split() == ["total", "2", "1", "8", "1", "2"]
    # numbers are right-aligned under their column titles
    table = lines[start : lines.index(total) + 1]
    assert {len(line) for line in table} == {len(lines[start])}
    assert "skipped for hardware: 2 (2 need sm89); --require-hardware CLASS" in text
    assert "FAIL dense/mm[bf16-64x64x64]@planted - Tensor-likes are not close!" in text
    assert "ERROR dense/mm[fp32-16x16x4096]@planted - RuntimeError: backend crashed" in text


def many_records(n: int) -> list[dict]:
    records = []
    for i in range(n):
        dtype = ("bf16", "fp16", "fp32", "tf32", "e4m3fn", "e5m2", "int8")[i % 7]
        op = ("mm", "addmm", "bmm", "baddbmm", "linear", "matmul", "scaled_mm", "int_mm")[i % 8]
        backend = ("eager", "inductor")[(i // 56) % 2]
        outcome = "skipped" if i % 9 == 0 else ("failed" if i % 101 == 0 else "passed")
        records.append(
            record(
                "s",
                "x",
                op,
                dtype,
                {"M": 1, "N": 1, "K": i},
                backend,
                outcome,
                skip_class="sm90" if outcome == "skipped" else None,
                reason="why " * 60 if outcome == "failed" else None,
            )
        )
    return records


def test_summary_stays_compact_for_thousands_of_items() -> None:
    records = many_records(4000)  # 112 (backend, op, dtype) rows, 35 with a failure
    lines = render_terminal_summary(records, CPU)
    assert len(lines) < 64  # 35 failures' reasons of 240 characters: two groups of three lines
    assert max(len(line) for line in lines) <= 120
    text = "\n".join(lines)
    assert "4000 items" in text
    start = table_start(lines)
    table = lines[start : next(i for i, line in enumerate(lines) if "total" in line) + 1]
    assert table[0].split()[2] == "dtype"
    fold = next(line for line in table if "more rows, none failing" in line)
    assert fold.split()[0] == f"({112 - (len(table) - 3)}"  # rows neither shown nor total
    assert len(fold) == len(table[0])  # its numbers are aligned with the rest
    assert all(line.split()[3] != "." for line in table[1:-2])  # every shown row has a FAIL
    assert "skipped for hardware: 445 (445 need sm90)" in text
    assert "more failing items" in text


def test_too_many_failing_rows_group_by_op() -> None:
    lines = render_terminal_summary(many_records(4000), CPU, max_rows=20)
    assert lines[table_start(lines)].split()[:3] == ["backend", "op", "dtypes"]
    assert any(line.split()[:3] == ["inductor", "scaled_mm", "(all)"] for line in lines)


def test_pass_only_rows_fold_first() -> None:
    records = [
        record("s", "x", "mm", f"d{i}", {"M": 1, "N": 1, "K": 1}, "eager", "passed")
        for i in range(50)
    ]
    records.append(record("s", "x", "mm", "bad", {"M": 1, "N": 1, "K": 1}, "eager", "failed"))
    lines = render_terminal_summary(records, CPU)
    assert any(line.split()[:3] == ["eager", "mm", "bad"] for line in lines)
    fold = next(line for line in lines if "(50 more rows, none failing)" in line)
    assert fold.split()[-2:] == [".", "50"]


def test_with_nothing_failing_too_many_dtype_rows_group_by_op() -> None:
    """A run with nothing failing printed no row but "(48 more rows, none failing)"."""
    records = [
        record("s", "x", op, f"d{i}", {"M": 1, "N": 1, "K": 1}, "eager", "passed")
        for i in range(30)
        for op in ("mm", "bmm")
    ]
    lines = render_terminal_summary(records, CPU)
    assert lines[table_start(lines)].split()[:3] == ["backend", "op", "dtypes"]
    assert any(line.split() == ["eager", "mm", "(all)", "30"] for line in lines)
    assert not any("more rows" in line for line in lines)


def test_a_backend_s_own_failures_are_listed_before_those_eager_shares() -> None:
    """An aot_eager trial failed 108 items, 95 of them eager's own gaps on the CPU: the preview
    lines were all inherited ones. The backend's own failures come first, and a line counts the
    inherited ones."""
    records = [
        record("s", "inherited", "mm", "fp8", {"M": i}, "mine", "failed", eager_fails=True)
        for i in range(6)
    ]
    records.append(record("s", "own", "mm", "bf16", {"M": 1}, "mine", "failed", reason="mine"))
    lines = render_terminal_summary(records, CPU, max_failures=3)
    text = "\n".join(lines)
    # records without `inherited` (who computed them not observed): counted as the backend's own
    assert (
        "failing where eager is expected to fail too, not inherited (the backend computed them, "
        "or failed otherwise than eager's entry expects, or was not observed): mine 6 of its 7 "
        "(records with eager_fails true and no inherited" in text
    )
    listed = [line for line in lines if line.startswith("  FAIL ")]
    assert listed[0].startswith("  FAIL s/own[bf16-1]@mine")


def test_borderline_passes_are_counted_apart() -> None:
    """A torchao trial (CPU int8): 29 of its 86 passes were borderline (err_ratio up to 1.4 times
    the bar, rounds of fresh draws undecided), and nothing a user reads said so."""
    metrics = {"err_ratio": 4.29, "max_ratio": 3.0, "borderline": 1}
    records = [
        record("s", "edge", "mm", "bf16", {"M": i}, "lib", "passed", metrics=metrics)
        for i in range(2)
    ]
    records += [record("s", "clear", "mm", "fp32", {"M": i}, "lib", "passed") for i in range(3)]
    records.append(record("s", "clear", "mm", "fp32", {"M": 9}, "eager", "passed"))
    lines = render_terminal_summary(records, CPU)
    at = next(i for i, line in enumerate(lines) if "borderline passes" in line)
    assert lines[at] == (  # eager's pass is no borderline one
        "  borderline passes (error at the bar, fresh draws undecided; details give the rounds): "
        "lib 2 of its 5 passes"
    )
    plain = "\n".join(render_terminal_summary(records[2:], CPU))
    assert "borderline" not in plain


def attributed_records() -> list[dict]:
    """A backend with passes of both computers and failures of its own and inherited ones."""
    records = [
        record("s", "mine", "mm", "fp32", {"M": 1}, "lib", "passed", computed_by="backend"),
        record("s", "aten", "mm", "fp32", {"M": 2}, "lib", "passed", computed_by="pytorch"),
        record("s", "aten", "mm", "fp32", {"M": 3}, "lib", "passed", computed_by="pytorch"),
        record("s", "part", "mm", "fp32", {"M": 4}, "lib", "passed", computed_by="mixed"),
        record("s", "own", "mm", "bf16", {"M": 1}, "lib", "failed", kind="wrong values"),
    ]
    records += [
        record(
            "s", "gap", "mm", "e4m3fn", {"M": i}, "lib", "failed", kind="crash",
            computed_by="pytorch", eager_fails=True, inherited="eager",
        )
        for i in range(3)
    ]  # fmt: skip
    records.append(
        record(
            "s", "traced", "mm", "fp16", {"M": 1}, "lib", "failed", kind="not compiled",
            inherited="torch.compile",
        )
    )  # fmt: skip
    return records


def test_inherited_failures_are_counted_apart_and_listed_last() -> None:
    lines = render_terminal_summary(attributed_records(), CPU, max_failures=9)
    text = "\n".join(lines)
    header = next(line for line in lines if line.startswith("  backend "))
    assert header.split() == [
        "backend", "op", "dtype", "FAIL", "inherited", "pass", "pass", "(PyTorch)"
    ]  # fmt: skip
    total = next(line for line in lines if line.strip().startswith("total"))
    # the 2 passes PyTorch computed are not the backend's: a column of their own
    assert total.split() == ["total", "1", "4", "2", "2"]
    assert "failing by kind: lib: wrong values 1" in text
    assert (
        "lib 4 (eager fails them too and PyTorch computed them: 3; torch.compile failed before "
        "the backend got the graph: 1)" in text
    )
    assert (
        "who computed the passes: lib 4 passed (1 computed by the backend, 2 by PyTorch, 1 partly "
        "by PyTorch)" in text
    )
    listed = [line for line in lines if line.startswith("  FAIL ")]
    assert listed[0].startswith("  FAIL s/own[bf16-1]@lib (wrong values)")
    assert all("[inherited from " in line for line in listed[1:])
    assert len(listed) == 5


def test_count_inherited_counts_them_among_the_failures() -> None:
    lines = render_terminal_summary(attributed_records(), CPU, count_inherited=True)
    header = next(line for line in lines if line.startswith("  backend "))
    assert header.split() == ["backend", "op", "dtype", "FAIL", "pass", "pass", "(PyTorch)"]
    total = next(line for line in lines if line.strip().startswith("total"))
    assert total.split() == ["total", "5", "2", "2"]
    text = "\n".join(lines)
    assert "failing by kind: lib: wrong values 1, not compiled 1, crash 3" in text
    assert "inherited failures (counted above, --count-inherited):" in text


def test_records_of_older_files_say_nothing_of_who_computed_them() -> None:
    """Files written before `computed_by` and `inherited`: no line about passes, no inherited
    column, every failure the backend's own."""
    lines = render_terminal_summary(sample_document()["records"], CPU)
    text = "\n".join(lines)
    assert "who computed" not in text and "inherited" not in text


def test_a_crash_no_one_computed_is_the_backend_s_own_failure_and_no_pass() -> None:
    """computed_by "none" (the call raised before any GEMM kernel ran): an own failure, left
    out of who computed the passes; the page and the matrix count it so too."""
    from gemmconf.record import Record
    from gemmconf.report import matrix

    crashed = record(
        "s", "raised", "mm", "fp16", {"M": 9}, "lib", "failed", kind="crash", computed_by="none"
    )
    records = [*attributed_records(), crashed]
    text = "\n".join(render_terminal_summary(records, CPU, max_failures=9))
    assert (
        "who computed the passes: lib 4 passed (1 computed by the backend, 2 by PyTorch, 1 partly "
        "by PyTorch)" in text
    )
    assert "failing by kind: lib: wrong values 1, crash 1" in text
    assert matrix.category_of(Record.from_json(crashed)) == "own_failed"


def test_passes_pytorch_computed_on_what_the_backend_changed_are_counted_among_them() -> None:
    """An optimum-quanto trial (2026-12-02): 271 of its 355 passes "by PyTorch" were aten's mm
    on weights quanto had quantized and dequantized, 84 programs it never touched. A pass whose
    result is not eager's bits (`eager_bits: false`) is counted among PyTorch's with how many."""
    records = attributed_records()
    records[1]["metrics"] = {"eager_bits": False}
    records[2]["metrics"] = {"eager_bits": True}
    text = "\n".join(render_terminal_summary(records, CPU, max_failures=9))
    assert (
        "    lib 4 passed (1 computed by the backend, 2 by PyTorch (1 not eager's bits), 1 partly "
        "by PyTorch)" in text
    )
    records[1]["computed_by"] = "mixed"  # only PyTorch's passes: a mixed one is partly its own
    text = "\n".join(render_terminal_summary(records, CPU, max_failures=9))
    assert "not eager's bits" not in text


def test_the_backend_s_passes_with_aten_s_gemms_of_another_kind_are_counted_among_them() -> None:
    """A bitsandbytes trial (2026-12-02): one LLM.int8 path read "computed by the backend" when
    it ran aten's `_int_mm` and "by PyTorch" when a float mm; all 365 of its backend passes were
    `_int_mm`'s. The summary says how many of the backend's passes ran aten's GEMMs."""
    records = attributed_records()
    records[0]["metrics"] = {"aten_gemm_kernels": {"aten::_int_mm": 1}}
    records[1]["metrics"] = {"eager_bits": False}
    text = "\n".join(render_terminal_summary(records, CPU, max_failures=9))
    assert (
        "    lib 4 passed (1 computed by the backend (1 with aten's GEMM kernels of another "
        "kind), 2 by PyTorch (1 not eager's bits), 1 partly by PyTorch)" in text
    )
    records[0]["metrics"] = {"aten_gemm_kernels": {}}  # its own kernels: nothing to say
    assert "another kind" not in "\n".join(render_terminal_summary(records, CPU))


def test_an_xpass_pytorch_computed_has_a_column_of_its_own() -> None:
    """A torchao trial (2026-12-02): its fix fell back to aten for the items its file expected
    to fail, and the table counted those XPASSes as the backend's. An XPASS PyTorch computed
    counts apart, as a pass does."""
    records = [
        record("s", "mine", "mm", "fp32", {"M": 1}, "lib", "xpassed", computed_by="backend"),
        record("s", "aten", "mm", "fp32", {"M": 2}, "lib", "xpassed", computed_by="pytorch"),
        record("s", "aten", "mm", "fp32", {"M": 3}, "lib", "xpassed", computed_by="pytorch"),
    ]
    for r in records:
        r["xpass"] = "strict"
    lines = render_terminal_summary(records, CPU)
    header = next(line for line in lines if line.startswith("  backend "))
    assert header.split() == ["backend", "op", "dtype", "XPASS", "XPASS", "(PyTorch)"]
    total = next(line for line in lines if line.strip().startswith("total"))
    assert total.split() == ["total", "1", "2"]


def test_an_item_that_took_most_of_the_run_is_named_with_why():
    """A gemlite trial (2026-12-02): one near-bar item in Triton's interpreter took 718 s, 42%
    of the run's item time; nothing said which. The summary names such items, their longest
    phase and their rounds near the bar; a run of even items names none."""
    records = [
        record("s", "quick", "mm", "fp32", {"M": i}, "lib", "passed", duration_s=2.0)
        for i in range(40)
    ]
    slow = record("s", "slow", "mm", "bf16", {"M": 1}, "lib", "failed", kind="wrong values")
    slow.update(duration_s=718.0, phase_s={"compile": 40.3, "call": 677.7})
    slow["metrics"] = {"err_ratio": 4.0, "max_ratio": 3.0, "rounds": 13}
    lines = render_terminal_summary([*records, slow], CPU)
    line = next(line for line in lines if "longest items:" in line)
    assert "s/slow[bf16-1]@lib 718 s, 90% of the items' time (call 678 s; 13 rounds of fresh" in (
        line
    ), line
    assert not any("longest items" in line for line in render_terminal_summary(records, CPU))
