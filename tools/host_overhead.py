"""Host time per call of one small GEMM: the reference backend's launch path next to eager and
inductor (issue 18: decode is host-bound).

    python tools/host_overhead.py            # on a CPU: the reference path's Python, launch stubbed
    python tools/host_overhead.py --gpu      # on a CUDA GPU: every path for real
        [--m 16 --n 6144 --k 4096] [--calls 2000] [--json OUT.json]

The problem is `F.linear(x, W)` with x (M, K) and W (N, K) in bf16, 16x6144x4096 by default (a
Llama-3 8B decode qkv projection).

On a CPU (no GPU, Triton interpreter) nothing can launch, so the reference backend runs its real
call path up to the launch with a stand-in for Triton's compiled kernel whose launcher does
nothing: the figures are the Python work per call (plan lookup, allocation, argument list) in
three layers: the backend's `GemmCall` alone, the whole `torch.compile`d function (dynamo's
guards and the rewritten FX graph; the next row compiles it through aot_autograd instead, with
its runtime wrappers, as every graph was before inference graphs skipped it), and the harness's
adapter around it. The floor of the middle layer is torch.compile itself: the same function compiled
through aot_autograd with an identity forward compiler, on tiny fp32 tensors.

On a GPU (`--gpu`), for eager, `torch.compile` (inductor default), inductor
`mode="reduce-overhead"` (CUDA graphs; W marked as a static address, as a model's weight is), the
floor of any torch.compile backend (one whose compiled function is dynamo's graph itself, running
eager aten: dynamo's guards and frame handling, nothing else), the reference backend and
`reference` with `cudagraphs`: the host time per call (host clock around
each of `--calls` back-to-back calls, no synchronisation, median), and the interval of one call
between CUDA events as gemmconf.bench's `wall` (idle GPU: host work, then kernels) and `kernel`
(device time) modes measure it. A table on stdout; `--json` writes the figures.

No test asserts a time; BENCHMARKS.md records what this printed, with the machine and date.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F


def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w)


def host_us(
    call: Callable[[], Any], calls: int, *, sync: Callable[[], None] = lambda: None
) -> float:
    """Median host microseconds of one call, over `calls` back-to-back calls (after 50 more)."""
    for _ in range(50):
        call()
    sync()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    sync()
    return statistics.median(times) * 1e6


class StubCompiled:
    """Stands in for Triton's CompiledKernel: a launcher that takes the arguments and does
    nothing (what the CPU can measure is the Python before the launch)."""

    function = 0
    packed_metadata = ()

    def run(self, *args: Any) -> None:
        return None

    def launch_metadata(self, *args: Any) -> None:
        return None


class StubLauncher:
    """Runtime.launcher on a CPU: every plan launches `StubCompiled` through the direct path."""

    compiles = 0

    def first(
        self, fn: Any, grid: tuple[int, ...], args: Any, config: Any, signature: Any = None
    ) -> Any:
        from gemmconf_reference.launcher import direct_launch

        launch = direct_launch(StubCompiled(), grid, stream_of=lambda device: 0, device=0)
        launch(args)
        return launch


def cpu(args: argparse.Namespace) -> dict[str, float]:
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    from gemmconf.backends import resolve

    x = torch.randn(args.m, args.k, dtype=torch.bfloat16)
    w = torch.randn(args.n, args.k, dtype=torch.bfloat16)
    compiled = resolve("reference").compile(linear, [x, w], dynamic=False)
    compiled.compiler.runtime.launcher = StubLauncher()
    compiled(x, w)
    (gemm,) = compiled.compiler.graphs[0].calls
    wt = w.t()
    # the same function compiled through aot_autograd, as every graph was before inference
    # graphs skipped it (backend/compiler.py): the two paths side by side in one process
    from gemmconf_reference import compiler

    inference_graph = compiler.inference_graph
    compiler.inference_graph = lambda *_: None
    try:
        through_aot = resolve("reference").compile(linear, [x, w], dynamic=False)
        through_aot.compiler.runtime.launcher = StubLauncher()
        through_aot(x, w)
    finally:
        compiler.inference_graph = inference_graph
    figures = {
        "reference GemmCall alone": host_us(lambda: gemm(x, wt, None, None, [], []), args.calls),
        "reference torch.compile'd function": host_us(lambda: compiled._compiled(x, w), args.calls),
        "  the same through aot_autograd (before 44b91ad)": host_us(
            lambda: through_aot._compiled(x, w), args.calls
        ),
        "reference through the harness adapter": host_us(lambda: compiled(x, w), args.calls),
    }
    tiny_x, tiny_w = torch.randn(2, 4), torch.randn(3, 4)
    floor = torch.compile(
        linear, backend=aot_autograd(fw_compiler=lambda gm, _: make_boxed_func(gm))
    )
    floor(tiny_x, tiny_w)
    figures["torch.compile + aot_autograd floor (identity, 2x3x4 fp32)"] = host_us(
        lambda: floor(tiny_x, tiny_w), args.calls
    )
    figures["eager F.linear (2x3x4 fp32, CPU)"] = host_us(
        lambda: linear(tiny_x, tiny_w), args.calls
    )
    return figures


def gpu(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    from gemmconf.bench import CudaClock
    from gemmconf_reference import BackendOptions, ReferenceCompiler

    x = torch.randn(args.m, args.k, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(args.n, args.k, dtype=torch.bfloat16, device="cuda")
    expected = linear(x.float(), w.float())

    compilers: list[Any] = []

    def reference(cudagraphs: bool) -> Callable[..., Any]:
        compilers.append(ReferenceCompiler(BackendOptions(cudagraphs=cudagraphs)))
        return torch.compile(linear, backend=compilers[-1], dynamic=False)

    # W is a model's weight: inductor's CUDA graphs must not copy it into the graph every call
    mark_static = getattr(torch._dynamo, "mark_static_address", None)
    if mark_static is not None:
        mark_static(w)
    paths: dict[str, Callable[..., Any]] = {
        "eager": linear,
        "inductor (torch.compile default)": torch.compile(linear, dynamic=False),
        "inductor mode=reduce-overhead": torch.compile(
            linear, mode="reduce-overhead", dynamic=False
        ),
        "torch.compile floor (graph as is)": torch.compile(
            linear, backend=lambda gm, _: gm.forward, dynamic=False
        ),
        "reference": reference(False),
        "reference:cudagraphs": reference(True),
    }
    clocks = {mode: CudaClock(mode) for mode in ("wall", "kernel")}
    figures: dict[str, dict[str, float]] = {}

    def measure(name: str, fn: Callable[..., Any]) -> None:
        for _ in range(3):  # compile, capture graphs
            out = fn(x, w)
        torch.cuda.synchronize()
        error = float((out.float() - expected).norm() / expected.norm())
        host = host_us(lambda: fn(x, w), args.calls, sync=torch.cuda.synchronize)
        row = {"host_us": host, "rel_err": error}
        for mode, clock in clocks.items():
            samples = [clock.sample(lambda: fn(x, w), host / 1e3) for _ in range(200)]
            row[f"{mode}_us"] = statistics.median(samples) * 1e3
        figures[name] = row

    for name, fn in paths.items():
        measure(name, fn)
    # The reference's launch path without torch.compile around it: its GemmCall (the plan
    # lookup, the output's allocation, Triton's compiled kernel launched directly), called as
    # the rewritten graph calls it, and the same GemmCall behind aten::mm on the CUDA key, so
    # that eager F.linear (aten::t, then aten::mm) reaches it as a kernel library's user would.
    (gemm,) = compilers[0].graphs[0].calls
    measure(
        "reference launch path alone (GemmCall)", lambda x, w: gemm(x, w.t(), None, None, [], [])
    )
    library = torch.library.Library("aten", "IMPL")
    try:
        library.impl("mm", lambda a, b: gemm(a, b, None, None, [], []), "CUDA")
        measure("reference as an aten::mm override", linear)
    finally:
        library._destroy()
    from gemmconf.bench import gpu_state

    figures["gpu"] = gpu_state(torch.cuda.current_device())
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", action="store_true", help="measure on the CUDA GPU here")
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--n", type=int, default=6144)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", default=None, metavar="OUT.json")
    args = parser.parse_args(argv)
    what = f"F.linear bf16 {args.m}x{args.n}x{args.k}"
    versions = f"torch {torch.__version__}, python {sys.version.split()[0]}"
    if args.gpu:
        if not torch.cuda.is_available():
            print("--gpu: no CUDA device here", file=sys.stderr)
            return 2
        figures: dict[str, Any] = gpu(args)
        print(f"{what} on {torch.cuda.get_device_name()} ({versions})")
        print(f"  {'path':<36} {'host us':>9} {'wall us':>9} {'kernel us':>10} {'rel err':>9}")
        for name, row in figures.items():
            if name != "gpu":
                print(
                    f"  {name:<36} {row['host_us']:>9.1f} {row['wall_us']:>9.1f} "
                    f"{row['kernel_us']:>10.1f} {row['rel_err']:>9.1e}"
                )
        print(f"  GPU while timed: {figures['gpu']}")
    else:
        figures = cpu(args)
        print(f"{what}, CPU, launch stubbed ({versions}): host us per call, median")
        for name, value in figures.items():
            print(f"  {name:<58} {value:>8.1f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"problem": what, "versions": versions, "figures": figures}, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
