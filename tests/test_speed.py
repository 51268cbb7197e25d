"""Harness speed: --durations-from runs the slowest items of an earlier run first (with or
without --shard), and the summary counts kernel compiles against distinct kernel signatures
(plugin/speed.py, report/perf.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from gemmconf.report import perf

pytest_plugins = ["pytester"]


def test_kernel_summary_counts_distinct_signatures_and_compiles():
    def record(backend, metrics):
        return {"id": "tiny/mm", "backend": backend, "outcome": "passed", "metrics": metrics}

    def kernels(signatures, compiles):
        return {"kernel_signatures": signatures, "kernel_compiles": compiles}

    records = [
        record("reference", kernels(["k1"], 1)),
        record("reference", kernels(["k1"], 0)),  # the same kernel: no compile
        record("reference", kernels(["k1", "k2"], 1)),
        record("eager", {"err_ratio": 1.0}),
    ]
    (line,) = perf.kernel_summary(records)
    assert "reference: 3 items launched 4 kernel signatures, 2 distinct; 2 compiled" in line


def _kernel_record(compiles, seconds, builds=None, loads=None, wait_s=None):
    metrics = {
        "kernel_signatures": ["k1"],
        "kernel_compiles": compiles,
        "kernel_compile_s": seconds,
    }
    if builds is not None:
        metrics |= {"kernel_builds": builds, "kernel_cache_loads": loads}
        metrics["kernel_compile_wait_s"] = wait_s
    return {"id": "tiny/mm", "backend": "reference", "outcome": "passed", "metrics": metrics}


def test_kernel_summary_of_an_earlier_run_says_compiled_or_loaded():
    (line,) = perf.kernel_summary([_kernel_record(1, 2.0), _kernel_record(1, 1.5)])
    assert line.endswith(
        "2 items launched 2 kernel signatures, 1 distinct; 2 compiled or loaded from Triton's "
        "disk cache in 3.5 s of first launches (items with one signature share one compile per "
        "process)"
    )


def test_kernel_summary_counts_compiles_apart_from_disk_cache_loads():
    records = [_kernel_record(1, 2.0, 1, 0, 0.0), _kernel_record(1, 1.5, 0, 1, 1.25)]
    (line,) = perf.kernel_summary(records)
    assert line.endswith(
        "1 distinct; 1 compiled, 1 loaded from Triton's disk cache in 3.5 s of first launches "
        "(1.2 s waiting for another worker's compile)"
    )
    records.append(_kernel_record(2, 0.5))  # merged with an earlier run's record
    (line,) = perf.kernel_summary(records)
    assert "1 compiled, 1 loaded from Triton's disk cache, 2 compiled or loaded (not told" in line


def test_kernel_summary_counts_distinct_triton_kernels_and_repeated_compiles():
    """One of our signature ids can cover several Triton kernels (Triton specialises on more
    than our ids say): Triton's own hashes count them, and a hash compiled twice is a repeated
    compile (two processes that did not share one)."""
    first, second, third = (_kernel_record(1, 1.0, 1, 0, 0.0) for _ in range(3))
    first["metrics"]["kernel_built"] = ["a"]
    second["metrics"]["kernel_built"] = ["b"]  # the same signature id, another Triton kernel
    third["metrics"]["kernel_built"] = ["a"]  # compiled again
    (line,) = perf.kernel_summary([first, second, third])
    assert "1 distinct; 3 compiled" in line
    assert line.endswith("; 2 distinct Triton kernels, 1 compiled again")


def test_kernel_summary_sums_the_compiles_by_triton_s_stage():
    first, second = (_kernel_record(1, 1.0, 1, 0, 0.0) for _ in range(2))
    first["metrics"]["kernel_build_stages_s"] = {"source": 0.25, "ttir": 0.5, "cubin": 1.0}
    second["metrics"]["kernel_build_stages_s"] = {"source": 0.5, "ttir": 0.25, "cubin": True}
    (line,) = perf.kernel_summary([first, second, _kernel_record(1, 1.0, 0, 1, 0.0)])
    # in the order Triton runs them; a value that is no number (a stranger's file) is left out
    assert line.endswith("; compiling by stage: source 0.8 s, ttir 0.8 s, cubin 1.0 s")
    (line,) = perf.kernel_summary([_kernel_record(1, 1.0, 1, 0, 0.0)])
    assert "by stage" not in line
    hostile = _kernel_record(1, 1.0, 1, 0, 0.0)  # a stranger's results file
    hostile["metrics"]["kernel_build_stages_s"] = {
        **{f"s{i}": 1.0 for i in range(10_000)},
        "nan": float("nan"),
    }
    (line,) = perf.kernel_summary([hostile])
    assert line.count(" s,") == perf.STAGES_SHOWN - 1 and "nan" not in line


def test_a_compile_event_s_times_are_read_by_stage():
    from gemmconf_reference.compile_once import BuildCount, stage_seconds

    times = SimpleNamespace(
        ir_initialization=250_000,
        lowering_stages=[("ttir", 1_000), ("cubin", 2_000_000)],
        store_results=500,
    )
    assert stage_seconds(times) == {"source": 0.25, "ttir": 0.001, "cubin": 2.0, "store": 0.0005}
    assert stage_seconds(None) == {} and stage_seconds(object()) == {}
    count = BuildCount("k")
    count.heard(SimpleNamespace(name="k"), False, {"hash": "h"}, times)
    count.heard(SimpleNamespace(name="k"), True, {"hash": "h"}, times)  # a load: no compile
    count.heard(SimpleNamespace(name="other"), False, {"hash": "o"}, times)
    assert (count.builds, count.loads, count.stages["cubin"]) == (1, 1, 2.0)


def node_names(result: pytest.RunResult) -> list[str]:
    return [line.split("::")[1] for line in result.outlines if "::" in line]


def test_durations_from_runs_the_slowest_items_first(suite: pytest.Pytester):
    first = suite.runpytest("suites", "--backend", "eager", "--co", "-q")
    names = node_names(first)
    assert len(names) >= 4
    slowest, slower = names[2], names[3]
    records = []
    for name in names:  # mm[fp32-8x8x8@eager] -> tiny/mm[fp32-8x8x8]
        scenario, _, rest = name.partition("[")
        params = rest.rstrip("]").rsplit("@", 1)[0]
        records.append(
            {
                "id": f"tiny/{scenario}" + (f"[{params}]" if params else ""),
                "backend": "eager",
                "outcome": "passed",
                "duration_s": {slowest: 9.0, slower: 5.0}.get(name, 1.0),
            }
        )
    previous = {"format": "gemmconf-results", "version": 1, "complete": True, "records": records}
    (suite.path / "old.json").write_text(json.dumps(previous))
    ordered = suite.runpytest(
        "suites", "--backend", "eager", "--co", "-q", "--durations-from", "old.json"
    )
    reordered = node_names(ordered)
    assert reordered[:2] == [slowest, slower] and sorted(reordered) == sorted(names)
    ordered.stdout.fnmatch_lines(["*items ordered slowest first by the durations in old.json*"])


def test_reference_run_prints_its_kernel_counts(suite: pytest.Pytester):
    result = suite.runpytest(
        "suites", "--backend", "reference", "-k", "addmm or (mm and fp32)", "--no-isolate"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["gemmconf kernels: reference: * items launched * kernel signatures, * distinct; *"]
    )
