"""optimum-quanto 0.2.7 behind gemmconf's Backend protocol (an object with its own compile step).

`gemmconf run --backend quanto_backend:QuantoQint8 ...` from the folder that holds this file.

How a quanto user meets a GEMM: the weight of an nn.Linear is a quanto tensor subclass
(`WeightQBytesTensor`, made by `quantize_weight` / `quanto.quantize(model, weights=qint8)`), and
`F.linear(x, W_q, bias)` dispatches, through the subclass's __torch_function__, to
`WeightQBytesLinearFunction` and `torch.ops.quanto.qbytes_mm` (quanto's own op; on the CPU it picks
`torch._weight_int8pack_mm` for bf16 activations with K % 4 == 0, `torch._int_mm` for int8
activations, else dequantizes the weight and calls torch.matmul).

The program's weight operand changes with every call (gemmconf checks fresh answers for fresh
values), so the weight is quantized at call time (per output channel, absmax scale, qint8), as
`quanto.quantize` + `freeze` would do ahead of time. The GEMM calls the programs make (torch.mm,
torch.addmm, F.linear, torch.matmul with a 2-D second operand) are routed by a TorchFunctionMode
that is on only while the Compiled runs; any other call runs as it is (PyTorch's).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from optimum.quanto import qint8, quantize_weight
from optimum.quanto.tensor.optimizers import AbsmaxOptimizer

_absmax = AbsmaxOptimizer()

ROUTED_OPS = {"mm", "addmm", "linear", "matmul"}
FLOAT = {torch.float32, torch.float16, torch.bfloat16}


def quantized_weight(w: torch.Tensor) -> torch.Tensor:
    """w: (out_features, in_features), quantized per output channel (axis 0) to qint8."""
    scale = _absmax(w, qint8, 0)  # quanto's own absmax scale, shape (out, 1)
    return quantize_weight(w, qtype=qint8, axis=0, scale=scale)


def qlinear(x, w, bias=None):
    return F.linear(x, quantized_weight(w), bias)  # -> WeightQBytesLinearFunction -> quanto::qbytes_mm


class QuantoMode(torch.overrides.TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.routed = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if "out" not in kwargs:
            if func is F.linear and args[0].dtype in FLOAT:
                self.routed += 1
                return qlinear(*args, **kwargs)
            if func is torch.mm and args[0].dtype in FLOAT:
                a, b = args
                self.routed += 1
                return qlinear(a, b.t())
            if func is torch.matmul and args[1].dim() == 2 and args[0].dtype in FLOAT:
                a, b = args
                self.routed += 1
                return qlinear(a, b.t())
            if func is torch.addmm and args[1].dtype in FLOAT:
                c, a, b = args
                beta = kwargs.get("beta", 1)
                alpha = kwargs.get("alpha", 1)
                self.routed += 1
                prod = qlinear(a, b.t())
                if alpha != 1:
                    prod = prod * alpha
                if beta == 0:
                    return prod
                return prod + (c if beta == 1 else c * beta)
        return func(*args, **kwargs)


class Compiled:
    def __init__(self, fn):
        self.fn = fn
        self.routed = 0

    def __call__(self, *inputs):
        mode = QuantoMode()
        with mode:
            out = self.fn(*inputs)
        self.routed += mode.routed
        return out

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return 1


class QuantoQint8:
    name = "quanto-qint8"

    def availability(self) -> str | None:
        return None

    def supports(self, instance) -> str | None:
        if instance.op not in ROUTED_OPS:
            return f"quanto quantizes the weight of F.linear-like GEMMs only, not {instance.op}"
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        return Compiled(fn)
