"""Rewriting an aten-level FX graph: every supported GEMM node becomes a call to a `GemmCall`.

`lower_graph` walks the graph in order. For each GEMM node (`GEMM_OPS`) whose dtypes and options
the kernels implement, it builds a `GemmSpec`: the op, its own epilogue steps (addmm's
`beta * C` and `alpha`, `_scaled_mm`'s bias) and the pointwise chain `epilogue.fuse_chain` finds
after it. One call node replaces the GEMM and its fused nodes, placed where the last fused node
was; everything else (views feeding the GEMM, unfused pointwise ops, other ops) stays in the
graph and runs as eager aten, views as Tensor methods (`VIEW_METHODS`). The rewritten
GraphModule is the compiled function, and its `code` is the readable call plan.

Grouped GEMMs (`_grouped_mm`, `_scaled_grouped_mm`) and `F.scaled_mm` (`_scaled_mm_v2`) become
a `GroupedCall` / `BlockScaledCall` each (`grouped.py`, `blockscaled.py`), with no fused epilogue.
Backward graphs arrive the same way (aot_autograd hands the backward compiler its graph): the
gradients of mm, bmm, addmm, linear and grouped_mm are GEMMs of these ops on transposed views.

Left to eager, on purpose: integer `aten.mm` (wraps in eager), fp64 and fp8 `aten.mm`,
`_int_mm` with a uint8 operand, `_scaled_mm` with `scale_result` or an fp8 `out_dtype`, and
scales that implement none of the suite's recipes (`gemmconf.gemm.scaling.classify`); grouped
GEMMs with a bias or `scale_result` (eager rejects them) and ScalingType pairs eager rejects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx

from gemmconf.gemm.dtypes import FP8_TORCH
from gemmconf.gemm.ops import OPS, OpSpec
from gemmconf.gemm.scaling import classify
from gemmconf_reference import compat
from gemmconf_reference.blockscaled import BlockScaledCall, recipe_of
from gemmconf_reference.epilogue import EpilogueStep, FusedChain, fuse_chain, meta_val
from gemmconf_reference.grouped import GroupedCall
from gemmconf_reference.launcher import GemmCall, GemmSpec, KernelCall, Runtime

aten = torch.ops.aten

# The ops this backend lowers; linear and matmul arrive decomposed into them.
LOWERED_OPS = ("mm", "addmm", "bmm", "baddbmm", "int_mm", "scaled_mm")
GEMM_OPS: dict[Any, str] = {getattr(aten, OPS[op].aten).default: op for op in LOWERED_OPS}
# ops with a call of their own and no fused epilogue
GROUPED_OPS: dict[Any, str] = {
    getattr(aten, OPS[op].aten).default: op for op in ("grouped_mm", "scaled_grouped_mm")
}
SCALED_MM_V2 = getattr(aten, OPS["scaled_mm_v2"].aten).default
# View ops the rewritten graph calls as Tensor methods: the same aten ops without the Python
# OpOverload call around them, 1-3 us of a decode GEMM's host time (`tools/host_overhead.py`)
VIEW_METHODS: dict[Any, str] = {
    aten.t.default: "t",
    aten.permute.default: "permute",
    aten.transpose.int: "transpose",
    aten.view.default: "view",
    aten.unsqueeze.default: "unsqueeze",
    aten.squeeze.dim: "squeeze",
    aten.expand.default: "expand",
}
FLOAT_GEMM_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
SCALED_OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


@dataclass
class LoweredGraph:
    """One graph the backend compiled: the rewritten module and the GEMM calls in it."""

    index: int
    gm: fx.GraphModule
    calls: list[KernelCall]
    skipped: list[str]  # GEMM nodes left to eager, with the reason

    def plan_text(self) -> str:
        lines = [f"# reference backend: graph {self.index}, {len(self.calls)} GEMM(s) lowered"]
        for call in self.calls:
            lines += ["#   " + line for line in call.describe().splitlines()]
        for reason in self.skipped:
            lines.append(f"#   left to eager: {reason}")
        return "\n".join(lines) + "\n" + self.gm.code


def bind(node: fx.Node) -> dict[str, Any]:
    """The node's arguments by schema name, defaults filled in."""
    schema = node.target._schema  # type: ignore[union-attr]
    bound: dict[str, Any] = {}
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args):
            bound[arg.name] = node.args[i]
        elif arg.name in node.kwargs:
            bound[arg.name] = node.kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
        else:
            bound[arg.name] = None
    return bound


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _static_scaling(scale_a: Any, scale_b: Any, m: Any, n: Any, k: Any) -> str | None:
    """The scaling recipe the meta shapes show, "dynamic" if sizes are symbolic, None if other."""
    sa, sb = meta_val(scale_a), meta_val(scale_b)
    if sa is None or sb is None:
        return None
    if sa.dtype != torch.float32 or sb.dtype != torch.float32:
        return None  # the kernels read fp32 scales only
    shapes = [*sa.shape, *sb.shape, m, n, k]
    if not all(isinstance(s, int) for s in shapes):
        return "dynamic"
    recipe = classify(sa, sb, m, n, k)
    return recipe.name if recipe is not None else None


def _why_eager(node: fx.Node, out: Any) -> str | None:
    """Why a GEMM node whose result is `out` (its meta value) stays eager whatever its op: no
    shape information, or CPU tensors where kernels are compiled for the GPU."""
    if out is None:
        return f"{node.name}: no shape information"
    if out.device.type == "cpu" and not compat.interpreting():
        return f"{node.name}: CPU tensors, and kernels are compiled for the GPU here"
    return None


def gemm_spec_start(node: fx.Node) -> tuple[str, FusedChain, dict[str, Any]] | str:
    """The op kind, its own epilogue and operands; or why the node stays eager."""
    op = GEMM_OPS[node.target]
    spec = OPS[op]
    args = bind(node)
    out = meta_val(node)
    if (why := _why_eager(node, out)) is not None:
        return why
    first, second = args[spec.param("a")], args[spec.param("b")]
    a, b = meta_val(first), meta_val(second)
    if spec.operand_kind == "float":
        if a is None or b is None or a.dtype not in FLOAT_GEMM_DTYPES or b.dtype != a.dtype:
            return f"{node.name}: {op} of {getattr(a, 'dtype', '?')} is left to eager"
        chain = _float_chain(node, op, spec, args, a.dtype, out.dtype)
        if isinstance(chain, str):
            return chain
        return op, chain, {"a": first, "b": second}
    if spec.operand_kind == "int":
        if a is None or b is None or a.dtype != torch.int8 or b.dtype != torch.int8:
            return f"{node.name}: _int_mm of {getattr(a, 'dtype', '?')} is left to eager"
        return op, FusedChain([], [], dtype=torch.int32), {"a": first, "b": second}
    return _scaled_mm_start(node, op, spec, args, out, a, b)


def _float_chain(
    node: fx.Node,
    op: str,
    spec: OpSpec,
    args: dict[str, Any],
    dtype: torch.dtype,
    out_dtype: torch.dtype,
) -> FusedChain | str:
    """A float GEMM's own epilogue: addmm's and baddbmm's alpha * (A @ B) + beta * C as its
    first step (none for alpha 1, beta 0); or why the node stays eager."""
    chain = FusedChain([], [], dtype=out_dtype)
    if not spec.alpha_beta:
        return chain
    c_val = meta_val(args[spec.param("c")])
    if c_val is None or c_val.dtype != dtype:
        # the meta function lets this through; eager raises ("must have the same dtype")
        return f"{node.name}: {op} with C of another dtype is left to eager"
    alpha, beta = args["alpha"], args["beta"]
    if not (_number(alpha) and _number(beta)):
        return f"{node.name}: symbolic alpha/beta"
    c = args[spec.param("c")]
    if beta != 0:
        chain.operands.append(c)
        chain.steps.append(EpilogueStep("axpby", float(alpha), float(beta), 0, 0, node.name))
    elif alpha != 1:
        chain.steps.append(EpilogueStep("affine", float(alpha), 0.0, None, 0, node.name))
    return chain


def _scaled_mm_start(
    node: fx.Node, op: str, spec: OpSpec, args: dict[str, Any], out: Any, a: Any, b: Any
) -> tuple[str, FusedChain, dict[str, Any]] | str:
    """gemm_spec_start for _scaled_mm: its bias as the chain's first step, and its scales."""
    if a is None or b is None or a.dtype not in FP8_TORCH or b.dtype not in FP8_TORCH:
        return f"{node.name}: _scaled_mm of these dtypes is left to eager"
    if args["scale_result"] is not None:
        return f"{node.name}: _scaled_mm with scale_result is left to eager"
    if out.dtype not in SCALED_OUT_DTYPES:
        return f"{node.name}: _scaled_mm to {out.dtype} is left to eager"
    scaling = _static_scaling(args["scale_a"], args["scale_b"], a.shape[0], b.shape[1], a.shape[1])
    if scaling is None:
        return f"{node.name}: _scaled_mm scale layout is left to eager"
    chain = FusedChain([], [], dtype=out.dtype)
    bias = args["bias"]
    if bias is not None:
        chain.operands.append(bias)
        chain.steps.append(EpilogueStep("axpby", 1.0, 1.0, 0, 0, node.name))
    operands = {"a": args[spec.param("a")], "b": args[spec.param("b")]}
    operands |= {scale.name: args[scale.param] for scale in spec.scales}
    return op, chain, operands


def lower_graph(
    gm: fx.GraphModule, runtime: Runtime, *, index: int, input_precision: str
) -> LoweredGraph:
    """Replaces each supported GEMM (and its fused epilogue) with a `GemmCall` node."""
    graph = gm.graph
    calls: list[KernelCall] = []
    skipped: list[str] = []
    for node in list(graph.nodes):
        if node.op == "call_function" and (
            node.target in GROUPED_OPS or node.target == SCALED_MM_V2
        ):
            lowered = _lower_own_call(node, runtime, f"gemm_{index}_{len(calls)}")
            if isinstance(lowered, str):
                skipped.append(lowered)
            else:
                calls.append(lowered)
            continue
        if node.op != "call_function" or node.target not in GEMM_OPS:
            continue
        start = gemm_spec_start(node)
        if isinstance(start, str):
            skipped.append(start)
            continue
        op, chain, operands = start
        chain = fuse_chain(node, chain)
        end = chain.end(node)
        spec = GemmSpec(
            name=f"gemm_{index}_{len(calls)}",
            op=op,
            dtype=meta_val(operands["a"]).dtype,
            steps=tuple(chain.steps),
            gemm_dtype=meta_val(node).dtype,
            out_dtype=meta_val(end).dtype,
            has_bias=OPS[op].scaled and bind(node)["bias"] is not None,
            use_fast_accum=OPS[op].fast_accum and bool(bind(node)["use_fast_accum"]),
            input_precision=input_precision,
            gemm_node=node.name,
            fused_nodes=tuple(n.name for n in chain.nodes),
            operand_names=tuple(str(o) for o in chain.operands),
            input_names=tuple(str(v) for v in operands.values()),
        )
        call = GemmCall(spec, runtime)
        with graph.inserting_before(end):
            replacement = graph.call_function(
                call,
                (
                    operands["a"],
                    operands["b"],
                    operands.get("scale_a"),
                    operands.get("scale_b"),
                    list(chain.operands),
                    list(chain.stage_shapes),
                ),
            )
        replacement.meta.update(end.meta)
        end.replace_all_uses_with(replacement)
        for dead in [*reversed(chain.nodes), node]:
            graph.erase_node(dead)
        calls.append(call)
    for node in graph.nodes:
        if node.op == "call_function" and node.target in VIEW_METHODS and not node.kwargs:
            node.op, node.target = "call_method", VIEW_METHODS[node.target]
    graph.lint()
    gm.recompile()
    return LoweredGraph(index, gm, calls, skipped)


def _lower_own_call(node: fx.Node, runtime: Runtime, name: str) -> KernelCall | str:
    """Replace a grouped or `_scaled_mm_v2` node by its call; or say why it stays eager."""
    args = bind(node)
    out = meta_val(node)
    if (why := _why_eager(node, out)) is not None:
        return why
    call: KernelCall
    if node.target in GROUPED_OPS:
        op = GROUPED_OPS[node.target]
        if args["bias"] is not None or args.get("scale_result") is not None:
            return f"{node.name}: {op} with a bias or scale_result is left to eager"
        call = GroupedCall(
            name,
            runtime,
            op=op,
            out_dtype=out.dtype,
            use_fast_accum=bool(args.get("use_fast_accum", False)),
            node=node.name,
        )
        inputs: tuple[Any, ...] = (args["self"], args["mat2"], args["offs"])
        if op == "scaled_grouped_mm":
            inputs += (args["scale_a"], args["scale_b"])
    else:
        if args["contraction_dim"]:
            return f"{node.name}: _scaled_mm_v2 with contraction_dim is left to eager"
        if recipe_of(list(args["recipe_a"]), list(args["recipe_b"])) is None:
            pair = f"{args['recipe_a']}, {args['recipe_b']}"
            return f"{node.name}: ScalingType pair {pair} is left to eager"
        call = BlockScaledCall(
            name,
            runtime,
            recipe_a=list(args["recipe_a"]),
            recipe_b=list(args["recipe_b"]),
            swizzle_a=list(args["swizzle_a"]),
            swizzle_b=list(args["swizzle_b"]),
            out_dtype=out.dtype,
            node=node.name,
        )
        inputs = (
            args["self"],
            args["mat2"],
            list(args["scale_a"]),
            list(args["scale_b"]),
            args["bias"],
        )
    with node.graph.inserting_before(node):
        replacement = node.graph.call_function(call, inputs)
    replacement.meta.update(node.meta)
    node.replace_all_uses_with(replacement)
    node.graph.erase_node(node)
    return call
