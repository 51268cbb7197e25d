"""Benchmark mode (harness/bench.py, --benchmark, `gemmconf bench`), on the CPU.

do_bench needs a GPU, so `measure` is driven here with a timer that calls the function a few
times and returns chosen milliseconds: the tests check what is timed, on which inputs, and the
arithmetic of the figures, never how fast anything is.
"""

from __future__ import annotations

import faulty_backends
import planted_backends
import pytest
import torch

from gemmconf import bench, isolation
from gemmconf.backends.eager import EagerBackend
from gemmconf.plugin import benchmark as plugin_benchmark
from gemmconf.scenario import load_suite

SUITE = """
suite: b
scenarios:
  - name: mm
    op: mm
    dtype: fp32
    shape: {M: 64, N: 32, K: 16}
  - name: bmm
    op: bmm
    dtype: fp32
    shape: {B: 3, M: 8, N: 4, K: 2}
"""


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> dict[str, object]:
    path = tmp_path_factory.mktemp("suite") / "b.yaml"
    path.write_text(SUITE)
    return {i.id: i for i in load_suite(path)}


class CountingBackend:
    """Eager, counting compiles and remembering which inputs each call saw."""

    name = "counting"

    def __init__(self):
        self.compiles = 0
        self.seen: list[int] = []

    def availability(self):
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        self.compiles += 1

        def call(*args):
            self.seen.append(args[0].data_ptr())
            return fn(*args)

        return call


def fake_timer(ms: dict[str, float], log: list[str]):
    def timer(fn) -> float:
        for _ in range(5):
            fn()
        name = "backend" if len(log) == 0 else "cublas"
        log.append(name)
        return ms[name]

    return timer


def test_flops_count_the_gemm_per_batch_entry(instances):
    assert bench.gemm_flops(instances["b/mm"]) == 2 * 64 * 32 * 16
    assert bench.gemm_flops(instances["b/bmm"]) == 2 * 3 * 8 * 4 * 2


def test_copies_overflow_l2_twice_and_stay_bounded():
    assert bench.copies_for(256 << 20) == 1  # 8192^2 bf16 operands: L2 cannot hold one
    assert bench.copies_for(bench.L2_BYTES) == 2
    assert bench.copies_for(1024) == bench.MAX_COPIES
    assert bench.copies_for(0) == 1


def test_measure_times_backend_and_cublas_on_rotated_copies(instances):
    backend, log = CountingBackend(), []
    metrics = bench.measure(
        instances["b/mm"],
        backend,
        seed=0,
        device="cpu",
        timer=fake_timer({"backend": 2.0, "cublas": 1.0}, log),
    )
    assert log == ["backend", "cublas"] and backend.compiles == 1
    copies = int(metrics["bench_copies"])
    assert copies == bench.MAX_COPIES  # 12 KiB of operands
    warm_up, timed = backend.seen[:copies], backend.seen[copies:]
    assert len(set(warm_up)) == copies  # every copy ran once before the clock
    assert timed == warm_up[:5]  # the timed calls walk through the copies in turn
    flops = 2 * 64 * 32 * 16
    assert metrics["time_ms"] == 2.0 and metrics["cublas_time_ms"] == 1.0
    assert metrics["tflops"] == pytest.approx(flops / 2e-3 / 1e12)
    assert metrics["vs_cublas"] == 0.5  # cuBLAS twice as fast


def test_run_guarded_benchmarks_only_passing_items_and_keeps_the_verdict(instances, monkeypatch):
    calls = []

    def measure(instance, backend, *, seed, device):
        calls.append(instance.id)
        if instance.id == "b/bmm":
            raise RuntimeError("CUDA out of memory")
        return {"tflops": 1.0}

    monkeypatch.setattr(bench, "measure", measure)

    def request(name: str, benchmark: bool = True) -> isolation.ItemRequest:
        return isolation.ItemRequest(
            instances[name],
            "eager",
            seed=0,
            device="cpu",
            target=None,
            repro="-",
            benchmark=benchmark,
        )

    assert isolation.run_guarded(request("b/mm"), EagerBackend()).metrics["tflops"] == 1.0
    failed = isolation.run_guarded(request("b/bmm"), EagerBackend())
    assert failed.passed and failed.metrics["bench_error"] == "RuntimeError: CUDA out of memory"
    assert "tflops" not in isolation.run_guarded(request("b/mm", False), EagerBackend()).metrics
    wrong = isolation.run_guarded(request("b/mm"), planted_backends.tf32_without_permission)
    assert not wrong.passed and "tflops" not in wrong.metrics
    assert calls == ["b/mm", "b/bmm"]  # not for the unbenchmarked or for the failing item


def test_table_prints_each_benchmarked_record():
    records = [
        {
            "id": "bench/square[bf16]",
            "backend": "reference",
            "metrics": {
                "time_ms": 1.5,
                "tflops": 733.0,
                "cublas_tflops": 790.0,
                "vs_cublas": 0.928,
            },
        },
        {"id": "bench/square[fp16]", "backend": "reference", "metrics": {"err_ratio": 1.0}},
    ]
    lines = bench.table(records)
    assert len(lines) == 2 and "vs cuBLAS" in lines[0]
    assert "bench/square[bf16]" in lines[1] and "733.0" in lines[1] and "0.93x" in lines[1]
    assert bench.table(records[1:]) == []


def test_benchmark_needs_a_gpu_and_one_worker_per_gpu(monkeypatch):
    with pytest.raises(pytest.UsageError, match="needs a CUDA GPU"):
        plugin_benchmark.check_benchmark("cpu", None)
    monkeypatch.setattr(plugin_benchmark, "gpu_ids", lambda: ["0", "1"])
    plugin_benchmark.check_benchmark("cuda", 2)
    plugin_benchmark.check_benchmark("cuda", None)
    with pytest.raises(pytest.UsageError, match="-n 4 would time 4 workers on 2 GPU"):
        plugin_benchmark.check_benchmark("cuda", 4)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU refusal")
def test_benchmark_option_on_a_cpu_is_a_usage_error(pytester):
    faulty_backends.make_suite(pytester.path)
    result = pytester.runpytest("suites", "--backend", "eager", "--benchmark")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--benchmark needs a CUDA GPU*"])
    assert not (pytester.path / "reports" / "results.json").exists()


pytest_plugins = ["pytester"]
