"""Backends with one planted bug each: the suite must catch every one of them.

Each runs the function eagerly under a `TorchFunctionMode` that corrupts one thing the way real
GEMM backends get it wrong. They are importable as ``--backend planted_backends:<name>`` with the
tests directory on sys.path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

GEMMS = {torch.mm, torch.addmm, torch.bmm, torch.baddbmm, torch.matmul, torch.nn.functional.linear}


class _Intercept(TorchFunctionMode):
    def __init__(self, rewrite: Callable[..., Any]):
        super().__init__()
        self.rewrite = rewrite

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in GEMMS:  # the mode is inactive inside its own handler: no recursion
            result = self.rewrite(func, args, kwargs)
            if result is not NotImplemented:
                return result
        return func(*args, **kwargs)


class PlantedCompiled:
    def __init__(self, fn, rewrite, count_shapes: bool):
        self.fn, self.rewrite, self.count_shapes = fn, rewrite, count_shapes
        self.shapes: set[tuple] = set()

    def __call__(self, *args):
        self.shapes.add(tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor)))
        with _Intercept(self.rewrite):
            return self.fn(*args)

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return len(self.shapes) if self.count_shapes else min(1, len(self.shapes))


class PlantedBackend:
    def __init__(self, name: str, rewrite, *, count_shapes: bool = False):
        self.name = name
        self.rewrite = rewrite
        self.count_shapes = count_shapes

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        return PlantedCompiled(fn, self.rewrite, self.count_shapes)


def _untouched(func, args, kwargs):
    return NotImplemented


def _drop_bias_broadcast(func, args, kwargs):
    """A bias that is not already (M, N) is silently ignored (beta * C dropped)."""
    if func in (torch.addmm, torch.baddbmm):
        c, a, b = args
        out_shape = (*a.shape[:-1], b.shape[-1])
        if tuple(c.shape) != out_shape:
            alpha = kwargs.get("alpha", 1)
            mm = torch.mm if func is torch.addmm else torch.bmm
            return alpha * mm(a, b)
    return NotImplemented


def _low_precision_accumulation(func, args, kwargs):
    """fp16/bf16 GEMMs summed in the input dtype over 32-wide K chunks (no fp32 accumulator)."""
    if func not in (torch.mm, torch.bmm):
        return NotImplemented
    a, b = args
    if a.dtype not in (torch.float16, torch.bfloat16):
        return NotImplemented
    k = a.shape[-1]
    acc = None
    for start in range(0, k, 32):
        part = torch.matmul(
            a[..., start : start + 32].float(), b[..., start : start + 32, :].float()
        )
        part = part.to(a.dtype)
        acc = part if acc is None else (acc + part)  # rounded to the input dtype every chunk
    if acc is None:
        return NotImplemented
    return acc


def _wrong_output_dtype(func, args, kwargs):
    """Half-precision GEMMs return their fp32 accumulator instead of casting back."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not tensors or tensors[-1].dtype not in (torch.float16, torch.bfloat16):
        return NotImplemented
    upcast = [a.float() if isinstance(a, torch.Tensor) else a for a in args]
    return func(*upcast, **kwargs)


def _tf32_inputs(func, args, kwargs):
    """fp32 GEMMs whose operands are rounded to TF32 (10-bit mantissa) without permission."""
    if not all(a.dtype == torch.float32 for a in args if isinstance(a, torch.Tensor)):
        return NotImplemented

    def tf32(t):
        if not isinstance(t, torch.Tensor):
            return t
        bits = t.contiguous().view(torch.int32)
        return ((bits + 0x1000) & ~0x1FFF).view(torch.float32).view(t.shape)

    return func(*(tf32(a) for a in args), **kwargs)


def _ignore_strides(func, args, kwargs):
    """Operands read as if row-major contiguous: column-major/transposed inputs come out wrong."""
    if func not in (torch.mm, torch.bmm):
        return NotImplemented

    def as_row_major(t):
        if t.is_contiguous() or t.untyped_storage().nbytes() < t.numel() * t.element_size():
            return t
        return torch.as_strided(t, t.shape, torch.empty(t.shape).stride(), t.storage_offset())

    return func(*(as_row_major(a) for a in args), **kwargs)


def _crash_on_zero_size(func, args, kwargs):
    """A zero-size problem raises instead of returning an empty result."""
    if any(isinstance(a, torch.Tensor) and a.numel() == 0 for a in args):
        raise ZeroDivisionError("integer division or modulo by zero (grid for a 0-size problem)")
    return NotImplemented


bias_broadcast_dropped = PlantedBackend("bias-broadcast-dropped", _drop_bias_broadcast)
low_precision_accumulation = PlantedBackend("low-precision-acc", _low_precision_accumulation)
wrong_output_dtype = PlantedBackend("wrong-output-dtype", _wrong_output_dtype)
recompiles_every_shape = PlantedBackend("recompiles-every-shape", _untouched, count_shapes=True)
tf32_without_permission = PlantedBackend("tf32-inputs", _tf32_inputs)
ignores_strides = PlantedBackend("ignores-strides", _ignore_strides)
crashes_on_zero_size = PlantedBackend("crashes-on-zero-size", _crash_on_zero_size)

ALL = {
    "bias_broadcast_dropped": bias_broadcast_dropped,
    "low_precision_accumulation": low_precision_accumulation,
    "wrong_output_dtype": wrong_output_dtype,
    "recompiles_every_shape": recompiles_every_shape,
    "tf32_without_permission": tf32_without_permission,
    "ignores_strides": ignores_strides,
    "crashes_on_zero_size": crashes_on_zero_size,
}


class RefusesAddmm(PlantedBackend):
    """Not a planted bug: a correct backend that declares it does not support addmm."""

    def supports(self, instance) -> str | None:
        return "no addmm on this backend" if instance.op == "addmm" else None


refuses_addmm = RefusesAddmm("refuses-addmm", _untouched)
