"""The function under test: what a scenario instance computes, as plain PyTorch.

`make_function` returns the Python function that eager runs and every backend compiles: the GEMM
op on its positional inputs (in `input_names` order), then the epilogue chain. `make_reference`
returns the same computation for the fp64 reference the oracle uses: inputs arrive upcast and
dequantized, casts are kept in fp64 and `_scaled_mm` becomes an explicit scaled matmul.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F

from harness.scenario import Epilogue, ScenarioInstance

TORCH_DTYPES: dict[str, torch.dtype] = {
    "fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
    "bf16": torch.bfloat16, "e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2,
    "int8": torch.int8, "int32": torch.int32,
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
    return _assemble(instance, reference=False)


def make_reference(instance: ScenarioInstance) -> Callable[..., Any] | None:
    """The same computation on fp64 (dequantized) inputs; None where exactness is judged."""
    if instance.op == "int_mm":
        return None  # integer GEMMs are compared with eager bit for bit
    return _assemble(instance, reference=True)


def _assemble(instance: ScenarioInstance, *, reference: bool) -> Callable[..., Any]:
    names = input_names(instance)
    transposed = {o.name for o in instance.operands if o.layout == "t"}
    gemm = _gemm(instance, reference=reference)
    steps = instance.epilogue

    def gemm_program(*args: torch.Tensor) -> Any:
        inputs = dict(zip(names, args, strict=True))
        for name in transposed:  # stored transposed; the program takes the transpose back
            inputs[name] = inputs[name].transpose(-2, -1)
        value = gemm(inputs)
        kept = []
        others = iter(inputs[n] for n in names if n.startswith("other"))
        for step in steps:
            if step.kind == "keep":
                kept.append(value)
            else:
                value = _apply(step, value, others, reference=reference)
        return (*kept, value) if kept else value

    gemm_program.__name__ = f"{instance.name}_program"
    gemm_program.__qualname__ = gemm_program.__name__
    return gemm_program


def _gemm(instance: ScenarioInstance, *, reference: bool) -> Callable[[dict], torch.Tensor]:
    op, alpha, beta = instance.op, instance.alpha, instance.beta
    if op == "mm":
        return lambda t: torch.mm(t["a"], t["b"])
    if op == "bmm":
        return lambda t: torch.bmm(t["a"], t["b"])
    if op == "matmul":
        return lambda t: torch.matmul(t["a"], t["b"])
    if op == "int_mm":
        return lambda t: torch._int_mm(t["a"], t["b"])
    if op == "addmm":
        return lambda t: torch.addmm(t["c"], t["a"], t["b"], beta=beta, alpha=alpha)
    if op == "baddbmm":
        return lambda t: torch.baddbmm(t["c"], t["a"], t["b"], beta=beta, alpha=alpha)
    if op == "linear":
        return lambda t: F.linear(t["a"], t["b"], t.get("bias"))
    if op == "scaled_mm":
        return _scaled_reference if reference else _scaled_mm_call(instance)
    raise AssertionError(op)


def _scaled_mm_call(instance: ScenarioInstance) -> Callable[[dict], torch.Tensor]:
    out_dtype = TORCH_DTYPES[instance.out_dtype or "bf16"]
    fast = instance.use_fast_accum

    def call(t: dict) -> torch.Tensor:
        return torch._scaled_mm(t["a"], t["b"], t["scale_a"], t["scale_b"], bias=t.get("bias"),
                                out_dtype=out_dtype, use_fast_accum=fast)

    return call


def _scaled_reference(t: dict) -> torch.Tensor:
    # Inputs arrive already dequantized by `inputs.reference_inputs`; scales are folded in.
    out = t["a"] @ t["b"]
    return out + t["bias"] if "bias" in t else out


def _apply(step: Epilogue, value: torch.Tensor, others: Iterator[torch.Tensor], *,
           reference: bool) -> torch.Tensor:
    kind, arg = step.kind, step.arg
    if kind == "relu":
        return torch.relu(value)
    if kind == "gelu":
        return F.gelu(value)
    if kind == "gelu_tanh":
        return F.gelu(value, approximate="tanh")
    if kind == "silu":
        return F.silu(value)
    if kind == "tanh":
        return torch.tanh(value)
    if kind == "sigmoid":
        return torch.sigmoid(value)
    if kind == "clamp":
        return torch.clamp(value, arg[0], arg[1])
    if kind == "mul":
        return value * arg
    if kind == "add":
        return value + arg
    if kind == "add_tensor":
        return value + next(others)
    if kind == "cast":
        return value if reference else value.to(TORCH_DTYPES[arg])
    raise AssertionError(kind)


@contextlib.contextmanager
def numerics(instance: ScenarioInstance) -> Iterator[None]:
    """Matmul precision settings for one item: TF32 allowed only for `tf32` scenarios."""
    allow = instance.dtype == "tf32"
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.get_float32_matmul_precision())
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
        torch.set_float32_matmul_precision(saved[2])
