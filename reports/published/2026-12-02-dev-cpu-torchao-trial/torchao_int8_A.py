"""torchao's CPU int8 dynamic-activation / int8-weight linear as a gemmconf backend.

An aten override (docs/outside-backends.md, "a kernel library that overrides aten ops"): while a
Compiled runs, aten::mm / addmm / bmm / baddbmm on the CPU go through torchao 0.18's public
quantize_(Linear, Int8DynamicActivationInt8WeightConfig()) path: B is the Linear's weight
(quantized per output channel to int8), A is quantized per row at call time, and the product is
torchao's int_scaled_matmul (torch._int_mm on the CPU), rescaled.

Dtypes torchao's int8 path does not take (fp64, integers) are handed to aten's own kernel
through the out= overload (so gemmconf should attribute those to PyTorch).

    gemmconf run dense/first.yaml --backend torchao_int8:TorchaoInt8
"""

from __future__ import annotations

import torch
from torch import nn

import torchao
from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

QUANTIZED = (torch.float32, torch.bfloat16, torch.float16)
CONFIG = Int8DynamicActivationInt8WeightConfig(set_inductor_config=False)


def _aten_mm(a, b):
    out = a.new_empty((a.shape[0], b.shape[1]))
    return torch.ops.aten.mm.out(a, b, out=out)


def _int8_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b, (M, K) @ (K, N), through torchao's int8 dynamic quantized linear."""
    if a.dtype not in QUANTIZED or b.dtype != a.dtype:
        return _aten_mm(a, b)
    k, n = b.shape
    linear = nn.Linear(k, n, bias=False, device="meta", dtype=a.dtype)
    linear.weight = nn.Parameter(b.t().contiguous(), requires_grad=False)
    quantize_(linear, CONFIG)
    return linear(a)


def mm(a, b):
    return _int8_mm(a, b)


def addmm(c, a, b, *, beta=1, alpha=1):
    product = _int8_mm(a, b)
    out = product * alpha if alpha != 1 else product
    if beta != 0:
        out = out + (c * beta if beta != 1 else c)
    return out.to(a.dtype)


def bmm(a, b):
    return torch.stack([_int8_mm(a[i], b[i]) for i in range(a.shape[0])]) if a.shape[0] else (
        a.new_empty((0, a.shape[1], b.shape[2]))
    )


def baddbmm(c, a, b, *, beta=1, alpha=1):
    product = bmm(a, b)
    out = product * alpha if alpha != 1 else product
    if beta != 0:
        out = out + (c * beta if beta != 1 else c)
    return out.to(a.dtype)


KERNELS = {"mm": mm, "addmm": addmm, "bmm": bmm, "baddbmm": baddbmm}


class Compiled:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *inputs):
        library = torch.library.Library("aten", "IMPL")  # torchao's kernels, for this call only
        for op, kernel in KERNELS.items():
            library.impl(op, kernel, "CPU")
        try:
            return self.fn(*inputs)
        finally:
            library._destroy()

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return 1


class TorchaoInt8:
    name = "torchao-int8"

    def availability(self) -> str | None:
        return None

    def supports(self, instance) -> str | None:
        if instance.op in ("scaled_mm", "scaled_mm_v2", "scaled_grouped_mm", "grouped_mm", "int_mm"):
            return f"torchao int8 dynamic quantization has no {instance.op} path"
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        return Compiled(fn)
