"""--benchmark and --bench-mode: time passing items next to cuBLAS (the timing itself is
gemmconf.bench); the per-item table and the per-family summary in the terminal and the results."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from gemmconf.bench import BENCH_MODES
from gemmconf.plugin import options
from gemmconf.plugin.hardware import gpu_ids
from gemmconf.plugin.stash import STATE
from gemmconf.report.perf import FAST_P, families, table


def pytest_addoption(parser: pytest.Parser) -> None:
    group = options.group(parser)
    group.addoption(
        "--benchmark",
        action="store_true",
        default=False,
        help="after an item passes, time it next to cuBLAS on the same inputs (interleaved "
        "repetitions, L2 flushed, inputs rotated; host time per call too); records time_ms, "
        "tflops, cublas_tflops, vs_cublas, their spreads and the GPU clocks in the results "
        "and prints a table with per-family geomeans and fast_p. Needs a CUDA GPU and at most "
        "one xdist worker per GPU",
    )
    group.addoption(
        "--bench-mode",
        default="wall",
        choices=BENCH_MODES,
        help="with --benchmark, what one timed sample holds: wall (default: the call as a "
        "user sees it, host work and kernels), kernel (device time only: the call is issued "
        "while the GPU is busy), cudagraph (the replay of the call captured in a CUDA graph)",
    )


def check_benchmark(device: str, workers: int | None) -> None:
    """--benchmark: a GPU, and no two workers timing on one GPU."""
    if device != "cuda":
        raise pytest.UsageError(
            "--benchmark needs a CUDA GPU: timings of the Triton interpreter "
            "or of CPU eager would say nothing about a GPU backend"
        )
    gpus = len(gpu_ids()) or 1
    if workers and workers > gpus:
        raise pytest.UsageError(
            f"--benchmark with -n {workers} would time {workers} workers on "
            f"{gpus} GPU(s) at once: use -n {gpus} or fewer (each xdist "
            "worker is pinned to its own GPU)"
        )


def bench_mode(config: pytest.Config) -> str:
    return str(options.get(config, "bench_mode"))


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


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, None, None]:
    state = session.config.stash.get(STATE, None)
    if state is not None and state.benchmark and state.writer is not None:
        # before recording's hook finishes the results file
        state.writer.run["benchmark"] = benchmark_block(
            state.writer.records, bench_mode(session.config)
        )
    return (yield)
