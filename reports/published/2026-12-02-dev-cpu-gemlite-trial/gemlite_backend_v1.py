"""gemlite (Triton low-bit-weight GEMM kernels) as a gemmconf backend, aten-override style
(docs/outside-backends.md, "a kernel library that overrides aten ops").

For the call only, aten::mm and aten::addmm on the CPU run gemlite's A16W8 path: the right-hand
operand is the "weight", quantized per output channel to int8 at call time
(gemlite.helper.A16W8_INT8), and gemlite's Triton kernels (GEMV / GEMM / split-K, picked by M)
multiply the fp16/bf16/fp32 activations by it. On this CPU the kernels run in Triton's
interpreter (TRITON_INTERPRET=1); gemlite 0.6.0.post2 asks CUDA for the device at import, so
this file shims torch.cuda's capability query and gives Triton a stand-in driver (target sm80,
no benchmarking: autotune takes the first config), and routes M >= 64 to the split-K kernel.

Run: gemmconf run dense/first.yaml --backend gemlite_backend:GemLite
"""
from __future__ import annotations

import os
import types
import warnings

os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np
import torch
import triton
import triton.runtime.interpreter as _interp
from triton.backends.compiler import GPUTarget


# --- make gemlite importable on a CPU-only torch -----------------------------------------
def _install_cpu_shims() -> None:
    torch.cuda.get_device_capability = lambda *a, **k: (8, 0)
    torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(
        name="NVIDIA A100", major=8, minor=0, multi_processor_count=108
    )

    class _CpuDriver:  # what gemlite and Triton's autotuner ask the driver
        utils = types.SimpleNamespace(
            get_device_properties=lambda d: {
                "max_shared_mem": 166912,
                "multiprocessor_count": 108,
                "max_num_regs": 65536,
                "warpSize": 32,
            }
        )

        def get_current_target(self):
            return GPUTarget("cuda", 80, 32)

        def get_current_device(self):
            return 0

        def get_active_torch_device(self):
            return torch.device("cpu")

        def get_benchmarker(self):
            def bench(fn, *a, quantiles=None, **k):
                fn()
                return [1.0, 1.0, 1.0] if quantiles else 1.0

            return bench

        def get_device_interface(self):
            return torch.cuda

        def get_empty_cache_for_benchmark(self):
            return torch.empty(1)

        def clear_cache(self, cache):
            pass

    triton.runtime.driver.set_active(_CpuDriver())

    # Triton 3.7's interpreter gives a Python bool argument an int32 array under an int1 type
    # (ValueError "numpy data itemsize (32 bits) exceeds ... int1"); gemlite passes bools.
    original = _interp._implicit_cvt

    def implicit_cvt(arg):
        if isinstance(arg, bool):
            import triton.language as tl

            return tl.tensor(_interp.TensorHandle(np.array([arg], dtype=np.bool_), tl.int1), tl.int1)
        return original(arg)

    _interp._implicit_cvt = implicit_cvt


_install_cpu_shims()

import gemlite  # noqa: E402
from gemlite.helper import A16W8_INT8  # noqa: E402

gemlite.set_autotune("default")

FLOATS = (torch.float16, torch.bfloat16, torch.float32)


def gemlite_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b with b quantized to int8 per column (a "weight" of N x K) by gemlite."""
    if a.dtype not in FLOATS or b.dtype != a.dtype:
        raise TypeError(f"gemlite: no kernel for {a.dtype} x {b.dtype}")
    layer = A16W8_INT8(device="cpu", dtype=a.dtype).from_weights(b.t())
    if a.shape[0] >= 64:
        # gemlite's "GEMM" kernel (M >= 64) does `(k * stride_mul).to(tl.int32)` on its loop
        # counter, a Python int in Triton's interpreter: AttributeError. Its split-K kernel
        # serves every M on the GPU too, so take it here.
        return layer.forward_manual(a, "GEMM_SPLITK").to(a.dtype)
    return layer(a).to(a.dtype)


def gemlite_addmm(c, a, b, *, beta=1, alpha=1):
    out = gemlite_mm(a, b)
    if alpha != 1:
        out = out * alpha
    if beta == 0:
        return out
    return out + (c * beta if beta != 1 else c)


KERNELS = {"mm": gemlite_mm, "addmm": gemlite_addmm}
OPS = ("mm", "addmm", "linear", "matmul")


class Compiled:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *inputs):
        library = torch.library.Library("aten", "IMPL")  # gemlite's kernels, this call only
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
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


class GemLite:
    name = "gemlite"

    def availability(self) -> str | None:
        return None

    def supports(self, instance) -> str | None:
        if instance.op not in OPS:
            return f"no {instance.op} kernel in gemlite"
        if str(instance.dtype) not in ("fp16", "bf16", "fp32"):
            return f"gemlite's A16W8 takes fp16/bf16/fp32 activations, not {instance.dtype}"
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        return Compiled(fn)
