"""--benchmark and --bench-mode: time passing items next to cuBLAS (the timing itself is
gemmconf.bench); the per-item table and the per-family summary in the terminal and the results."""

from __future__ import annotations

from typing import Any

import pytest

from gemmconf import capability
from gemmconf.bench import BENCH_MODES
from gemmconf.plugin import facts, options
from gemmconf.report.perf import FAST_P, families, table

OPTIONS = (
    options.flag(
        "--benchmark",
        help="after an item passes, time it next to cuBLAS on the same inputs (interleaved "
        "repetitions, L2 flushed, inputs rotated; host time per call too); records time_ms, "
        "tflops, cublas_tflops, vs_cublas, their spreads and the GPU clocks in the results "
        "and prints a table with per-family geomeans and fast_p. Needs a CUDA GPU and at most "
        "one xdist worker per GPU",
    ),
    options.Option(
        "--bench-mode",
        default="wall",
        choices=BENCH_MODES,
        help="with --benchmark, what one timed sample holds: wall (default: the call as a "
        "user sees it, host work and kernels), kernel (device time only: the call is issued "
        "while the GPU is busy), cudagraph (the replay of the call captured in a CUDA graph)",
    ),
)
pytest_addoption = options.registrar(OPTIONS)


def check_benchmark(device: str, workers: int | None) -> None:
    """--benchmark: a GPU, and no two workers timing on one GPU."""
    if device != "cuda":
        raise pytest.UsageError(
            "--benchmark needs a CUDA GPU: timings of the Triton interpreter "
            "or of CPU eager would say nothing about a GPU backend"
        )
    gpus = len(capability.gpu_ids()) or 1
    if workers and workers > gpus:
        raise pytest.UsageError(
            f"--benchmark with -n {workers} would time {workers} workers on "
            f"{gpus} GPU(s) at once: use -n {gpus} or fewer (each xdist "
            "worker is pinned to its own GPU)"
        )


def pytest_configure(config: pytest.Config) -> None:
    """After `hardware`'s (tryfirst): --benchmark needs its GPU."""
    if not options.get(config, "benchmark"):
        return
    if not hasattr(config, "workerinput"):
        check_benchmark(config.stash[facts.MACHINE].device, options.numprocesses(config))
    config.stash[facts.BENCHMARK] = facts.Benchmarking(mode=str(options.get(config, "bench_mode")))


def benchmark_summary(records: list[dict[str, Any]], mode: str = "wall") -> list[str]:
    """The terminal summary's benchmark table (the timing itself is gemmconf.bench)."""
    lines = table(records)
    heading = (
        f"gemmconf benchmark, {mode} mode (median ms of interleaved repetitions, ± their "
        "spread; host us per call; TFLOP/s of the GEMM; cuBLAS on the same inputs)"
        if lines
        else "gemmconf benchmark: no item passed, nothing was timed"
    )
    return [heading, *lines]


def benchmark_block(records: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """The results file's top-level "benchmark" entry: the mode and the family summaries."""
    return {
        "mode": mode,
        "fast_p": list(FAST_P),
        "families": [s.as_json() for s in families(records)],
    }


def pytest_gemmconf_results_fields(
    records: list[dict[str, Any]], config: pytest.Config
) -> dict[str, Any] | None:
    benchmarking = config.stash.get(facts.BENCHMARK, None)
    if benchmarking is None:
        return None
    return {"benchmark": benchmark_block(records, benchmarking.mode)}


def pytest_gemmconf_summary_lines(
    records: list[dict[str, Any]], config: pytest.Config
) -> list[str] | None:
    benchmarking = config.stash.get(facts.BENCHMARK, None)
    return None if benchmarking is None else benchmark_summary(records, benchmarking.mode)
