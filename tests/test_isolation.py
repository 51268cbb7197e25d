"""Isolation: a backend that crashes, hangs or faults the GPU costs only its own items.

The end-to-end tests run the plugin through pytester on the tiny suite (`suite_files.TINY`,
6 instances: 5 run on a CPU, 1 is skipped for hardware; the trigger item is
``tiny/mm[fp16-17x9x33]``). Each checks that the faulty item fails with the right reason, every
other item passes, results.json is complete and the exit code is 1 (tests failed), not a crash.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import faulty_backends
import pytest
import reliability_backends
import suite_files
import torch

from gemmconf import isolation
from gemmconf.backends import RunOptions
from gemmconf.isolation import timeouts
from gemmconf.outcome import ItemOutcome, render
from gemmconf.plugin.recording import leak_warnings
from gemmconf.record import PRINTED_NOTE, PRINTED_STDOUT_NOTE, typed
from gemmconf.scenario import load_suite

pytest_plugins = ["pytester"]

TRIGGER = faulty_backends.TRIGGER_ID
IN_SUITE = 6


@pytest.fixture
def suite(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The tiny suite, with the faulty backends' calls logged."""
    monkeypatch.setenv(faulty_backends.LOG_ENV, str(suite.path / "calls.log"))
    return suite


def document(pytester: pytest.Pytester, name: str = "reports/results.json") -> dict:
    return json.loads((pytester.path / name).read_text())


def by_backend(doc: dict, backend: str) -> dict[str, dict]:
    return {r["id"]: r for r in doc["records"] if r["backend"] == backend}


def calls(pytester: pytest.Pytester) -> list[tuple[int, str, bool]]:
    return faulty_backends.logged_calls(pytester.path / "calls.log")


def assert_costs_only_the_trigger(doc: dict, backend: str, reason: str) -> None:
    records = by_backend(doc, backend)
    assert len(records) == IN_SUITE
    assert records[TRIGGER]["outcome"] == "failed"
    assert reason in records[TRIGGER]["reason"]
    others = {rid: r["outcome"] for rid, r in records.items() if rid != TRIGGER}
    assert others == {
        rid: "skipped" if records[rid].get("skip_class") else "passed" for rid in others
    }, {rid: records[rid].get("reason") for rid in others}  # mm_sm90 runs on a Hopper GPU


def test_crashes_cost_one_item_each_and_the_run_goes_on(suite):
    result = suite.runpytest(
        "suites",
        "--backend",
        "faulty_backends:segfault,faulty_backends:aborts,faulty_backends:exits",
        "--tb=short",  # pytest's per-failure sections: the crash's captured stderr
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = document(suite)
    assert doc["complete"] is True and doc["isolated"] is True and doc["item_timeout"] == "auto"
    counts = doc["counts"]
    assert counts["failed"] == 3 and counts["passed"] + counts["skipped"] == 15
    assert counts["error"] == counts["xfailed"] == counts["xpassed"] == 0
    assert_costs_only_the_trigger(doc, "segfault", "crashed: SIGSEGV")
    assert_costs_only_the_trigger(doc, "aborts", "crashed: SIGABRT")
    assert_costs_only_the_trigger(doc, "exits", "crashed: exit code 3")
    # each crash cost its worker: 3 crashes, 4 worker processes, none of them pytest's
    pids = [pid for pid, _, _ in calls(suite)]
    assert len(set(pids)) == 4 and os.getpid() not in pids
    result.stdout.fnmatch_lines(
        [
            "*crashed: SIGSEGV: the worker process running this item was killed by SIGSEGV*",
            "*Captured stderr call*",
            "*Fatal Python error: Segmentation fault*",
        ]
    )
    # and the record keeps the end of it (results.json has no captured output)
    printed = by_backend(doc, "segfault")[TRIGGER]["details"].split(PRINTED_NOTE, 1)
    assert len(printed) == 2 and "Fatal Python error: Segmentation fault" in printed[1]
    # what it printed on stdout too, where a runtime check says why it aborted
    (aborted,) = typed([by_backend(doc, "aborts")[TRIGGER]])
    assert PRINTED_STDOUT_NOTE in aborted.details
    assert aborted.printed_stream == "stdout"
    assert aborted.printed_error == faulty_backends.RUNTIME_CHECK


def test_a_failure_keeps_the_diagnostic_its_worker_printed_and_a_pass_keeps_nothing(suite):
    """A compiler that raises "JIT compilation failed. See diagnostics." and prints the
    diagnostic on stderr (IREE's turbine backend, a trial of 2026-11-30): the record's details
    keep what the worker printed during the item, and the diagnostic is the record's
    `printed_error` (what the failure groups split by)."""
    suite.runpytest("suites", "--backend", "faulty_backends:diagnoses")
    records = by_backend(document(suite), "diagnoses")
    failed = records[TRIGGER]
    assert failed["outcome"] == "failed" and "JIT compilation failed" in failed["reason"]
    assert PRINTED_NOTE in failed["details"]
    (record,) = typed([failed])
    assert record.printed_error == faulty_backends.DIAGNOSTIC
    # and not the lines the harness's own profiler had kineto print (torch 2.13: "USDT: ...")
    assert "profiler_st" not in failed["details"], failed["details"]
    noted = [r["id"] for r in records.values() if PRINTED_NOTE in (r.get("details") or "")]
    assert noted == [TRIGGER]  # the passing items printed nothing: their records say nothing


def test_hang_times_out_and_the_worker_is_killed(suite):
    result = suite.runpytest("suites", "--backend", "faulty_backends:hangs", "--item-timeout", "4")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = document(suite)
    assert doc["complete"] is True and doc["item_timeout"] == "4"
    assert_costs_only_the_trigger(doc, "hangs", "timed out after 4 s")
    assert by_backend(doc, "hangs")[TRIGGER]["duration_s"] >= 4
    hung = {pid for pid, _, trigger in calls(suite) if trigger}
    assert len(hung) == 1
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left behind
        os.kill(hung.pop(), 0)


def test_cuda_error_replaces_the_worker(suite):
    """The CPU stand-in for a GPU fault: after a CUDA error the worker's context is lost."""
    result = suite.runpytest("suites", "--backend", "faulty_backends:cuda_error")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = document(suite)
    assert_costs_only_the_trigger(doc, "cuda-error", "CUDA error: an illegal memory")
    # the record keeps what the one-line reason leaves out: where the backend raised
    details = by_backend(doc, "cuda-error")[TRIGGER]["details"]
    assert "Traceback" in details and "_fake_cuda_fault" in details
    log = calls(suite)
    at = next(i for i, (_, _, trigger) in enumerate(log) if trigger)
    assert {pid for pid, _, _ in log[: at + 1]} == {log[at][0]}  # one worker up to the fault
    assert log[at][0] not in {pid for pid, _, _ in log[at + 1 :]}  # a fresh one after it


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_out_of_bounds_kernel_costs_one_item(suite):
    result = suite.runpytest("suites", "--backend", "faulty_backends:oob_write,eager")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = document(suite)
    assert doc["complete"] is True
    records = by_backend(doc, "oob-write")
    assert records[TRIGGER]["outcome"] == "failed"
    assert "illegal memory access" in records[TRIGGER]["reason"]
    assert all(
        r["outcome"] in ("passed", "skipped") for rid, r in records.items() if rid != TRIGGER
    )
    assert {r["outcome"] for r in by_backend(doc, "eager").values()} <= {"passed", "skipped"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_memory_leak_is_reported(suite):
    result = suite.runpytest("suites", "--backend", "faulty_backends:leaks_gpu_memory,eager")
    doc = document(suite)
    ran = [r for r in by_backend(doc, "leaks-gpu-memory").values() if r["outcome"] == "passed"]
    leaked = [r["metrics"]["leaked_bytes"] for r in ran if "leaked_bytes" in r["metrics"]]
    assert len(leaked) == len(ran) - 1  # all but the backend's first item are checked
    assert all(size >= 4 << 20 for size in leaked)
    assert not any(
        "leaked_bytes" in r.get("metrics", {}) for r in by_backend(doc, "eager").values()
    )
    result.stdout.fnmatch_lines(["*warning: backend leaks-gpu-memory left GPU memory allocated*"])


def test_isolated_by_default_no_isolate_in_process_suite_bugs_errors_either_way(suite):
    (suite.path / "suites" / "bug.yaml").write_text(
        "suite: bug\nscenarios:\n  - name: mm_raises\n    op: mm\n"
        "    shape: {M: 4, N: 4, K: 4}\n    checks: {raises: ValueError}\n"
    )
    args = ["suites", "--backend", "faulty_backends:logs_only,faulty_backends:broken_protocol"]
    for mode in ([], ["--no-isolate"]):
        (suite.path / "calls.log").unlink(missing_ok=True)
        result = suite.runpytest(*args, *mode, "--tb=short")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        doc = document(suite)
        assert doc["isolated"] is (not mode)
        pids = {pid for pid, _, _ in calls(suite)}
        assert (pids == {os.getpid()}) if mode else (len(pids) == 1 and os.getpid() not in pids)
        for backend in ("logs-only", "broken-protocol"):  # eager does not raise: a suite bug
            record = by_backend(doc, backend)["bug/mm_raises"]
            assert record["outcome"] == "error" and "expects eager to raise" in record["reason"]
        records = by_backend(doc, "broken-protocol")  # a harness error fails its item only
        assert records[TRIGGER]["outcome"] == "failed"
        assert_costs_only_the_trigger(
            {"records": [r for r in doc["records"] if r["id"] != "bug/mm_raises"]},
            "broken-protocol",
            "",
        )
        result.stdout.fnmatch_lines(["*has no attribute 'graph_count'*"])


def test_same_seed_same_results_other_seeds_same_verdicts(suite):
    runs = {}
    for name, seed in (("a", 0), ("b", 0), ("s1", 1), ("s2", 2)):
        assert (
            suite.runpytest(
                "suites", "--backend", "eager", "--seed", str(seed), "--results", f"{name}.json"
            ).ret
            == 0
        )
        runs[name] = document(suite, f"{name}.json")

    # what the harness measured of the machine: times, waits and memory (the host's on every
    # device, the GPU's on GPU runs)
    measured = {"duration_s", "phase_s", "memory_wait_s", "host_memory_peak_bytes"}
    measured |= {"memory_peak_bytes", "memory_peak_allocated_bytes", "worker_max_rss_bytes"}

    def results(doc: dict) -> list[dict]:
        return [
            {k: v for k, v in r.items() if k not in measured}
            | {"metrics": {k: v for k, v in r.get("metrics", {}).items() if k not in measured}}
            for r in doc["records"]
        ]

    for a, b in zip(results(runs["a"]), results(runs["b"]), strict=True):  # to the last bit
        metrics = a["metrics"].keys() | b["metrics"].keys()
        assert a == b, [k for k in metrics if a["metrics"].get(k) != b["metrics"].get(k)]
    same_run = {k for k in runs["a"] if runs["a"][k] != runs["b"][k]}
    assert same_run <= {"records", "finished", "command"}
    verdicts = {
        name: {(r["id"], r["outcome"]) for r in doc["records"]} for name, doc in runs.items()
    }
    assert verdicts["a"] == verdicts["s1"] == verdicts["s2"]
    errors = {
        name: [r.get("metrics", {}).get("max_abs_err") for r in doc["records"]]
        for name, doc in runs.items()
    }
    assert errors["a"] != errors["s1"] != errors["s2"]  # the seed reaches the inputs


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (
            "x",
            "--item-timeout: expected a number of seconds >= 0 (0: no timeout) or 'auto', got 'x'",
        ),
        ("-1", "--item-timeout: expected a number of seconds >= 0*got '-1'"),
        ("inf", "--item-timeout: expected*got 'inf'"),
    ],
)
def test_bad_item_timeout_is_a_usage_error(suite, value, words):
    result = suite.runpytest("suites", "--backend", "eager", "--item-timeout", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{words}*"])
    assert not (suite.path / "reports" / "results.json").exists()


# --- units --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> dict[str, object]:
    path = tmp_path_factory.mktemp("suite") / "t.yaml"
    path.write_text(
        suite_files.TINY
        + """
  - name: big
    op: mm
    shape: {M: 4096, N: 4096, K: 4096}
  - name: dyn
    op: mm
    shapes: [{M: 8, N: 8, K: 8}, {M: 9, N: 8, K: 8}, {M: 16, N: 8, K: 8}]
    compile: dynamic
"""
    )
    return {i.id: i for i in load_suite(path)}


def test_default_timeout_scales_with_the_item(instances):
    small, big, dyn = instances["tiny/addmm"], instances["tiny/big"], instances["tiny/dyn"]
    timeout = isolation.scaled_timeout
    assert timeout(small, "cuda", cold=False) == timeouts.BASE_S
    assert timeout(dyn, "cuda", cold=False) == timeouts.BASE_S + 2 * timeouts.PER_SHAPE_SET_S
    assert (
        timeout(big, "cpu", cold=False)
        > timeout(big, "cuda", cold=False)
        > timeout(small, "cuda", cold=False)
    )
    assert timeout(small, "cpu", cold=True) == timeout(small, "cpu", cold=False) + timeouts.COLD_S
    assert isolation.TimeoutPolicy().seconds(big, "cpu", cold=False) == timeout(
        big, "cpu", cold=False
    )
    assert isolation.TimeoutPolicy().seconds(small, "cpu", cold=False, slowest=30.0) == 300
    assert isolation.TimeoutPolicy(fixed=7).seconds(big, "cpu", cold=True, slowest=30.0) == 7
    assert isolation.TimeoutPolicy(fixed=0).seconds(big, "cpu", cold=True) is None


def test_a_backends_compile_allowance_is_added_per_compile_under_auto_only(instances):
    """nvcc-compiling backends (inductor's CUTLASS templates, the cutlass backend) declare
    `compile_timeout_s`; auto adds it once per compile the item may make."""
    static, dyn = instances["tiny/addmm"], instances["tiny/dyn"]
    auto = isolation.TimeoutPolicy()
    base = auto.seconds(static, "cuda", cold=False)
    assert auto.seconds(static, "cuda", cold=False, compile_s=600.0) == base + 600.0
    # tiny/dyn: three shape sets through one dynamic compile, so one allowance
    assert (
        auto.seconds(dyn, "cuda", cold=False, compile_s=600.0)
        == auto.seconds(dyn, "cuda", cold=False) + 600.0
    )
    assert (
        isolation.TimeoutPolicy(fixed=7).seconds(static, "cuda", cold=False, compile_s=600.0) == 7
    )


def test_compile_allowance_is_read_from_the_backend_and_never_negative():
    from gemmconf.backends import resolve
    from gemmconf.backends.base import compile_allowance

    assert compile_allowance(resolve("inductor-max-autotune:CUTLASS")) == 600.0
    assert compile_allowance(resolve("inductor-max-autotune:TRITON")) == 180.0
    assert compile_allowance(resolve("inductor")) == 0.0
    assert compile_allowance(resolve("cutlass")) > 0
    assert compile_allowance(resolve("eager")) == 0.0

    class Odd:
        compile_timeout_s = "soon"

    assert compile_allowance(Odd()) == 0.0


def test_parse_timeout():
    assert isolation.parse_timeout("auto") == isolation.TimeoutPolicy()
    assert isolation.parse_timeout("2.5").fixed == 2.5
    assert isolation.parse_timeout("0").describe() == "none"
    for bad in ("", "nan", "-0.5", "ten"):
        with pytest.raises(ValueError, match="expected a number of seconds"):
            isolation.parse_timeout(bad)


class FakeMemory:
    """Allocated GPU memory as live tensors + cached workspaces + garbage (freed by gc)."""

    def __init__(self, live: int = 1000, cached: int = 0, garbage: int = 0):
        self.live, self.cached, self.garbage = live, cached, garbage
        self.collected = 0

    def allocated(self) -> int:
        return self.live + self.cached + self.garbage

    def drop_caches(self) -> None:
        self.cached = 0

    def collect(self) -> None:
        self.collected += 1
        self.garbage = 0

    def watch(self) -> isolation.MemoryWatch:
        return isolation.MemoryWatch(
            self.allocated, self.drop_caches, self.collect, threshold=1 << 20
        )


def test_memory_watch_reports_growth_beyond_threshold_that_gc_does_not_free():
    memory = FakeMemory()
    watch = memory.watch()
    before = watch.baseline()
    memory.live += 512  # below the threshold: no collection, nothing reported
    assert watch.leaked_since(before) is None and memory.collected == 0
    memory.garbage, memory.live = 5 << 20, memory.live + (3 << 20)  # 5 MiB garbage, 3 MiB kept
    assert watch.leaked_since(before) == (3 << 20) + 512 and memory.collected == 1
    memory = FakeMemory()
    watch = memory.watch()
    before = watch.baseline()
    memory.cached, memory.garbage = 32 << 20, 8 << 20
    assert watch.leaked_since(before) is None  # all of it was cached or garbage


def test_memory_watch_sees_a_leak_in_the_item_that_drops_an_earlier_workspace():
    # Seen on an H200: the first watched item began with the workspace an earlier item made; the
    # workspace went during the check, and the item's own 4 MiB leak hid behind it.
    memory = FakeMemory(cached=32 << 20)
    watch = memory.watch()
    before = watch.baseline()
    memory.cached, memory.live = 32 << 20, memory.live + (4 << 20)  # workspace re-made; a leak
    assert watch.leaked_since(before) == 4 << 20


def test_run_guarded_records_leaked_bytes(instances):
    memory = FakeMemory()

    class Leaky:
        name = "leaky"

        def availability(self):
            return None

        def compile(self, fn, example_inputs, *, dynamic):
            memory.live, memory.garbage = memory.live + (2 << 20), 2 << 20
            return faulty_backends.logs_only.compile(fn, example_inputs, dynamic=dynamic)

    request = isolation.ItemRequest(
        instances["tiny/addmm"], "leaky", seed=0, device="cpu", target=None, repro="pytest x"
    )
    result = isolation.run_guarded(request, Leaky(), watch=memory.watch())
    assert result.passed and result.metrics["leaked_bytes"] == 2 << 20
    clean = isolation.run_guarded(request, faulty_backends.logs_only)
    assert "leaked_bytes" not in clean.metrics


def test_leak_check_watches_cuda_items_after_a_backends_first(instances, monkeypatch):
    monkeypatch.setattr(
        isolation.guard, "cuda_memory_watch", lambda threshold: ("watch", threshold)
    )
    check = isolation.LeakCheck(threshold=5)

    def request(label: str, device: str) -> isolation.ItemRequest:
        return isolation.ItemRequest(
            instances["tiny/addmm"], label, seed=0, device=device, target=None, repro="r"
        )

    assert check.watch_for(request("a", "cuda")) is None  # its first: cuBLAS workspaces
    assert check.watch_for(request("a", "cuda")) == ("watch", 5)
    assert check.watch_for(request("a", "cpu")) is None
    assert check.watch_for(request("b", "cuda")) is None


def test_leak_warnings_name_the_backend():
    records = [
        {"backend": "a", "metrics": {"leaked_bytes": 3 << 20}},
        {"backend": "a", "metrics": {"leaked_bytes": 1 << 20}},
        {"backend": "b", "metrics": {"max_abs_err": 0.0}},
        {"backend": "c"},
    ]
    lines = leak_warnings(typed({"id": "s/x", "outcome": "passed", **r} for r in records))
    assert len(lines) == 1 and "backend a left GPU memory allocated after 2 item(s)" in lines[0]
    assert "up to 3.0 MiB, 4.0 MiB in all" in lines[0]


def test_a_cuda_fault_outside_the_backend_restarts_the_worker(instances, monkeypatch):
    """The GPU reports an out-of-bounds write at the next synchronisation, often in the
    oracle, after the backend returned: the worker still fails the item and exits."""

    def fault(*args, **kwargs):
        raise torch.AcceleratorError("CUDA error: an illegal memory access was encountered\nmore")

    monkeypatch.setattr(isolation.guard, "run_item", fault)
    request = isolation.ItemRequest(
        instances["tiny/addmm"], "x", seed=0, device="cuda", target=None, repro="pytest x"
    )
    reply = isolation.serve(request, faulty_backends.logs_only)
    assert reply.kind == "result" and reply.restart and reply.result.cuda_fault
    assert reply.result.kind == "crash"
    assert "CUDA error: an illegal memory access was encountered" in render(reply.result).reason

    monkeypatch.setattr(isolation.guard, "run_item", lambda *a, **k: 1 / 0)  # a harness bug
    reply = isolation.serve(request, faulty_backends.logs_only)
    assert reply.kind == "result" and not reply.restart
    assert reply.result.kind == "harness error"
    assert "ZeroDivisionError" in render(reply.result).reason


def test_a_fault_found_at_the_final_synchronize_fails_the_item(instances, monkeypatch):
    class FaultedCuda:
        def is_initialized(self) -> bool:
            return True

        def synchronize(self) -> None:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(isolation.guard, "run_item", lambda *a, **k: ItemOutcome())
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=FaultedCuda()))
    request = isolation.ItemRequest(
        instances["tiny/addmm"], "x", seed=0, device="cuda", target=None, repro="pytest x"
    )
    reply = isolation.serve(request, faulty_backends.logs_only)
    assert reply.restart and not reply.result.passed and reply.result.kind == "crash"
    assert "CUDA error: an illegal memory access was encountered" in render(reply.result).reason


def test_results_travel_as_plain_values():
    import numpy as np

    result = ItemOutcome(
        metrics={
            "a": np.float64(0.5),
            "b": torch.tensor(3),
            "c": [np.int32(2)],
            "d": None,
            "e": object(),
        },
    )
    plain = isolation._plain_result(result).metrics
    assert plain["a"] == 0.5 and type(plain["a"]) is float
    assert plain["b"] == 3 and type(plain["b"]) is int
    assert plain["c"] == [2] and plain["d"] is None and isinstance(plain["e"], str)
    json.dumps(plain)


def test_worker_runs_items_like_run_item(instances):
    """The runner API without pytest: same verdicts and metrics as in-process."""
    runner = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:
        requests = [
            isolation.ItemRequest(
                instances[i], "eager", seed=0, device="cpu", target=None, repro="r"
            )
            for i in ("tiny/addmm", "tiny/mm[fp16-17x9x33]")
        ]
        isolated = [runner.run(r) for r in requests]
        here = [
            isolation.InProcessRunner(
                {"eager": isolation.configured_backend("eager", RunOptions())}
            ).run(r)
            for r in requests
        ]
        measured = {"host_memory_peak_bytes"}  # of the process that ran the item

        def judged(outcome: ItemOutcome) -> dict:
            return {k: v for k, v in outcome.metrics.items() if k not in measured}

        assert [judged(r) for r in isolated] == [judged(r) for r in here]
        assert all(measured <= r.metrics.keys() for r in isolated + here)
        assert all(r.passed for r in isolated) and runner.starts == 1
    finally:
        runner.close()
    assert runner._worker is None


def test_a_lost_worker_is_replaced_by_a_spare_kept_from_then_on(instances, monkeypatch):
    """From a runner's first lost worker on, a spare is kept started: the item after each loss
    is served by it, and a worker that lost its CUDA context is killed, not waited for."""
    monkeypatch.syspath_prepend(str(Path(faulty_backends.__file__).parent))
    runner = isolation.IsolatedRunner({"cuda-error": "faulty_backends:cuda_error"}, RunOptions())

    def request(item_id: str) -> isolation.ItemRequest:
        return isolation.ItemRequest(
            instances[item_id], "cuda-error", seed=0, device="cpu", target=None, repro="r"
        )

    plain, trigger = request("tiny/addmm"), request(faulty_backends.TRIGGER_ID)
    try:
        assert runner.run(plain).passed and runner._spare is None
        first = runner._worker
        lost = runner.run(trigger)
        assert "illegal memory access" in render(lost).reason
        assert runner._worker is None and runner._spare is not None
        first.process.wait(timeout=30)  # killed; its exit was not waited for by the run
        spare = runner._spare
        assert runner.run(plain).passed
        assert runner._worker is spare and runner._spare not in (None, spare)
        spare = runner._spare
        assert not runner.run(trigger).passed and runner._spare is spare
        assert runner.run(plain).passed and runner._worker is spare
        # the first worker; the spare at the first loss; one more at each promotion
        assert runner.starts == 4
    finally:
        runner.close()
    assert runner._worker is None and runner._spare is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/clear_refs")
def test_the_host_memory_an_item_added_at_its_peak_is_measured_in_the_worker(instances):
    """A backend that writes 200 MiB of the host's memory during the trigger item's calls: the
    item's record says it added that much at its peak, and the item before it (the same worker,
    warm) did not."""
    runner = isolation.IsolatedRunner({"hungry": "reliability_backends:host_hungry"}, RunOptions())
    try:
        outcomes = [
            runner.run(
                isolation.ItemRequest(
                    instances[i], "hungry", seed=0, device="cpu", target=None, repro="r"
                )
            )
            for i in ("tiny/addmm", "tiny/addmm", TRIGGER)
        ]
    finally:
        runner.close()
    assert all(o.passed for o in outcomes) and runner.starts == 1
    warm, hungry = (o.metrics["host_memory_peak_bytes"] for o in outcomes[1:])
    assert warm < 32 << 20, warm
    allocated = reliability_backends.HUNGRY_BYTES
    assert allocated - (4 << 20) <= hungry < allocated + (32 << 20), (hungry, allocated)


def test_exit_texts():
    assert isolation._exit_text(-11)[0] == "crashed: SIGSEGV"
    assert isolation._exit_text(-6)[0] == "crashed: SIGABRT"
    assert isolation._exit_text(3)[0] == "crashed: exit code 3"
    assert isolation.is_cuda_fault(torch.AcceleratorError("CUDA error: device-side assert"))
    # known from the exception's class, never from its words
    assert not isolation.is_cuda_fault(RuntimeError("CUDA error: device-side assert triggered"))
    assert not isolation.is_cuda_fault(torch.OutOfMemoryError("CUDA out of memory."))


def test_a_debugger_gets_the_item_in_process(suite):
    result = suite.runpytest(
        "suites", "--backend", "faulty_backends:logs_only", "--pdb", "-k", "addmm"
    )
    assert result.ret == 0
    assert {pid for pid, _, _ in calls(suite)} == {os.getpid()}
    result.stdout.fnmatch_lines(["gemmconf: items run in-process; item timeout none"])


def test_a_worker_that_cannot_start_fails_the_item_with_the_reason(instances):
    runner = isolation.IsolatedRunner({"x": "no_such_module:backend"}, RunOptions())
    request = isolation.ItemRequest(
        instances["tiny/addmm"], "x", seed=0, device="cpu", target=None, repro="r"
    )
    try:
        result = runner.run(request)
    finally:
        runner.close()
    assert not result.passed and result.kind == "harness error"
    assert "isolation worker failed to start: " in render(result).reason
    assert "unknown backend 'no_such_module:backend'" in render(result).reason
