"""The conformance page: rendered from records built here, self-contained, compact."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gemmconf.record import typed
from gemmconf.report import page, results

ENV = {
    "device": "cpu",
    "device_name": "CPU (x86_64, 2 cores)",
    "capability": None,
    "hardware_class": "cpu",
    "fp8": True,
    "tma": False,
    "memory_bytes": 1 << 34,
    "torch": "2.13.0+cpu",
    "triton": "3.7.1",
    "cuda": None,
}
EXCERPT = (
    "@triton.jit\ndef mm_kernel(a_ptr, b_ptr, c_ptr):\n    acc = tl.zeros((64, 64), tl.float16)\n"
)


def record(
    suite: str,
    scenario: str,
    op: str,
    dtype: str,
    dims: dict[str, int],
    backend: str,
    outcome: str,
    *,
    axes: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A record as the plugin writes it."""
    shape = "x".join(str(v) for v in dims.values())
    name = f"{scenario}[{dtype}-{shape}]"
    rec = {
        "id": f"{suite}/{name}",
        "suite": suite,
        "backend": backend,
        "scenario": scenario,
        "op": op,
        "dtype": dtype,
        "shape": shape,
        "dims": dims,
        "axes": axes or {"dtype": dtype, "shape": shape},
        "markers": [op, "cpu"],
        "source": f"suites/{suite}/{scenario}.yaml:3",
        "nodeid": f"suites/{suite}/{scenario}.yaml::{scenario}[{dtype}-{shape}@{backend}]",
        "outcome": outcome,
        "duration_s": 0.0123,
        "environment": ENV,
        "metrics": {
            "max_abs_err": 0.0012,
            "max_rel_err": 0.0004,
            "err_ratio": 1.0,
            "recompiles": 0,
            "compiles": 1,
        },
    }
    rec.update(extra)
    return rec


def document(records: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    doc = {
        "format": results.FORMAT,
        "version": results.VERSION,
        "complete": True,
        "exit_status": 1,
        "finished": "2026-01-02T03:04:05+0000",
        "command": "pytest suites --backend eager,planted_backends:planted",
        "seed": 7,
        "backends": ["eager", "planted_backends:planted"],
        "target_arch": None,
        "environment": ENV,
        "suite_version": "abc123",
        "records": records,
    }
    doc.update(top)
    doc["counts"] = results.count(typed(doc["records"]))
    return doc


def sample_document() -> dict[str, Any]:
    """Two backends, four scenarios: planted fails three mm items; skips, an xfail, benchmarks."""
    records = []
    mm_dims = [
        ("bf16", {"M": 64, "N": 64, "K": 64}),
        ("fp16", {"M": 32, "N": 48, "K": 1024}),
        ("fp32", {"M": 16, "N": 16, "K": 4096}),
        ("bf16", {"M": 1, "N": 1, "K": 8}),
    ]
    planted = ["failed", "failed", "error", "passed"]
    for (dtype, dims), outcome in zip(mm_dims, planted, strict=True):
        records.append(
            record(
                "dense",
                "mm",
                "mm",
                dtype,
                dims,
                "eager",
                "passed",
                metrics={
                    "max_abs_err": 0.001,
                    "max_rel_err": 0.0002,
                    "err_ratio": 1.0,
                    "recompiles": 0,
                    "compiles": 1,
                    "tflops": 12.5 * dims["K"] / 64,
                    "vs_cublas": 0.8,
                },
            )
        )
        extra: dict[str, Any] = {}
        if outcome == "failed":
            extra = {
                "reason": "Tensor-likes are not close! err_ratio 223.1 > 3.0 allowed "
                "</script><script>alert(1)</script>",
                "code_excerpt": EXCERPT,
                "metrics": {
                    "max_abs_err": 1.96,
                    "max_rel_err": 83.1,
                    "err_ratio": 223.1,
                    "recompiles": 0,
                    "compiles": 1,
                },
            }
        elif outcome == "error":
            extra = {
                "reason": "RuntimeError: backend crashed",
                "metrics": {"err_ratio": float("inf"), "max_abs_err": float("nan")},
            }
        records.append(record("dense", "mm", "mm", dtype, dims, "planted", outcome, **extra))
    for backend in ("eager", "planted"):
        records.append(
            record("dense", "addmm", "addmm", "fp32", {"M": 8, "N": 8, "K": 0}, backend, "passed")
        )
        records.append(
            record(
                "fp8",
                "scaled_mm",
                "scaled_mm",
                "e4m3fn",
                {"M": 64, "N": 64, "K": 128},
                backend,
                "skipped",
                reason="needs sm89 (fp8 GEMM support); found CPU",
                skip_class="sm89",
                metrics={},
            )
        )
        records.append(
            record(
                "dynamic",
                "epilogue",
                "mm",
                "bf16",
                {"M": 32, "N": 32, "K": 32},
                backend,
                "xfailed" if backend == "planted" else "passed",
                reason="known: recompiles per shape",
            )
        )
    return document(records)


def large_document(n: int) -> dict[str, Any]:
    """n records, half per backend, with 10% failures that carry a 3,000-character excerpt."""
    records = []
    dtypes = ("bf16", "fp16", "fp32", "tf32")
    for i in range(n // 2):
        dims = {
            "B": 1 + i % 3,
            "M": 16 * (1 + i % 7),
            "N": 8 * (1 + i % 11),
            "K": 2 ** (3 + i % 10),
        }
        for backend in ("eager", "planted"):
            failing = backend == "planted" and i % 5 == 0
            extra = (
                {
                    "reason": f"err_ratio {i}.5 > 3.0 allowed",
                    "code_excerpt": f"# kernel {i}\n" + "x = tl.load(ptr)  # " * 150,
                }
                if failing
                else {}
            )
            records.append(
                record(
                    f"suite{i % 6}",
                    f"scenario{i % 40}",
                    "bmm",
                    dtypes[i % 4],
                    dims,
                    backend,
                    "failed" if failing else "passed",
                    axes={"dtype": dtypes[i % 4], "layout": "nt" if i % 2 else "nn", "case": i},
                    **extra,
                )
            )
    return document(records)


def blob(html: str) -> dict[str, Any]:
    found = re.search(
        r'<script type="application/json" id="gemmconf-data">(.*?)</script>', html, re.S
    )
    assert found, "no data blob"

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the blob: JSON.parse would reject it")

    return json.loads(found.group(1), parse_constant=refuse)


def test_page_has_the_run_header_matrix_and_data() -> None:
    html = page.render(sample_document(), name="sample.json")
    assert html.startswith("<!doctype html>")
    assert '<table id="matrix">' in html
    assert 'id="f-backend"' in html and 'id="f-outcome"' in html and 'id="f-marker"' in html
    assert 'id="plot-ratio"' in html and 'id="plot-k"' in html and 'id="plot-perf"' in html
    assert "CPU (x86_64, 2 cores)" in html and "abc123" in html
    assert re.search(r'badge o-failed">2 failed<', html)
    data = blob(html)
    assert len(data["rows"]) == len(sample_document()["records"])
    assert data["run"]["backend_specs"] == {"eager": "eager", "planted": "planted_backends:planted"}
    assert data["run"]["seed"] == 7
    fields = data["fields"]
    failed = [r for r in data["rows"] if data["outcomes"][r[fields.index("outcome")]] == "failed"]
    assert len(failed) == 2
    assert data["excerpts"][failed[0][fields.index("excerpt")]] == EXCERPT


def test_page_is_self_contained() -> None:
    html = page.render(sample_document())
    lowered = html.lower()
    for remote in (
        'src="http',
        "src='http",
        'href="http',
        "href='http",
        "@import",
        "url(http",
        "url('http",
        'url("http',
        "<link",
        "<script src",
        "<iframe",
    ):
        assert remote not in lowered, remote
    assert "<style>" in html and html.count("<script") == 2  # the data blob and the code


def test_data_cannot_break_out_of_its_script() -> None:
    html = page.render(sample_document())
    assert "alert(1)" in html  # the reason is there ...
    assert "<script>alert(1)" not in html  # ... but only escaped
    assert html.count("</script>") == 2
    reasons = blob(html)["strings"]
    assert any("</script><script>alert(1)</script>" in str(s) for s in reasons)


def test_non_finite_metrics_travel_as_strings() -> None:
    data = blob(page.render(sample_document()))
    metrics = data["fields"].index("metrics")
    values = [row[metrics] for row in data["rows"] if len(row) > metrics and row[metrics]]
    assert {"err_ratio": "Infinity", "max_abs_err": "NaN"} in values


def test_nodeid_left_out_when_derivable() -> None:
    doc = sample_document()
    doc["records"][0]["nodeid"] = "elsewhere/test_x.py::odd[@eager]"
    data = blob(page.render(doc))
    nodeid = data["fields"].index("nodeid")
    kept = [
        data["strings"][row[nodeid]]
        for row in data["rows"]
        if len(row) > nodeid and row[nodeid] is not None
    ]
    assert kept == ["elsewhere/test_x.py::odd[@eager]"]


def test_a_non_strict_xpass_is_marked_as_failing_nothing() -> None:
    doc = sample_document()
    for xpass in ("non-strict", "strict"):
        doc["records"].append(
            record(
                "dense", "mm", "mm", "fp16", {"M": 3, "N": 5, "K": 7}, xpass, "xpassed", xpass=xpass
            )
        )
    data = page.page_data(doc)
    column = page.FIELDS.index("fails")
    marks = {}
    for row in data["rows"][-2:]:
        backend = data["strings"][row[page.FIELDS.index("backend")]]
        marks[backend] = row[column] if len(row) > column else None
    assert marks == {"non-strict": False, "strict": None}  # None: as its outcome says (failing)
    assert data["kind_counts"] == results.count_kinds(typed(doc["records"]))
    assert "xpass" in data["kind_counts"]  # the strict one


def test_backend_specs_from_results_when_given() -> None:
    doc = sample_document()
    doc["backends"] = ["x.y:make", "eager"]
    doc["backend_specs"] = {"planted": "x.y:make"}
    assert page.backend_specs(doc) == {"eager": "eager", "planted": "x.y:make"}


def test_page_with_8000_records_stays_small() -> None:
    doc = large_document(8000)
    html = page.render(doc)
    assert len(html.encode()) < 5_000_000, len(html.encode())
    data = blob(html)
    assert len(data["rows"]) == 8000
    assert html.count("<tr") < 10  # rows are drawn by the script, not written out
    excerpts = data["excerpts"]
    assert all(len(e) <= page.EXCERPT_CHARS + 80 for e in excerpts)


def test_excerpt_budget_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page, "EXCERPT_BUDGET", 5000)
    data = blob(page.render(large_document(200)))
    assert sum(len(e) for e in data["excerpts"]) < 5000 + page.EXCERPT_CHARS + 200
    assert any("left out" in e for e in data["excerpts"])


def test_details_are_shown_capped_and_within_a_page_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page, "DETAILS_BUDGET", 20_000)
    doc = large_document(50)
    for i, r in enumerate(doc["records"]):
        r["outcome"], r["details"] = "failed", f"Traceback {i}\n" + "x" * 9000
    data = blob(page.render(doc))
    column = data["fields"].index("details")
    shown = [data["strings"][row[column]] for row in data["rows"]]
    assert shown[0].startswith("Traceback 0") and len(shown[0]) <= page.DETAILS_CHARS + 4
    assert sum(len(d) for d in shown) < 20_000 + page.DETAILS_CHARS + 100
    assert shown[-1].startswith("(left out")


def test_write_page_rejects_bad_files_by_name(tmp_path: Path) -> None:
    bad = tmp_path / "junit.json"
    bad.write_text('{"testsuites": []}')
    with pytest.raises(results.ResultsError, match=r"junit\.json: not a gemmconf results file"):
        page.write_page(bad, tmp_path / "out.html")
    odd = tmp_path / "odd.json"
    doc = sample_document()
    doc["records"][3]["outcome"] = "exploded"
    odd.write_text(json.dumps(doc))
    with pytest.raises(results.ResultsError, match=r"odd\.json: record 3 .* 'exploded'"):
        page.write_page(odd, tmp_path / "out.html")
    assert not (tmp_path / "out.html").exists()


def test_write_page_writes_the_file(tmp_path: Path) -> None:
    source = tmp_path / "results.json"
    source.write_text(json.dumps(sample_document()))
    out = page.write_page(source, tmp_path / "reports" / "conformance.html")
    assert out.read_text().startswith("<!doctype html>")
    assert "results.json" in out.read_text()


def test_page_for_run_writes_beside_the_results_and_never_raises(tmp_path: Path) -> None:
    source = tmp_path / "results.json"
    source.write_text(json.dumps(sample_document()))
    line = page.page_for_run(source, None)
    assert line == f"gemmconf: conformance page in {tmp_path / 'conformance.html'}"
    assert page.page_for_run(source, "none") is None
    assert page.page_for_run(None, None) is None
    broken = page.page_for_run(tmp_path / "missing.json", str(tmp_path / "p.html"))
    assert broken == f"gemmconf: no conformance page: {tmp_path / 'missing.json'}: no such file"


def test_the_page_counts_inherited_failures_and_passes_pytorch_computed_apart(tmp_path) -> None:
    from test_report_summary import attributed_records

    from gemmconf.report.groups import group_failures

    records = attributed_records()
    html = page.render(document(records))
    assert "4 failed</span>" not in html and "1 failed</span>" in html
    assert "4 inherited</span>" in html
    assert "not counted among the failed above" in html
    assert "lib: 4 passed (1 computed by the backend, 2 by PyTorch, 1 partly by PyTorch)" in html
    records[1]["metrics"] = {"eager_bits": False}  # aten's mm on what the backend changed
    assert "2 by PyTorch (1 not eager&#39;s bits)" in page.render(document(records))
    counted = page.render(document(records), count_inherited=True)
    assert "5 failed</span>" in counted and "4 inherited</span>" not in counted
    data = page.page_data(document(records))
    column = data["fields"].index("inherited")
    inherited = [data["strings"][row[column]] for row in data["rows"] if len(row) > column]
    assert sorted(inherited) == ["eager", "eager", "eager", "torch.compile"]
    groups = group_failures(records)  # the backend's own group first, then inherited ones
    assert [g.inherited for g in groups] == [None, "eager", "torch.compile"]
    assert groups[2].title().startswith("1 failure (not compiled, inherited from torch.compile)")
    # an older file's page: no attribution lines at all
    old = page.render(sample_document())
    header = old.split('<header id="run">')[1].split("</header>")[0]
    assert "inherited" not in header and "who computed" not in header
