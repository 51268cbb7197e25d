"""The torch.compile backend: aten capture, GEMM lowering, and the record artifacts come from.

`ReferenceCompiler` is a dynamo backend (`torch.compile(fn, backend=ReferenceCompiler())`).
Dynamo hands it a torch-level graph per (re)compile, which becomes an aten graph (linear and
matmul arrive as mm/addmm/bmm with views) that `lowering.lower_graph` rewrites. Two ways:

- **inference graphs** (`inference_graph`): no input requires grad, every shape is static, and
  the traced graph mutates nothing. The graph is traced to aten once with `make_fx` on fake
  copies of the inputs, lowered, and its `forward` is the compiled function: no aot_autograd
  runtime wrappers around each call (they cost as much again as dynamo's own guards: 20 us of
  the 45 us floor of a compiled call on the 2-core dev CPU) and one trace instead of
  aot_autograd's two at compile time. Views and aliasing need no care: the graph runs the
  traced aten ops themselves.
- **everything else** goes through `aot_autograd`: a functional graph (in-place ops and `out=`
  become functional ones that the epilogue fusion can see), and, when inputs require grad, its
  forward and backward graphs (its backward compiler defaults to the forward one) lowered the
  same way; dynamic shapes keep their symbols.

The TF32 decision is read once per compile (`compat.tf32_allowed`, i.e.
`torch.backends.cuda.matmul.allow_tf32`); dynamo guards on that flag, so flipping it recompiles.

The compiler keeps every lowered graph: `artifacts()` renders the call plans (`python`), the
Triton source of the kernel family (`triton`) and, lazily and cached, the TTIR/TTGIR/PTX of
every distinct launch cross-compiled for the artifact target (`crosscompile`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx as fx

from gemmconf_reference import compat, kernels
from gemmconf_reference.crosscompile import ARTIFACT_KINDS, CROSS_COMPILER
from gemmconf_reference.launcher import BackendOptions, LaunchRecord, Runtime
from gemmconf_reference.lowering import LoweredGraph, lower_graph
from gemmconf_reference.target import Target, detect, for_artifacts


class ReferenceCompiler:
    """A torch.compile backend bound to its own record of compiles, graphs and launches."""

    def __init__(self, options: BackendOptions | None = None) -> None:
        self.options = options or BackendOptions()
        self.runtime = Runtime(detect(self.options.target_arch), self.options)
        self.invocations = 0
        self.graphs: list[LoweredGraph] = []

    @property
    def target(self) -> Target:
        return self.runtime.target

    def __call__(self, gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        from functorch.compile import make_boxed_func
        from torch._dynamo.backends.common import aot_autograd

        self.invocations += 1
        precision = "tf32" if compat.tf32_allowed() else "ieee"

        traced = inference_graph(gm, example_inputs)
        if traced is not None:
            lowered = self._lower(traced, precision)
            return lowered.gm.forward

        def graph_compiler(graph: fx.GraphModule, inputs: Sequence[Any]) -> Callable[..., Any]:
            return make_boxed_func(self._lower(graph, precision).gm)  # aot's convention

        return aot_autograd(fw_compiler=graph_compiler)(gm, example_inputs)

    def _lower(self, graph: fx.GraphModule, precision: str) -> LoweredGraph:
        lowered = lower_graph(
            graph, self.runtime, index=len(self.graphs), input_precision=precision
        )
        self.graphs.append(lowered)
        return lowered

    def launches(self) -> list[LaunchRecord]:
        """Distinct launches so far, in graph and call order."""
        return [
            record
            for graph in self.graphs
            for call in graph.calls
            for record in call.launches.values()
        ]

    def kernel_stats(self) -> dict[str, Any]:
        """What the launches cost: `kernel_signatures`, a short id per distinct kernel
        specialisation launched (equal ids across items mean the same compiled kernel), and
        `kernel_compiles`, how many of them this process had not launched before (Triton
        compiled them or loaded them from its disk cache; 0 in the interpreter) and the seconds
        their first launches took (`kernel_compile_s`, waits for a compile lock included). Where
        Triton tells them apart: `kernel_builds` of those were compiled here,
        `kernel_cache_loads` loaded from Triton's disk cache, and `kernel_compile_wait_s` went
        to waiting while another process compiled the same signature (compile_once.py), with
        Triton's own hashes of the kernels compiled (`kernel_built`) and loaded (`kernel_loaded`),
        which tell distinct kernels where one signature id covers several specialisations, and
        the compiles' seconds by Triton's stage (`kernel_build_stages_s`: source, ttir, ttgir,
        llir, ptx, cubin, store; where Triton reports them). Plus
        CUDA-graph captures and replays when `cudagraphs` is on."""
        ids = sorted({record.request(record.plan).signature_id() for record in self.launches()})
        launcher = self.runtime.launcher
        stats: dict[str, Any] = {
            "kernel_signatures": ids,
            "kernel_compiles": launcher.compiles,
            "kernel_compile_s": round(launcher.compile_s, 4),
        }
        builds, loads = getattr(launcher, "builds", None), getattr(launcher, "loads", None)
        if builds is not None and loads is not None:  # Triton told compiles from loads
            stats["kernel_builds"] = builds
            stats["kernel_cache_loads"] = loads
            stats["kernel_compile_wait_s"] = round(getattr(launcher, "wait_s", 0.0), 4)
            if getattr(launcher, "built", None) or getattr(launcher, "loaded", None):
                stats["kernel_built"] = sorted(launcher.built)  # Triton's hashes
                stats["kernel_loaded"] = sorted(launcher.loaded)
            if getattr(launcher, "build_stages", None):
                stats["kernel_build_stages_s"] = {
                    stage: round(seconds, 4) for stage, seconds in launcher.build_stages.items()
                }
        graphs = [
            plan.graphs
            for graph in self.graphs
            for call in graph.calls
            for plan in getattr(call, "plans", {}).values()  # GemmCall's; grouped calls have none
            if plan.graphs is not None
        ]
        if graphs:
            stats["graph_captures"] = sum(g.captures for g in graphs)
            stats["graph_replays"] = sum(g.replays for g in graphs)
        return stats

    def artifacts(self, target_arch: str | None = None) -> dict[str, str]:
        """Generated code by kind; IR kinds only once a kernel was launched."""
        if not self.graphs:
            return {}
        found: dict[str, str] = {
            "python": "\n\n".join(graph.plan_text() for graph in self.graphs),
        }
        if any(graph.calls for graph in self.graphs):
            found["triton"] = triton_source(self.launches())
        found.update(self.compiled_ir(target_arch))
        return found

    def compiled_ir(self, target_arch: str | None = None) -> dict[str, str]:
        """TTIR/TTGIR/PTX of every distinct launch, planned and compiled for the target arch."""
        target = for_artifacts(self.target, target_arch or self.options.target_arch)
        texts: dict[str, list[str]] = {kind: [] for kind in ARTIFACT_KINDS}
        seen = set()
        for record in self.launches():
            plan = record.replan(target, self.options)
            request = record.request(plan)
            if request in seen:
                continue
            seen.add(request)
            flags = ", ".join(f"{k}={v}" for k, v in plan.constexprs)
            header = f"// {record.gemm}: {plan.kernel} for {target.arch}: {flags}"
            if record.problem.dtype == torch.float8_e4m3fn and not target.has_fp8_mma:
                # Triton has no e4m3 type before sm89 (nor does eager's _scaled_mm)
                for kind in ARTIFACT_KINDS:
                    texts[kind].append(f"{header}\n// not compiled: no fp8 e4m3 on {target.arch}")
                continue
            asm = CROSS_COMPILER.compile(request, target.capability)
            for kind in ARTIFACT_KINDS:
                if kind in asm:
                    texts[kind].append(f"{header}\n{asm[kind]}")
        return {kind: "\n".join(parts) for kind, parts in texts.items() if parts}


def inference_graph(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> fx.GraphModule | None:
    """Dynamo's graph traced to aten on fake copies of the inputs, when running the traced ops
    as they are is the whole job: no tensor input requires grad, no input has a symbolic shape,
    and no traced op mutates (in-place and `out=` ops go to aot_autograd, whose functional graph
    lets their pointwise ops fuse). None otherwise, or when the trace fails (aot_autograd then
    traces it as before, and raises what there is to raise)."""
    from torch._guards import detect_fake_mode
    from torch.fx.experimental.proxy_tensor import make_fx

    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    if len(tensors) != len(example_inputs) or any(t.requires_grad for t in tensors):
        return None  # SymInt inputs (dynamic shapes) or autograd
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if node.op == "placeholder" and not _static(value):
            return None
        if node.op == "get_attr":
            return None  # constants live outside the fake mode; aot_autograd lifts them
    fake_mode = detect_fake_mode(example_inputs)
    if fake_mode is None:
        return None
    try:
        with fake_mode:
            fakes = [fake_mode.from_tensor(t, static_shapes=True) for t in tensors]
            traced = make_fx(gm, tracing_mode="real")(*fakes)
    except Exception:
        return None
    for node in traced.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op == "call_function" and (schema is None or schema.is_mutable):
            return None
    return traced


def _static(value: Any) -> bool:
    """An example value with concrete sizes and strides (a fake tensor of a static input)."""
    if not isinstance(value, torch.Tensor):
        return False
    return all(isinstance(d, int) for d in (*value.shape, *value.stride()))


def triton_source(launches: list[LaunchRecord]) -> str:
    """The source text of the @triton.jit pieces, headed by the launches that used them."""
    header = ["# Triton source of the reference GEMM kernels (backend/kernels/)"]
    for record in launches:
        flags = ", ".join(f"{k}={v}" for k, v in record.plan.constexprs)
        header.append(f"# {record.gemm} launched {record.plan.kernel}: {flags}")
    pieces = kernels.PIECES
    if any(record.plan.kernel == kernels.HOPPER for record in launches):
        pieces += kernels.HOPPER_PIECES  # backend/hopper.py
    sources = [_source_of(piece) for piece in pieces]
    return "\n".join(header) + "\n\n" + "\n\n".join(sources)


def _source_of(piece: Any) -> str:
    """The exact source of one @triton.jit function, decorator included."""
    return inspect.getsource(getattr(piece, "fn", piece))


def reference_backend(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """`torch.compile(fn, backend=backend.reference_backend)` with default options."""
    return ReferenceCompiler()(gm, example_inputs)


__all__ = ["BackendOptions", "ReferenceCompiler", "reference_backend"]
