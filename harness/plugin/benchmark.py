"""--benchmark: time passing items next to cuBLAS (the timing itself is gemmconf.bench)."""

from __future__ import annotations

from typing import Any

import pytest

from gemmconf.plugin import options
from gemmconf.plugin.hardware import gpu_ids


def pytest_addoption(parser: pytest.Parser) -> None:
    group = options.group(parser)
    group.addoption(
        "--benchmark",
        action="store_true",
        default=False,
        help="after an item passes, time it with triton.testing.do_bench (median, "
        "warm-up, L2 flushed, inputs rotated) next to cuBLAS on the same inputs; "
        "records time_ms, tflops, cublas_tflops and vs_cublas in the results and "
        "prints a table. Needs a CUDA GPU and at most one xdist worker per GPU",
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


def benchmark_summary(records: list[dict[str, Any]]) -> list[str]:
    """The terminal summary's benchmark table (the timing itself is gemmconf.bench)."""
    from gemmconf.bench import table

    lines = table(records)
    heading = (
        "gemmconf benchmark (median ms; TFLOP/s of the GEMM; cuBLAS on the same inputs)"
        if lines
        else "gemmconf benchmark: no item passed, nothing was timed"
    )
    return [heading, *lines]
