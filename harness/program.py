"""The function under test: what a scenario instance computes, as plain PyTorch.

`make_function` returns the Python function that eager runs and every backend compiles: the GEMM
op on its positional inputs (in `input_names` order), then the epilogue chain. `make_reference`
returns the same computation for the fp64 reference the oracle uses: inputs arrive upcast and
dequantized, casts are kept in fp64 and `_scaled_mm` becomes an explicit scaled matmul.
"""

from __future__ import annotations

import contextlib
import linecache
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F

from gemmconf.scenario import Epilogue, ScenarioInstance

TORCH_DTYPES: dict[str, torch.dtype] = {
    "fp64": torch.float64,
    "fp32": torch.float32,
    "tf32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "e4m3fn": torch.float8_e4m3fn,
    "e5m2": torch.float8_e5m2,
    "int8": torch.int8,
    "int32": torch.int32,
}
FP8_DTYPES = ("e4m3fn", "e5m2")


def input_names(instance: ScenarioInstance) -> tuple[str, ...]:
    """The function's positional parameters, in order."""
    op = instance.op
    names: list[str] = []
    if op in ("addmm", "baddbmm"):
        names.append("c")
    names += ["a", "b"]
    if op == "scaled_mm":
        names += ["scale_a", "scale_b"]
    if instance.bias is not None and op in ("linear", "scaled_mm"):
        names.append("bias")
    names += [f"other{i}" for i, step in enumerate(_tensor_steps(instance))]
    return tuple(names)


def _tensor_steps(instance: ScenarioInstance) -> list[Epilogue]:
    return [step for step in instance.epilogue if step.kind == "add_tensor"]


def make_function(instance: ScenarioInstance) -> Callable[..., Any]:
    """The function eager runs and backends compile."""
    return _compile_source(program_source(instance), instance)


def make_reference(instance: ScenarioInstance) -> Callable[..., Any] | None:
    """The same computation on fp64 (dequantized) inputs; None where exactness is judged."""
    if instance.op == "int_mm":
        return None  # integer GEMMs are compared with eager bit for bit
    return _compile_source(program_source(instance, reference=True), instance)


# Ops whose output is alpha * (A @ B) (+ beta * C or a bias): the ones a TF32 run rounds.
_ROUNDED_GEMMS = ("mm", "bmm", "matmul", "addmm", "baddbmm", "linear")


def make_rounding_magnitude(instance: ScenarioInstance) -> Callable[..., Any] | None:
    """|alpha| * (|A| @ |B|) over the reference inputs (same parameters as the program): per
    element, what rounding the GEMM's inputs can cost, up to the oracle's relative bound
    (`Policy.input_rounding`). C and the bias take no part (they are not rounded to TF32). None
    where the output is not that GEMM (an epilogue follows) or the op is not a float GEMM."""
    if instance.epilogue or instance.op not in _ROUNDED_GEMMS:
        return None
    names = input_names(instance)
    lines = [
        f"def {instance.name.replace('.', '_')}_reference({', '.join(names)}):",
        *_transposes(instance, names),
    ]
    if instance.op == "linear":
        lines.append("    return F.linear(a.abs(), b.abs())")
    else:
        scale = abs(instance.alpha) if instance.op in ("addmm", "baddbmm") else 1.0
        lines.append(f"    return {scale!r} * torch.matmul(a.abs(), b.abs())")
    return _compile_source("\n".join(lines) + "\n", instance)


def program_source(instance: ScenarioInstance, *, reference: bool = False) -> str:
    """The program as Python source.

    Scalars (alpha, beta, epilogue constants) are written as literals: held in a closure, dynamo
    would lift them into graph inputs under dynamic=True and recompile once they are seen, which
    is the program's doing, not the backend's.
    """
    names = input_names(instance)
    name = f"{instance.name.replace('.', '_')}_{'reference' if reference else 'program'}"
    lines = [f"def {name}({', '.join(names)}):", *_transposes(instance, names)]
    lines.append(f"    out = {_gemm_expression(instance, reference=reference)}")
    kept = []
    others = iter(n for n in names if n.startswith("other"))
    for step in instance.epilogue:
        if step.kind == "keep":
            kept.append(f"kept{len(kept)}")
            lines.append(f"    {kept[-1]} = out")
        elif step.kind == "cast" and reference:
            continue  # the reference stays in fp64
        else:
            lines.append(f"    out = {_epilogue_expression(step, others)}")
    lines.append(f"    return {', '.join([*kept, 'out'])}" if kept else "    return out")
    return "\n".join(lines) + "\n"


def _transposes(instance: ScenarioInstance, names: tuple[str, ...]) -> list[str]:
    """Source lines giving operands stored transposed (layout `t`) their logical shape."""
    return [
        f"    {o.name} = {o.name}.transpose(-2, -1)"
        for o in instance.operands
        if o.layout == "t" and o.name in names
    ]


def _gemm_expression(instance: ScenarioInstance, *, reference: bool) -> str:
    op = instance.op
    scale = f"beta={instance.beta!r}, alpha={instance.alpha!r}"
    if op == "mm":
        return "torch.mm(a, b)"
    if op == "bmm":
        return "torch.bmm(a, b)"
    if op == "matmul":
        return "torch.matmul(a, b)"
    if op == "int_mm":
        return "torch._int_mm(a, b)"
    if op == "addmm":
        return f"torch.addmm(c, a, b, {scale})"
    if op == "baddbmm":
        return f"torch.baddbmm(c, a, b, {scale})"
    if op == "linear":
        return f"F.linear(a, b, {'bias' if instance.bias else 'None'})"
    if op == "scaled_mm":
        bias = " + bias" if instance.bias else ""
        if reference:  # operands arrive dequantized, scales folded in (inputs.reference_inputs)
            return f"a @ b{bias}"
        out_dtype = _torch_name(instance.out_dtype or "bf16")
        return (
            f"torch._scaled_mm(a, b, scale_a, scale_b, bias={'bias' if instance.bias else None}"
            f", out_dtype={out_dtype}, use_fast_accum={instance.use_fast_accum!r})"
        )
    raise AssertionError(op)


def _epilogue_expression(step: Epilogue, others: Iterator[str]) -> str:
    kind, arg = step.kind, step.arg
    simple = {
        "relu": "torch.relu(out)",
        "gelu": "F.gelu(out)",
        "gelu_tanh": "F.gelu(out, approximate='tanh')",
        "silu": "F.silu(out)",
        "tanh": "torch.tanh(out)",
        "sigmoid": "torch.sigmoid(out)",
    }
    if kind in simple:
        return simple[kind]
    if kind == "clamp":
        return f"torch.clamp(out, {arg[0]!r}, {arg[1]!r})"
    if kind == "mul":
        return f"out * {arg!r}"
    if kind == "add":
        return f"out + {arg!r}"
    if kind == "add_tensor":
        return f"out + {next(others)}"
    if kind == "cast":
        return f"out.to({_torch_name(arg)})"
    raise AssertionError(kind)


def _torch_name(dtype: str) -> str:
    return f"torch.{str(TORCH_DTYPES[dtype]).removeprefix('torch.')}"


def _compile_source(source: str, instance: ScenarioInstance) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"torch": torch, "F": F}
    filename = f"<gemmconf program {instance.id}>"
    code = compile(source, filename, "exec")
    # Register the text so tracebacks and dynamo's graph-break messages can show the line.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(code, namespace)
    (function,) = (v for k, v in namespace.items() if k.endswith(("_program", "_reference")))
    function.gemmconf_source = source
    return function


@contextlib.contextmanager
def numerics(instance: ScenarioInstance) -> Iterator[None]:
    """Matmul precision settings for one item: TF32 allowed only for `tf32` scenarios."""
    allow = instance.dtype == "tf32"
    saved = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
    )
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
        torch.set_float32_matmul_precision(saved[2])
