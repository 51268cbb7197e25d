"""Benchmark mode (harness/bench.py, --benchmark, --bench-mode, `gemmconf bench`), on the CPU.

CUDA events need a GPU, so `measure` is driven here with a clock that calls what it is given
and returns chosen milliseconds: the tests check what is timed, in which order, on which inputs,
and the arithmetic of the figures, never how fast anything is.
"""

from __future__ import annotations

import planted_backends
import pytest
import torch

from gemmconf import bench, isolation
from gemmconf.backends.eager import EagerBackend
from gemmconf.plugin import benchmark as plugin_benchmark
from gemmconf.report import perf
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


class FakeClock:
    """A Clock that calls what it is given and returns scripted milliseconds: the backend's
    samples (the first `prepare`) take `backend_ms` in turn, cuBLAS's `cublas_ms`."""

    def __init__(self, backend_ms, cublas_ms, *, mode="wall", fail_prepare=None):
        self.mode = mode
        self.script = {"backend": list(backend_ms), "cublas": list(cublas_ms)}
        self.taken = {"backend": 0, "cublas": 0}
        self.log: list[tuple[str, int]] = []  # (side, input copy) of every sample
        self.host_calls: list[int] = []
        self.prepared: list[str] = []
        self.fail_prepare = fail_prepare

    def prepare(self, fn, sets):
        side = "cublas" if self.prepared else "backend"
        self.prepared.append(side)
        if side == "backend" and self.fail_prepare is not None:
            raise self.fail_prepare
        return [(side, index, lambda a=args: fn(*a)) for index, args in enumerate(sets)]

    def host_ms(self, call, calls):
        for _ in range(calls):
            call()
        self.host_calls.append(calls)
        return 0.01 * len(self.host_calls)  # backend 10 us, cuBLAS 20 us

    def sample(self, call, host_ms):
        side, index, fn = call
        fn()
        self.log.append((side, index))
        values = self.script[side]
        value = values[self.taken[side] % len(values)]
        self.taken[side] += 1
        return value

    def gpu_state(self):
        return {"sm_clock_mhz": 1755.0, "temp_c": 41.0}


def test_flops_count_the_gemm_per_batch_entry(instances):
    assert bench.gemm_flops(instances["b/mm"]) == 2 * 64 * 32 * 16
    assert bench.gemm_flops(instances["b/bmm"]) == 2 * 3 * 8 * 4 * 2


def test_copies_overflow_l2_twice_and_stay_bounded():
    assert bench.copies_for(256 << 20) == 1  # 8192^2 bf16 operands: L2 cannot hold one
    assert bench.copies_for(bench.L2_BYTES) == 2
    assert bench.copies_for(1024) == bench.MAX_COPIES
    assert bench.copies_for(0) == 1


def test_measure_interleaves_backend_and_cublas_on_the_same_copies(instances):
    backend = CountingBackend()
    clock = FakeClock([2.0, 2.2, 1.8], [1.0])
    metrics = bench.measure(instances["b/mm"], backend, seed=0, device="cpu", clock=clock)
    assert backend.compiles == 1
    copies = int(metrics["bench_copies"])
    assert copies == bench.MAX_COPIES  # 12 KiB of operands
    warm_up = backend.seen[:copies]
    assert len(set(warm_up)) == copies  # every copy ran once before the clock
    # host time: back-to-back calls walking through the copies, backend then cuBLAS
    assert clock.host_calls == [bench.HOST_CALLS, bench.HOST_CALLS]
    host = backend.seen[copies : copies + bench.HOST_CALLS]
    assert host == [warm_up[i % copies] for i in range(bench.HOST_CALLS)]
    # then a few estimates on copy 0, then pairs A B A B ..., each pair on one copy in turn
    estimates, timed = clock.log[: 2 * bench.ESTIMATE_REPS], clock.log[2 * bench.ESTIMATE_REPS :]
    assert estimates == [("backend", 0), ("cublas", 0)] * bench.ESTIMATE_REPS
    reps = int(metrics["bench_reps"])
    assert reps == bench.repetitions(3.0) and len(timed) == 2 * reps
    assert timed[:4] == [("backend", 0), ("cublas", 0), ("backend", 1), ("cublas", 1)]
    assert timed == [(side, r % copies) for r in range(reps) for side in ("backend", "cublas")]
    flops = 2 * 64 * 32 * 16
    assert metrics["time_ms"] == 2.0 and metrics["cublas_time_ms"] == 1.0  # medians
    assert metrics["tflops"] == pytest.approx(flops / 2e-3 / 1e12)
    assert metrics["vs_cublas"] == 0.5  # cuBLAS twice as fast
    assert 0 < metrics["time_spread_ms"] < 0.4 and metrics["cublas_time_spread_ms"] == 0
    assert metrics["host_ms"] == 0.01 and metrics["cublas_host_ms"] == 0.02
    assert metrics["bench_mode"] == "wall"
    assert metrics["gpu_sm_clock_mhz"] == 1755.0 and metrics["gpu_temp_c"] == 41.0


class AdapterBackend(CountingBackend):
    """Its Compiled is an adapter with bookkeeping per call and a `user_callable()` without it."""

    def compile(self, fn, example_inputs, *, dynamic):
        plain = super().compile(fn, example_inputs, dynamic=dynamic)
        backend = self

        class Adapter:
            adapter_calls = 0

            def __call__(self, *args):
                Adapter.adapter_calls += 1
                return plain(*args)

            def user_callable(self):
                return plain

        backend.adapter = Adapter
        return Adapter()


def test_measure_times_the_callable_users_call_not_the_adapter(instances):
    backend = AdapterBackend()
    clock = FakeClock([2.0], [1.0])
    metrics = bench.measure(instances["b/mm"], backend, seed=0, device="cpu", clock=clock)
    copies = int(metrics["bench_copies"])
    # the adapter ran the warm-up calls only; host time and samples went to the user callable
    assert backend.adapter.adapter_calls == copies
    timed_calls = bench.HOST_CALLS + bench.ESTIMATE_REPS + int(metrics["bench_reps"])
    assert len(backend.seen) == copies + timed_calls


def test_measure_in_a_mode_that_cannot_take_the_backend_says_why(instances):
    clock = FakeClock([1.0], [1.0], mode="cudagraph", fail_prepare=RuntimeError("sync in graph"))
    with pytest.raises(bench.BenchError, match=r"cudagraph: .* could not be prepared .*sync in"):
        bench.measure(
            instances["b/mm"],
            CountingBackend(),
            seed=0,
            device="cpu",
            mode="cudagraph",
            clock=clock,
        )
    with pytest.raises(ValueError, match="unknown benchmark mode 'fast'; known: wall, kernel"):
        bench.measure(instances["b/mm"], CountingBackend(), seed=0, device="cpu", mode="fast")


def test_repetitions_and_spread():
    assert bench.repetitions(1.0) == 200  # the 200 ms budget over a 1 ms pair
    assert bench.repetitions(100.0) == bench.MIN_REPS
    assert bench.repetitions(1e-4) == bench.MAX_REPS == bench.repetitions(0.0)
    assert bench.robust_spread([1.0]) == 0.0
    # IQR / 1.349: a normal sample's standard deviation; one outlier barely moves it
    assert bench.robust_spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 1.349)
    assert bench.robust_spread([1.0, 2.0, 3.0, 4.0, 500.0]) == pytest.approx(2.0 / 1.349)


def test_summarise_pairs_ratios():
    m = bench.summarise([2.0, 4.0], [1.0, 4.0], flops=2e9)
    assert m["time_ms"] == 3.0 and m["cublas_time_ms"] == 2.5
    assert m["vs_cublas"] == pytest.approx(2.5 / 3.0)
    assert m["vs_cublas_spread"] > 0 and m["bench_reps"] == 2.0


def test_nvidia_smi_line_is_parsed_and_unreadable_fields_dropped():
    line = "1755, 2619, 1980, 41, [N/A]\n"
    assert bench.parse_nvidia_smi(line) == {
        "sm_clock_mhz": 1755.0,
        "mem_clock_mhz": 2619.0,
        "max_sm_clock_mhz": 1980.0,
        "temp_c": 41.0,
    }
    two = "1000, 1, 1, 30, 100\n1500, 2, 2, 50, 300.5\n"
    assert bench.parse_nvidia_smi(two, device=1)["power_w"] == 300.5


def timed(item: str, dtype: str, m: int, ratio: float | None, outcome: str = "passed") -> dict:
    metrics = {}
    if ratio is not None:
        metrics = {"vs_cublas": ratio, "time_ms": 1.0, "tflops": 1.0, "cublas_tflops": 1.0}
    return {
        "id": f"bench/{item}",
        "backend": "reference",
        "dtype": dtype,
        "dims": {"M": m, "N": 4096, "K": 4096},
        "outcome": outcome,
        "metrics": metrics,
    }


def test_families_geomean_and_fast_p():
    records = [
        timed("a", "bf16", 8192, 1.1),
        timed("b", "bf16", 8192, 0.9),
        timed("c", "bf16", 8192, None, outcome="failed"),  # counts, never fast
        timed("d", "bf16", 8192, None, outcome="skipped"),  # did not run: left out
        timed("e", "bf16", 16, 0.1),
        timed("f", "e4m3fn", 8192, 0.75),
    ]
    by_family = {s.family: s for s in perf.families(records)}
    assert sorted(by_family) == ["bf16", "bf16 skinny", "e4m3fn"]
    bulk = by_family["bf16"]
    assert (bulk.items, bulk.timed) == (3, 2)
    assert bulk.geomean == pytest.approx((1.1 * 0.9) ** 0.5)
    assert bulk.fast == {0.8: pytest.approx(2 / 3), 1.0: pytest.approx(1 / 3), 1.2: 0.0}
    assert by_family["bf16 skinny"].fast[0.8] == 0.0
    assert by_family["e4m3fn"].as_json()["fast_p"] == {"0.8": 0.0, "1": 0.0, "1.2": 0.0}


def test_table_prints_each_benchmarked_record_and_the_families():
    records = [
        {
            "id": "bench/square[bf16]",
            "backend": "reference",
            "dtype": "bf16",
            "dims": {"M": 8192, "N": 8192, "K": 8192},
            "outcome": "passed",
            "metrics": {
                "time_ms": 1.5,
                "time_spread_ms": 0.015,
                "host_ms": 0.0123,
                "tflops": 733.0,
                "cublas_tflops": 790.0,
                "vs_cublas": 0.928,
            },
        },
        {
            "id": "bench/square[fp16]",
            "backend": "reference",
            "outcome": "passed",
            "metrics": {"err_ratio": 1.0},
        },
    ]
    lines = perf.table(records)
    assert "vs cuBLAS" in lines[0] and "host us" in lines[0]
    row = lines[1]
    assert "bench/square[bf16]" in row and "733.0" in row and "0.93x" in row
    assert "1.0%" in row and "12.3" in row  # spread of the median, host microseconds
    family = next(line for line in lines if line.strip().startswith("reference bf16 "))
    assert "0.93x" in family and "100%" in family  # fast_0.8
    assert perf.table(records[1:]) == []


def test_results_carry_the_mode_and_the_families():
    block = plugin_benchmark.benchmark_block([timed("a", "bf16", 8192, 1.1)], "kernel")
    assert block["mode"] == "kernel" and block["fast_p"] == [0.8, 1.0, 1.2]
    assert block["families"][0]["geomean_vs_cublas"] == pytest.approx(1.1)
    lines = plugin_benchmark.benchmark_summary([timed("a", "bf16", 8192, 1.1)], "kernel")
    assert "kernel mode" in lines[0]


def test_run_guarded_benchmarks_only_passing_items_and_keeps_the_verdict(instances, monkeypatch):
    calls = []

    def measure(instance, backend, *, seed, device, mode):
        calls.append(instance.id)
        assert mode == "kernel"
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
            bench_mode="kernel",
        )

    assert isolation.run_guarded(request("b/mm"), EagerBackend()).metrics["tflops"] == 1.0
    failed = isolation.run_guarded(request("b/bmm"), EagerBackend())
    assert failed.passed and failed.metrics["bench_error"] == "RuntimeError: CUDA out of memory"
    assert "tflops" not in isolation.run_guarded(request("b/mm", False), EagerBackend()).metrics
    wrong = isolation.run_guarded(request("b/mm"), planted_backends.tf32_without_permission)
    assert not wrong.passed and "tflops" not in wrong.metrics
    assert calls == ["b/mm", "b/bmm"]  # not for the unbenchmarked or for the failing item


def test_benchmark_needs_a_gpu_and_one_worker_per_gpu(monkeypatch):
    with pytest.raises(pytest.UsageError, match="needs a CUDA GPU"):
        plugin_benchmark.check_benchmark("cpu", None)
    monkeypatch.setattr(plugin_benchmark.capability, "gpu_ids", lambda: ["0", "1"])
    plugin_benchmark.check_benchmark("cuda", 2)
    plugin_benchmark.check_benchmark("cuda", None)
    with pytest.raises(pytest.UsageError, match="-n 4 would time 4 workers on 2 GPU"):
        plugin_benchmark.check_benchmark("cuda", 4)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU refusal")
def test_benchmark_option_on_a_cpu_is_a_usage_error(suite):
    result = suite.runpytest("suites", "--backend", "eager", "--benchmark")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--benchmark needs a CUDA GPU*"])
    assert not (suite.path / "reports" / "results.json").exists()


def test_the_benchmark_block_goes_in_the_results_header():
    from types import SimpleNamespace

    from gemmconf.plugin import facts

    records = [timed("a", "bf16", 8192, 1.1)]
    config = SimpleNamespace(stash={facts.BENCHMARK: facts.Benchmarking(mode="cudagraph")})
    run = plugin_benchmark.pytest_gemmconf_results_fields(records=records, config=config)
    assert run["benchmark"]["mode"] == "cudagraph"
    assert run["benchmark"]["families"][0]["family"] == "bf16"
    without = SimpleNamespace(stash={})  # no --benchmark: no block
    assert plugin_benchmark.pytest_gemmconf_results_fields(records, without) is None


pytest_plugins = ["pytester"]
