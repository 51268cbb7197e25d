"""Benchmark mode (`--benchmark`, `gemmconf bench`): how fast a backend's GEMM runs next to
cuBLAS, on the same inputs, in the same process.

For an item that passed its correctness checks, `measure` builds a few copies of the item's first
shape set (different seeds, so the backend cannot be served from L2 across calls), calls the
compiled function once per copy (compiles and autotuning happen outside the timing), then times

- the backend: the compiled function, each call on the next copy;
- cuBLAS: the same eager program (`torch.mm`, `torch.addmm`, `torch._scaled_mm`, ...: aten, which
  dispatches GEMMs to cuBLAS/cuBLASLt) on the same copies;

with `triton.testing.do_bench` (median of the timed calls after a warm-up; do_bench writes a
256 MB buffer before each call, so L2 starts cold). The record's metrics gain `time_ms`,
`tflops`, `cublas_time_ms`, `cublas_tflops` and `vs_cublas` (cuBLAS time / backend time: above
1.0 the backend is faster). FLOPs are the op's count (`OpSpec.flops`: 2 * M * N * K per batch
entry); epilogues are free in the count, as they are in cuBLAS's own figures.

No test asserts a time: the figures are printed (plugin summary) and recorded, never judged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from gemmconf import inputs, program
from gemmconf.gemm.ops import OPS
from gemmconf.scenario import ScenarioInstance

Timer = Callable[[Callable[[], Any]], float]  # calls the function, returns milliseconds

L2_BYTES = 64 << 20  # larger than any L2 the harness meets (H100 50 MB, H200 60 MB)
MAX_COPIES = 16


def default_timer(fn: Callable[[], Any]) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def gemm_flops(instance: ScenarioInstance, index: int = 0) -> float:
    """The op's FLOPs for shape set `index` (0 when a dim is 0)."""
    return float(OPS[instance.op].flops(instance.dims(index)))


def copies_for(bytes_per_copy: int) -> int:
    """How many input copies to rotate through so that together they overflow L2 twice over."""
    if bytes_per_copy <= 0:
        return 1
    return max(1, min(MAX_COPIES, math.ceil(2 * L2_BYTES / bytes_per_copy)))


def _rotating(fn: Callable[..., Any], sets: Sequence[Sequence[Any]]) -> Callable[[], Any]:
    position = [0]

    def call() -> Any:
        args = sets[position[0] % len(sets)]
        position[0] += 1
        return fn(*args)

    return call


def measure(
    instance: ScenarioInstance, backend: Any, *, seed: int, device: str, timer: Timer | None = None
) -> dict[str, float]:
    """Time the backend and cuBLAS on the first shape set; the metrics described above."""
    timer = timer or default_timer
    fn = program.make_function(instance)
    first = inputs.build(instance, 0, seed, device)
    size = sum(t.numel() * t.element_size() for t in first.tensors if hasattr(t, "numel"))
    sets = [first.tensors] + [
        inputs.build(instance, 0, seed + 1000 * n, device).tensors
        for n in range(1, copies_for(size))
    ]
    with program.numerics(instance):
        compiled = backend.compile(fn, sets[0], dynamic=instance.compile.dynamic)
        for args in sets:  # compile, autotune and load every kernel before the clock starts
            compiled(*args)
            fn(*args)
        backend_ms = timer(_rotating(compiled, sets))
        cublas_ms = timer(_rotating(fn, sets))
    flops = gemm_flops(instance)
    return {
        "time_ms": backend_ms,
        "tflops": flops / (backend_ms * 1e-3) / 1e12 if backend_ms > 0 else 0.0,
        "cublas_time_ms": cublas_ms,
        "cublas_tflops": flops / (cublas_ms * 1e-3) / 1e12 if cublas_ms > 0 else 0.0,
        "vs_cublas": cublas_ms / backend_ms if backend_ms > 0 else 0.0,
        "bench_copies": float(len(sets)),
    }


def table(records: Sequence[dict[str, Any]]) -> list[str]:
    """The benchmark figures of a run, one line per benchmarked record."""
    rows = [r for r in records if "tflops" in (r.get("metrics") or {})]
    if not rows:
        return []
    width = max(len(r["id"]) for r in rows)
    lines = [
        f"  {'item':<{width}}  {'backend':<12} {'ms':>9} {'TFLOP/s':>9} "
        f"{'cuBLAS':>9} {'vs cuBLAS':>9}"
    ]
    for r in sorted(rows, key=lambda r: (r["id"], r["backend"])):
        m = r["metrics"]
        lines.append(
            f"  {r['id']:<{width}}  {r['backend']:<12} {m['time_ms']:>9.4f} "
            f"{m['tflops']:>9.1f} {m['cublas_tflops']:>9.1f} {m['vs_cublas']:>8.2f}x"
        )
    return lines
