"""Harness speed (plugin/speed.py, report/perf.py): --slow-first orders items by an earlier run's
durations, and the summary counts kernel compiles against distinct kernel signatures."""

from __future__ import annotations

import json

import faulty_backends
import pytest

from gemmconf.report import perf

pytest_plugins = ["pytester"]


def test_slow_first_orders_by_duration_and_places_unknown_items_at_the_median():
    keys = [("a", "x"), ("b", "x"), ("c", "x"), ("new", "x"), ("d", "x")]
    seconds = {("a", "x"): 1.0, ("b", "x"): 9.0, ("c", "x"): 3.0, ("d", "x"): 5.0}
    order = perf.slow_first(keys, seconds)
    # "new" counts as the median, 5 (of 1, 3, 5, 9), and ties keep their order
    assert [keys[i][0] for i in order] == ["b", "new", "d", "c", "a"]
    assert perf.slow_first(keys, {}) == list(range(5))  # nothing known: the order stays


def test_durations_take_the_slowest_record_of_an_item():
    document = {
        "records": [
            {"id": "s/a", "backend": "x", "duration_s": 1.5},
            {"id": "s/a", "backend": "x", "duration_s": 2.5},  # merged from two machines
            {"id": "s/b", "backend": "x"},  # skipped at setup: no duration
        ]
    }
    assert perf.durations(document) == {("s/a", "x"): 2.5}


def test_kernel_summary_counts_distinct_signatures_and_compiles():
    def record(backend, signatures, compiles):
        metrics = {"kernel_signatures": signatures, "kernel_compiles": compiles}
        return {"backend": backend, "metrics": metrics}

    records = [
        record("reference", ["k1"], 1),
        record("reference", ["k1"], 0),  # the same kernel: no compile
        record("reference", ["k1", "k2"], 1),
        {"backend": "eager", "metrics": {"err_ratio": 1.0}},
    ]
    (line,) = perf.kernel_summary(records)
    assert "reference: 3 items launched 4 kernel signatures, 2 distinct; 2 compiled" in line


def test_slow_first_reorders_collection(pytester: pytest.Pytester):
    faulty_backends.make_suite(pytester.path)
    first = pytester.runpytest("suites", "--backend", "eager", "--co", "-q")
    ids = [line.split("::")[1] for line in first.outlines if "::" in line]
    assert len(ids) >= 4
    slowest = ids[2]
    previous = {
        "format": "gemmconf-results",
        "version": 1,
        "complete": True,
        "records": [
            {
                "id": f"tiny/{node.rsplit('@', 1)[0]}",
                "backend": "eager",
                "outcome": "passed",
                "duration_s": 9.0 if node == slowest else 1.0,
            }
            for node in ids
        ],
    }
    (pytester.path / "old.json").write_text(json.dumps(previous))
    ordered = pytester.runpytest(
        "suites", "--backend", "eager", "--co", "-q", "--slow-first", "old.json"
    )
    reordered = [line.split("::")[1] for line in ordered.outlines if "::" in line]
    assert reordered[0] == slowest and sorted(reordered) == sorted(ids)
    (pytester.path / "bad.json").write_text("{}")
    bad = pytester.runpytest("suites", "--backend", "eager", "--co", "--slow-first", "bad.json")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--slow-first: *bad.json*"])


def test_reference_run_prints_its_kernel_counts(pytester: pytest.Pytester):
    faulty_backends.make_suite(pytester.path)
    result = pytester.runpytest(
        "suites", "--backend", "reference", "-k", "addmm or (mm and fp32)", "--no-isolate"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["gemmconf kernels: reference: * items launched * kernel signatures, * distinct; *"]
    )
