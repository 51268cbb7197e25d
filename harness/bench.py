"""Benchmark mode (`--benchmark`, `gemmconf bench`): how fast a backend's GEMM runs next to
cuBLAS, on the same inputs, in the same process.

For an item that passed its correctness checks, `measure` builds a few copies of the item's first
shape set (different seeds, so the backend cannot be served from L2 across calls), calls the
compiled function and the eager program (aten: cuBLAS/cuBLASLt) once per copy (compiles,
autotuning and cuBLAS handles happen outside the timing), then times the compiled function as
the backend's users call it (`user_callable()` where the adapter has one: none of the harness's
per-call bookkeeping is charged to the backend), as follows:

- **host time**: `host_ms` / `cublas_host_ms`, the CPU time one call takes before it returns,
  from a host clock around each of `HOST_CALLS` back-to-back calls with no synchronisation
  (median). What a decode loop pays per call when the GPU keeps up.
- **timed repetitions, interleaved**: backend, cuBLAS, backend, cuBLAS, ... on the same input
  copy in each pair, so clock drift, heat and other tenants hit both sides alike. Each sample is
  one call between two CUDA events, with L2 flushed (a 256 MB write) before it. What the
  interval holds depends on the mode (`--bench-mode`):
  - `wall` (default): the GPU is idle when the start event is recorded, so the interval is the
    call as a user sees it: the host work up to its last launch, then the kernels;
  - `kernel`: the GPU is kept busy (a spin kernel longer than the call's host time) while the
    call is issued, so the interval is device time alone: the kernels and the gaps between them;
  - `cudagraph`: each input copy's call is captured once in a CUDA graph and the replay is timed
    as in `wall`; a backend whose call cannot be captured gets no figure (`bench_error` says why).

The record's metrics gain `time_ms` and `cublas_time_ms` (medians), their spreads
(`time_spread_ms`: the robust standard deviation of one sample, IQR / 1.349), `tflops`,
`cublas_tflops`, `vs_cublas` (cuBLAS time / backend time: above 1.0 the backend is faster) and
`vs_cublas_spread` (of the paired ratios), `bench_reps`, `bench_mode`, and the GPU's clocks,
temperature and power read right after the timing (`gpu_*`, from nvidia-smi, else
`torch.cuda.clock_rate`). `gemmconf report diff` compares these between runs (report/diff.py).
FLOPs are the op's count (`OpSpec.flops`: 2 * M * N * K per batch entry); epilogues are free in
the count, as they are in cuBLAS's own figures.

Per family of items, `gemmconf.report.perf.families` summarises a run (geomean vs cuBLAS and
fast_p); the plugin prints it with the per-item table.

No test asserts a time: the figures are printed (plugin summary) and recorded, never judged.
"""

from __future__ import annotations

import math
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from gemmconf import inputs, program
from gemmconf.backends.base import for_item
from gemmconf.scenario import ScenarioInstance

BENCH_MODES = ("wall", "kernel", "cudagraph")

L2_BYTES = 64 << 20  # larger than any L2 the harness meets (H100 50 MB, H200 60 MB)
FLUSH_BYTES = 256 << 20  # written before every timed sample, as do_bench does
MAX_COPIES = 16
HOST_CALLS = 30  # back-to-back calls for the host time
ESTIMATE_REPS = 3  # samples per side to size the run (not kept)
REP_BUDGET_MS = 200.0  # device time the timed repetitions aim at, both sides together
MIN_REPS, MAX_REPS = 15, 1000


class BenchError(RuntimeError):
    """The item cannot be timed in this mode (a capture that failed, no GPU clock)."""


class Clock(Protocol):
    """Takes one sample of a call in one mode: `CudaClock` on a GPU, fakes in the tests."""

    mode: str

    def prepare(self, fn: Callable[..., Any], sets: Sequence[Sequence[Any]]) -> list[Callable]:
        """One zero-argument call per input copy (a captured graph's replay in cudagraph)."""
        ...

    def host_ms(self, call: Callable[[], Any], calls: int) -> float:
        """Median host time of `calls` back-to-back calls, no synchronisation between them."""
        ...

    def sample(self, call: Callable[[], Any], host_ms: float) -> float:
        """Milliseconds of one call in this mode; `host_ms` is how long issuing it takes."""
        ...

    def gpu_state(self) -> dict[str, float]:
        """Clocks, temperature and power now (empty where nothing can be read)."""
        ...


def gemm_flops(instance: ScenarioInstance, index: int = 0) -> float:
    """The op's FLOPs for shape set `index` (0 when a dim is 0)."""
    return float(instance.spec.flops(instance.dims(index)))


def copies_for(bytes_per_copy: int) -> int:
    """How many input copies to rotate through so that together they overflow L2 twice over."""
    if bytes_per_copy <= 0:
        return 1
    return max(1, min(MAX_COPIES, math.ceil(2 * L2_BYTES / bytes_per_copy)))


def _rotating(calls: Sequence[Callable[[], Any]]) -> Callable[[], Any]:
    position = [0]

    def call() -> Any:
        fn = calls[position[0] % len(calls)]
        position[0] += 1
        return fn()

    return call


def robust_spread(samples: Sequence[float]) -> float:
    """The standard deviation a normal sample with this interquartile range would have."""
    if len(samples) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return (q3 - q1) / 1.349


def repetitions(estimate_ms: float, budget_ms: float = REP_BUDGET_MS) -> int:
    """How many interleaved pairs to time: the budget over one pair's time, within bounds."""
    if estimate_ms <= 0 or not math.isfinite(estimate_ms):
        return MAX_REPS
    return max(MIN_REPS, min(MAX_REPS, math.ceil(budget_ms / estimate_ms)))


def measure(
    instance: ScenarioInstance,
    backend: Any,
    *,
    seed: int,
    device: str,
    mode: str = "wall",
    clock: Clock | None = None,
) -> dict[str, Any]:
    """Time the backend and cuBLAS on the first shape set; the metrics described above."""
    if mode not in BENCH_MODES:
        raise ValueError(f"unknown benchmark mode {mode!r}; known: {', '.join(BENCH_MODES)}")
    fn = program.make_function(instance)
    first = inputs.build(instance, 0, seed, device)
    size = sum(t.numel() * t.element_size() for t in first.tensors if hasattr(t, "numel"))
    sets = [first.tensors] + [
        inputs.build(instance, 0, seed + 1000 * n, device).tensors
        for n in range(1, copies_for(size))
    ]
    with program.numerics(instance):
        compiled = for_item(backend, instance).compile(
            fn, sets[0], dynamic=instance.compile.dynamic
        )
        for args in sets:  # compile, autotune and load every kernel before the clock starts
            compiled(*args)
            fn(*args)
        # timed as the backend's users call it: no harness bookkeeping in the host figures
        user_callable = getattr(compiled, "user_callable", None)
        if user_callable is not None:
            compiled = user_callable()
        clock = clock or CudaClock(mode)
        plain = [lambda f=compiled, a=args: f(*a) for args in sets]
        eager = [lambda a=args: fn(*a) for args in sets]
        host_ms = clock.host_ms(_rotating(plain), HOST_CALLS)
        cublas_host_ms = clock.host_ms(_rotating(eager), HOST_CALLS)
        try:
            timed = clock.prepare(compiled, sets)
        except Exception as exc:
            raise BenchError(
                f"{mode}: the backend's call could not be prepared "
                f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]})"
            ) from exc
        baseline = clock.prepare(fn, sets)
        estimates = [  # also settles the clocks after the host-time calls
            clock.sample(timed[0], host_ms) + clock.sample(baseline[0], cublas_host_ms)
            for _ in range(ESTIMATE_REPS)
        ]
        reps = repetitions(statistics.median(estimates))
        backend_ms: list[float] = []
        cublas_ms: list[float] = []
        for rep in range(reps):  # interleaved: drift hits both sides alike
            backend_ms.append(clock.sample(timed[rep % len(sets)], host_ms))
            cublas_ms.append(clock.sample(baseline[rep % len(sets)], cublas_host_ms))
        state = clock.gpu_state()
    return summarise(
        backend_ms,
        cublas_ms,
        flops=gemm_flops(instance),
        extra={
            "host_ms": host_ms,
            "cublas_host_ms": cublas_host_ms,
            "bench_copies": float(len(sets)),
            "bench_mode": mode,
            **{f"gpu_{name}": value for name, value in state.items()},
        },
    )


def summarise(
    backend_ms: Sequence[float],
    cublas_ms: Sequence[float],
    *,
    flops: float,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The metrics of interleaved samples (pairs taken on the same inputs)."""
    time_ms = statistics.median(backend_ms)
    base_ms = statistics.median(cublas_ms)
    ratios = [c / b for b, c in zip(backend_ms, cublas_ms, strict=True) if b > 0]
    return {
        "time_ms": time_ms,
        "time_spread_ms": robust_spread(backend_ms),
        "tflops": flops / (time_ms * 1e-3) / 1e12 if time_ms > 0 else 0.0,
        "cublas_time_ms": base_ms,
        "cublas_time_spread_ms": robust_spread(cublas_ms),
        "cublas_tflops": flops / (base_ms * 1e-3) / 1e12 if base_ms > 0 else 0.0,
        "vs_cublas": base_ms / time_ms if time_ms > 0 else 0.0,
        "vs_cublas_spread": robust_spread(ratios),
        "bench_reps": float(len(backend_ms)),
        **(extra or {}),
    }


class CudaClock:
    """Samples on the current CUDA device (see the module docstring for what each mode holds)."""

    def __init__(self, mode: str) -> None:
        import torch

        self.mode = mode
        self._torch = torch
        self._flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        self._start = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)
        self._cycles_per_ms: float | None = None
        self._graphs: list[Any] = []  # captured graphs and their outputs stay alive while timed
        self._pool: Any = None

    def prepare(self, fn: Callable[..., Any], sets: Sequence[Sequence[Any]]) -> list[Callable]:
        if self.mode != "cudagraph":
            return [lambda a=args: fn(*a) for args in sets]
        torch = self._torch
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        replays = []
        for args in sets:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph asks
                fn(*args)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._pool):
                out = fn(*args)
            self._graphs.append((graph, out))
            replays.append(graph.replay)
        return replays

    def host_ms(self, call: Callable[[], Any], calls: int) -> float:
        self._torch.cuda.synchronize()
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            call()
            times.append((time.perf_counter() - start) * 1e3)
        self._torch.cuda.synchronize()
        return statistics.median(times)

    def sample(self, call: Callable[[], Any], host_ms: float) -> float:
        torch = self._torch
        self._flush.zero_()
        if self.mode == "kernel":
            # the GPU spins while the call is issued: the interval then holds device time only
            torch.cuda._sleep(int(self._cycles(2.0 * host_ms + 0.05)))
        else:
            torch.cuda.synchronize()  # idle GPU: the interval holds the host work too
        self._start.record()
        call()
        self._end.record()
        self._end.synchronize()
        return float(self._start.elapsed_time(self._end))

    def _cycles(self, ms: float) -> float:
        if self._cycles_per_ms is None:
            torch = self._torch
            cycles = 10_000_000
            torch.cuda.synchronize()
            self._start.record()
            torch.cuda._sleep(cycles)
            self._end.record()
            self._end.synchronize()
            self._cycles_per_ms = cycles / max(self._start.elapsed_time(self._end), 1e-3)
        return ms * self._cycles_per_ms

    def gpu_state(self) -> dict[str, float]:
        return gpu_state(self._torch.cuda.current_device())


NVIDIA_SMI_FIELDS = {
    "sm_clock_mhz": "clocks.sm",
    "mem_clock_mhz": "clocks.mem",
    "max_sm_clock_mhz": "clocks.max.sm",
    "temp_c": "temperature.gpu",
    "power_w": "power.draw",
}


def gpu_state(device: int = 0) -> dict[str, float]:
    """Clocks (MHz), temperature and power of a CUDA device now; {} where none can be read."""
    import torch

    props = torch.cuda.get_device_properties(device)
    uuid = getattr(props, "uuid", None)
    query = [
        "nvidia-smi",
        f"--query-gpu={','.join(NVIDIA_SMI_FIELDS.values())}",
        "--format=csv,noheader,nounits",
    ]
    if uuid is not None:
        query.append(f"--id=GPU-{uuid}")
    try:
        text = subprocess.run(query, capture_output=True, text=True, timeout=10, check=True).stdout
        return parse_nvidia_smi(text.splitlines()[0] if uuid is not None else text, device)
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        pass
    try:
        return {"sm_clock_mhz": float(torch.cuda.clock_rate(device))}  # needs pynvml
    except Exception:
        return {}


def parse_nvidia_smi(text: str, device: int = 0) -> dict[str, float]:
    """One line of `nvidia-smi --query-gpu=<NVIDIA_SMI_FIELDS> --format=csv,noheader,nounits`
    (the `device`-th line when several GPUs answered); fields it cannot read are left out."""
    lines = [line for line in text.splitlines() if line.strip()]
    values = [v.strip() for v in lines[min(device, len(lines) - 1)].split(",")]
    state = {}
    for name, value in zip(NVIDIA_SMI_FIELDS, values, strict=False):
        try:
            state[name] = float(value)
        except ValueError:  # "[N/A]", "[Not Supported]"
            continue
    return state
