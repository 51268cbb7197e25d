"""The graph rewrite: every GEMM node of an aten graph becomes a call of its own.

`CutlassCompiler` is the torch.compile backend: dynamo hands each graph to `aot_autograd`, and
the forward compiler (`lower_graph`) rewrites the functional aten graph:

- `CutlassGemm` for what the kernels implement: `aten.mm`, `addmm`, `bmm`, `baddbmm` on fp16/bf16
  and `aten._scaled_mm` on fp8 (e4m3fn/e5m2, tensorwise or rowwise fp32 scales, optional bias,
  out bf16/fp16/fp32, `use_fast_accum` honoured). `linear` and `matmul` arrive as these ops. At
  run time it plans the launch for the actual tensors (`planning.plan_gemm`) and hands the plan
  to its launcher.
- `UnsupportedGemm` for every other GEMM (fp32/tf32/fp64, `_int_mm`, blockwise or fp8-output
  `_scaled_mm`, `scale_result`, `mv`/`dot`/... and non-default overloads): it raises
  NotImplementedError naming the gap, so the item fails loudly; the package's expectations.yaml
  lists those scenarios. (It first runs the eager op on the same inputs: when eager rejects them,
  eager's own error is raised instead, which is what an error scenario checks.)

Everything else in the graph (views, pointwise epilogues, casts) stays as eager aten ops. The
compiler keeps every rewritten graph and launch for the artifacts: `python` (the graphs and each
launch: kernel, problem, staging notes), `cuda` (each kernel's `.cu`), `ptx` and `sass`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx
from torch.fx.operator_schemas import normalize_function

from gemmconf.gemm.ops import OPS
from gemmconf_cutlass import codegen
from gemmconf_cutlass.launch import gpu_launch
from gemmconf_cutlass.planning import (
    FP8_DTYPES,
    GEMM_DTYPES,
    SCALED_OUT_DTYPES,
    CutlassLaunchPlan,
    SkippedLaunch,
    plan_gemm,
    short_name,
)

aten = torch.ops.aten

# the aten overloads the kernels implement, by the suite's op name (the domain package's table)
IMPLEMENTED = ("mm", "addmm", "bmm", "baddbmm", "scaled_mm")
GEMM_OPS: dict[Any, str] = {getattr(aten, OPS[name].aten).default: name for name in IMPLEMENTED}
# aten's matrix products: the suite's ops (the domain package's table) and the vector and
# weight-packed products no scenario names; a node of one of these not in GEMM_OPS is not covered
_GEMM_PACKETS = frozenset(
    [
        *(spec.aten for spec in OPS.values()),
        *("mv", "addmv", "dot", "vdot", "addbmm", "_weight_int8pack_mm", "_weight_int4pack_mm"),
    ]
)


def matrix_params(op: str) -> tuple[str, str]:
    """An op's two matrix operands as an FX node binds them: the aten schema's names from the
    domain package (`OperandSpec.param`), with torch.fx's `input` for the schema's `self`."""
    spec = OPS[op]
    return tuple("input" if spec.param(n) == "self" else spec.param(n) for n in ("a", "b"))


@dataclass(frozen=True)
class CutlassLaunchRecord:
    """One distinct launch a GEMM call made, for the artifacts."""

    plan_text: str
    spec: codegen.KernelSpec | None  # None: no kernel was needed
    built: codegen.Built | None  # None: not built here (an emulated launch)


Launcher = Callable[[CutlassLaunchPlan], "codegen.Built | None"]


def _bind(node: fx.Node) -> dict[str, Any] | None:
    """A node's arguments by schema name, defaults filled in; None when none of its schemas fit."""
    bound = normalize_function(
        node.target, tuple(node.args), dict(node.kwargs), normalize_to_only_use_kwargs=True
    )
    return None if bound is None else bound.kwargs


def _meta(value: Any) -> Any:
    return value.meta.get("val") if isinstance(value, fx.Node) else None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _GraphCall:
    """Common parts of the callables placed in a rewritten graph."""

    def __init__(self, name: str, target: Any) -> None:
        self.target = target  # the aten op it replaces
        # FX names the call after these when it prints the graph's code
        self.__name__ = self.__qualname__ = name
        self.__module__ = "cutlass"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__name__})"

    def raise_like_eager(self, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """Run the eager op: if it rejects the inputs, its own error propagates."""
        self.target(*args, **kwargs)


class UnsupportedGemm(_GraphCall):
    """Stands for a GEMM the kernels do not implement: raises NotImplementedError when called."""

    def __init__(self, name: str, target: Any, reason: str) -> None:
        super().__init__(name, target)
        self.reason = reason

    def describe(self) -> str:
        return f"{self.__name__} <- {self.target}: NOT IMPLEMENTED, raises: {self.reason}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.raise_like_eager(args, kwargs)
        raise NotImplementedError(f"cutlass backend: {self.reason} ({self.target})")


class CutlassGemm(_GraphCall):
    """Stands for one aten GEMM node: plans and launches a CUTLASS kernel per call."""

    def __init__(
        self,
        name: str,
        target: Any,
        op: str,
        params: dict[str, Any],
        launcher: Launcher,
        allow_cpu: bool,
    ) -> None:
        super().__init__(name, target)
        self.op = op
        self.params = params  # alpha/beta, or out_dtype/use_fast_accum: static in the graph
        self.launcher = launcher
        self.allow_cpu = allow_cpu
        self.launches: dict[str, CutlassLaunchRecord] = {}

    def describe(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        lines = [f"{self.__name__} <- {self.target}({params})"]
        for text in self.launches:
            lines += ["  " + line for line in text.splitlines()]
        return "\n".join(lines)

    def __call__(self, *tensors: torch.Tensor | None) -> torch.Tensor:
        eager_args, eager_kwargs, plan_kwargs = self._arguments(tensors)
        if tensors[0].device.type != "cuda" and not self.allow_cpu:
            self.raise_like_eager(eager_args, eager_kwargs)
            raise NotImplementedError(
                f"cutlass backend: {tensors[0].device.type} tensors; the "
                "kernels run on CUDA tensors only"
            )
        if self._eager_rejects(tensors):
            self.raise_like_eager(eager_args, eager_kwargs)
        try:
            plan = plan_gemm(self.op, **plan_kwargs)
        except NotImplementedError:
            self.raise_like_eager(eager_args, eager_kwargs)  # invalid inputs: eager's error
            raise
        text = plan.describe()
        if isinstance(plan, SkippedLaunch):
            self.launches.setdefault(text, CutlassLaunchRecord(text, None, None))
            return plan.output
        built = self.launcher(plan)
        self.launches.setdefault(text, CutlassLaunchRecord(text, plan.spec, built))
        return plan.result()

    def _arguments(
        self, tensors: Sequence[Any]
    ) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
        """The eager op's args and kwargs, and plan_gemm's keyword arguments, for this call."""
        if self.op in ("mm", "bmm"):
            a, b = tensors
            return [a, b], {}, {"a": a, "b": b}
        if self.op in ("addmm", "baddbmm"):
            c, a, b = tensors
            alpha, beta = self.params["alpha"], self.params["beta"]
            return (
                [c, a, b],
                {"beta": beta, "alpha": alpha},
                {"a": a, "b": b, "c": c, "alpha": alpha, "beta": beta},
            )
        a, b, scale_a, scale_b, bias = tensors
        out_dtype, fast = self.params["out_dtype"], self.params["use_fast_accum"]
        eager = [a, b, scale_a, scale_b, bias, None, out_dtype, fast]
        return (
            eager,
            {},
            {
                "a": a,
                "b": b,
                "scale_a": scale_a,
                "scale_b": scale_b,
                "bias": bias,
                "out_dtype": out_dtype,
                "use_fast_accum": fast,
            },
        )

    def _eager_rejects(self, tensors: Sequence[Any]) -> bool:
        """Inputs eager rejects only inside its CUDA kernels (the meta functions let them pass)."""
        if self.op in ("addmm", "baddbmm"):
            c, a, _ = tensors
            return c.dtype != a.dtype  # "self and mat2 must have the same dtype"
        if self.op != "scaled_mm":
            return False
        a, b, _, _, bias = tensors
        out = self.params["out_dtype"] or a.dtype
        if a.shape[1] != b.shape[0]:
            return True  # the meta function never compares K
        if a.dtype == b.dtype == torch.float8_e5m2:
            return True  # "Multiplication of two Float8_e5m2 matrices is not supported"
        return bias is not None and (out == torch.float32 or bias.dtype != out)


def unsupported_reason(op: str, args: dict[str, Any]) -> str | None:
    """Why a GEMM node (by its aten op and bound meta args) is not lowered; None when it is."""
    if op in ("mm", "addmm", "bmm", "baddbmm"):
        first, second = (_meta(args[name]) for name in matrix_params(op))
        if first is None or second is None:
            return f"{op} without shape information"
        if first.dtype not in GEMM_DTYPES or second.dtype != first.dtype:
            return (
                f"{op} of {short_name(first.dtype)} x {short_name(second.dtype)} is not "
                "implemented (fp16 and bf16 are; fp32/tf32 would need tf32 or SIMT kernels)"
            )
        if op in ("addmm", "baddbmm") and not (_number(args["alpha"]) and _number(args["beta"])):
            return f"{op} with symbolic alpha/beta is not implemented"
        return None
    a, b = _meta(args["input"]), _meta(args["mat2"])
    if a is None or b is None:
        return "_scaled_mm without shape information"
    if a.dtype not in FP8_DTYPES or b.dtype not in FP8_DTYPES:
        return (
            f"_scaled_mm of {short_name(a.dtype)} x {short_name(b.dtype)} is not implemented "
            "(fp8 is)"
        )
    if args["scale_result"] is not None:
        return "_scaled_mm with scale_result is not implemented"
    out = args["out_dtype"] or a.dtype
    if out not in SCALED_OUT_DTYPES:
        return f"_scaled_mm to {short_name(out)} is not implemented (outputs bf16, fp16, fp32)"
    return None


def _other_gemm(node: fx.Node) -> bool:
    target = node.target
    packet = getattr(target, "overloadpacket", None)
    return (
        node.op == "call_function"
        and target not in GEMM_OPS
        and packet is not None
        and getattr(packet, "__name__", "") in _GEMM_PACKETS
    )


@dataclass(frozen=True)
class CutlassLoweredGraph:
    index: int
    gm: fx.GraphModule
    calls: list[_GraphCall]

    def plan_text(self) -> str:
        lowered = sum(isinstance(c, CutlassGemm) for c in self.calls)
        lines = [
            f"# cutlass backend: graph {self.index}, {lowered} GEMM(s) lowered to CUTLASS, "
            f"{len(self.calls) - lowered} not implemented"
        ]
        for call in self.calls:
            lines += ["#   " + line for line in call.describe().splitlines()]
        return "\n".join(lines) + "\n" + self.gm.code


def lower_graph(
    gm: fx.GraphModule, *, index: int, launcher: Launcher, allow_cpu: bool = False
) -> CutlassLoweredGraph:
    """Replace every GEMM node of an aten graph with a CutlassGemm or an UnsupportedGemm call."""
    graph = gm.graph
    calls: list[_GraphCall] = []
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        name = f"gemm_{index}_{len(calls)}"
        if node.target in GEMM_OPS:
            op = GEMM_OPS[node.target]
            args = _bind(node)
            reason = f"{op} with arguments no schema binds" if args is None else None
            reason = reason or unsupported_reason(op, args)
            if reason is not None:
                call: _GraphCall = UnsupportedGemm(name, node.target, reason)
                inputs, kwargs = node.args, node.kwargs
            else:
                call, inputs = _supported_call(name, node, op, args, launcher, allow_cpu)
                kwargs = {}
        elif _other_gemm(node):
            reason = f"{node.target} is not implemented by the cutlass backend"
            call = UnsupportedGemm(name, node.target, reason)
            inputs, kwargs = node.args, node.kwargs
        else:
            continue
        with graph.inserting_before(node):
            replacement = graph.call_function(call, tuple(inputs), dict(kwargs))
        replacement.meta.update(node.meta)
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        calls.append(call)
    graph.lint()
    gm.recompile()
    return CutlassLoweredGraph(index, gm, calls)


def _supported_call(
    name: str, node: fx.Node, op: str, args: dict[str, Any], launcher: Launcher, allow_cpu: bool
) -> tuple[CutlassGemm, list[Any]]:
    if op in ("mm", "bmm"):
        params: dict[str, Any] = {}
        inputs = [args["input"], args["mat2"]]
    elif op in ("addmm", "baddbmm"):
        params = {"alpha": args["alpha"], "beta": args["beta"]}
        inputs = [args["input"], *(args[n] for n in matrix_params(op))]
    else:
        params = {"out_dtype": args["out_dtype"], "use_fast_accum": bool(args["use_fast_accum"])}
        inputs = [args["input"], args["mat2"], args["scale_a"], args["scale_b"], args["bias"]]
    return CutlassGemm(name, node.target, op, params, launcher, allow_cpu), inputs


class CutlassCompiler:
    """A torch.compile backend bound to its own record of compiles, graphs and launches."""

    def __init__(self, launcher: Launcher = gpu_launch, *, allow_cpu: bool = False) -> None:
        self.launcher = launcher
        self.allow_cpu = allow_cpu
        self.invocations = 0
        self.graphs: list[CutlassLoweredGraph] = []

    def __call__(self, gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        from torch._dynamo.backends.common import aot_autograd

        self.invocations += 1

        def compiler(graph: fx.GraphModule, inputs: Sequence[Any]) -> fx.GraphModule:
            lowered = lower_graph(
                graph, index=len(self.graphs), launcher=self.launcher, allow_cpu=self.allow_cpu
            )
            self.graphs.append(lowered)
            return lowered.gm

        return aot_autograd(fw_compiler=compiler)(gm, example_inputs)

    def calls(self) -> list[_GraphCall]:
        return [call for graph in self.graphs for call in graph.calls]

    def artifacts(self) -> dict[str, str]:
        if not self.graphs:
            return {}
        found = {"python": "\n\n".join(graph.plan_text() for graph in self.graphs)}
        sources: dict[codegen.KernelSpec, str] = {}
        built: dict[codegen.KernelSpec, codegen.Built] = {}
        for call in self.calls():
            for record in getattr(call, "launches", {}).values():
                if record.spec is None or record.spec in sources:
                    continue
                if record.built is not None:
                    built[record.spec] = record.built
                    sources[record.spec] = record.built.source
                else:
                    sources[record.spec] = codegen.render(record.spec)
        if sources:
            found["cuda"] = "\n\n".join(sources.values())
        for kind in ("ptx", "sass"):
            texts = [
                f"// {entry.name}\n{entry.text(kind)}"
                for entry in built.values()
                if entry.has(kind)
            ]
            if texts:
                found[kind] = "\n".join(texts)
        return found
