"""Helion's matmul as a kernel library that overrides aten's GEMM ops: a gemmconf backend.

    cd reports/published/2026-11-29-nvidia-h200-helion-torchao
    gemmconf run --backend helion_aten:HelionAten -n 8
    PYTHONPATH=<that folder> pytest suites --backend helion_aten:HelionAten   # from the root

Three Helion kernels (mm, addmm, bmm) serve aten::mm, aten::addmm and aten::bmm while the
backend's call runs (README, "A backend that overrides aten ops"): registered through
torch.library for the inputs' device key at the call's start, removed at its end. Each kernel
has one fixed Helion config (no autotuning: Helion's autotuner takes minutes per shape) and is
compiled with `static_shapes=False`, so one compiled kernel serves every size of a dtype.

What they serve: float32, float16 and bfloat16 operands of one dtype, in any strides, summed in
fp32. fp32 products follow torch's matmul precision as aten's do (TF32 only where
`torch.get_float32_matmul_precision()` allows it). Anything else (another dtype, operands of two
dtypes, shapes aten rejects, a C that does not broadcast to (M, N)) goes to aten's own kernel
through the op's `out=` overload, which the override leaves in place: PyTorch computes it, or
raises eager's error, and gemmconf's attribution says so. Ops not overridden (baddbmm, the
scaled and integer GEMMs, `out=` calls) are PyTorch's too.

On a CPU, Helion's kernels run in the Triton interpreter (TRITON_INTERPRET=1). There bf16 tiles
are summed in fp32 first: the interpreter multiplies bf16 `tl.dot` operands as integers
(triton-lang/triton#11584); on a GPU they go to the tensor cores as bf16.
"""

from __future__ import annotations

import contextlib
import os

import helion
import helion.language as hl
import torch

# One fixed config per kernel: block sizes in the order of the kernel's tile loops.
MM_CONFIG = helion.Config(block_sizes=[64, 64, 32], num_warps=4, num_stages=3)
BMM_CONFIG = helion.Config(block_sizes=[1, 64, 64, 32], num_warps=4, num_stages=3)
SERVED = (torch.float32, torch.float16, torch.bfloat16)


def mm_kernel(a: torch.Tensor, b: torch.Tensor, upcast: hl.constexpr) -> torch.Tensor:
    m, k = a.size()
    _, n = b.size()
    out = torch.empty([m, n], dtype=a.dtype, device=a.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            if upcast:
                acc = torch.addmm(
                    acc, a[tile_m, tile_k].to(torch.float32), b[tile_k, tile_n].to(torch.float32)
                )
            else:
                acc = torch.addmm(acc, a[tile_m, tile_k], b[tile_k, tile_n])
        out[tile_m, tile_n] = acc.to(out.dtype)
    return out


def addmm_kernel(
    c: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    beta: float,
    alpha: float,
    with_c: hl.constexpr,
    upcast: hl.constexpr,
) -> torch.Tensor:
    m, k = a.size()
    _, n = b.size()
    out = torch.empty([m, n], dtype=a.dtype, device=a.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            if upcast:
                acc = torch.addmm(
                    acc, a[tile_m, tile_k].to(torch.float32), b[tile_k, tile_n].to(torch.float32)
                )
            else:
                acc = torch.addmm(acc, a[tile_m, tile_k], b[tile_k, tile_n])
        acc = acc * alpha
        if with_c:  # beta = 0 reads no C: its NaN and Inf do not reach the result (aten's rule)
            acc = acc + c[tile_m, tile_n].to(torch.float32) * beta
        out[tile_m, tile_n] = acc.to(out.dtype)
    return out


def bmm_kernel(a: torch.Tensor, b: torch.Tensor, upcast: hl.constexpr) -> torch.Tensor:
    batch, m, k = a.size()
    _, _, n = b.size()
    out = torch.empty([batch, m, n], dtype=a.dtype, device=a.device)
    for tile_b, tile_m, tile_n in hl.tile([batch, m, n]):
        acc = hl.zeros([tile_b, tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            if upcast:
                acc = torch.baddbmm(
                    acc,
                    a[tile_b, tile_m, tile_k].to(torch.float32),
                    b[tile_b, tile_k, tile_n].to(torch.float32),
                )
            else:
                acc = torch.baddbmm(acc, a[tile_b, tile_m, tile_k], b[tile_b, tile_k, tile_n])
        out[tile_b, tile_m, tile_n] = acc.to(out.dtype)
    return out


def _compiled(fn, config: helion.Config) -> dict[str, helion.Kernel]:
    """The kernel once per dot precision: fp32 tiles summed exactly ("ieee") or as TF32."""
    return {
        precision: helion.kernel(fn, config=config, static_shapes=False, dot_precision=precision)
        for precision in ("ieee", "tf32")
    }


KERNELS = {
    "mm": _compiled(mm_kernel, MM_CONFIG),
    "addmm": _compiled(addmm_kernel, MM_CONFIG),
    "bmm": _compiled(bmm_kernel, BMM_CONFIG),
}


def _precision(dtype: torch.dtype) -> str:
    """TF32 where torch allows it for fp32 matmuls, as aten's kernels decide."""
    tf32 = dtype == torch.float32 and torch.get_float32_matmul_precision() != "highest"
    return "tf32" if tf32 else "ieee"


def _upcast(a: torch.Tensor) -> bool:
    return a.dtype == torch.bfloat16 and a.device.type == "cpu"


def _served(*operands: torch.Tensor) -> bool:
    dtype = operands[0].dtype
    return dtype in SERVED and all(
        t.dtype == dtype and t.device == operands[0].device for t in operands
    )


def helion_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0] or not _served(a, b):
        return torch.ops.aten.mm.out(a, b, out=a.new_empty((0,)))
    return KERNELS["mm"][_precision(a.dtype)](a, b, _upcast(a))


def helion_addmm(
    c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, beta: float = 1, alpha: float = 1
) -> torch.Tensor:
    fits = a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0] and c.dim() <= 2
    shape = (a.shape[0], b.shape[1]) if fits else ()
    if not fits or not _broadcasts(c, shape) or not _served(c, a, b):
        return torch.ops.aten.addmm.out(c, a, b, beta=beta, alpha=alpha, out=a.new_empty((0,)))
    kernel = KERNELS["addmm"][_precision(a.dtype)]
    return kernel(c.expand(shape), a, b, float(beta), float(alpha), beta != 0, _upcast(a))


def helion_bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    fits = a.dim() == 3 and b.dim() == 3 and a.shape[0] == b.shape[0] and a.shape[2] == b.shape[1]
    if not fits or not _served(a, b):
        return torch.ops.aten.bmm.out(a, b, out=a.new_empty((0,)))
    return KERNELS["bmm"][_precision(a.dtype)](a, b, _upcast(a))


def _broadcasts(c: torch.Tensor, shape: tuple[int, ...]) -> bool:
    try:
        return torch.broadcast_shapes(c.shape, shape) == torch.Size(shape)
    except RuntimeError:
        return False


OVERRIDES = {"mm": helion_mm, "addmm": helion_addmm, "bmm": helion_bmm}


class Compiled:
    def __init__(self, fn, dispatch_key: str):
        self.fn = fn
        self.dispatch_key = dispatch_key

    def __call__(self, *inputs):
        library = torch.library.Library("aten", "IMPL")  # Helion's kernels, for this call only
        for op, kernel in OVERRIDES.items():
            library.impl(op, kernel, self.dispatch_key)
        try:
            return self.fn(*inputs)
        finally:
            library._destroy()  # aten's own kernels again (torch.library has no public undo)

    def warm_up(self, example_inputs) -> None:
        """Helion compiles a kernel at its first call for a dtype and size class: do it here, in
        the compile step, on copies of the inputs (same sizes and strides), so that the item's
        calls run compiled kernels. (Helion traces the kernel body on fake tensors while it
        compiles, and a profiler counts those aten::mm calls as aten's own.)"""
        # a program that raises raises again in the item's own call, where it is judged
        with contextlib.suppress(Exception):
            self(*(_copy(x) for x in example_inputs))

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return 1  # one kernel per dtype serves every shape (static_shapes=False)


def _copy(x):
    if not isinstance(x, torch.Tensor) or x.is_sparse:
        return x
    copy = torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device=x.device)
    return copy.copy_(x).requires_grad_(x.requires_grad)


class HelionAten:
    name = "helion-aten"
    compile_timeout_s = 120.0  # Helion's codegen and Triton's compile in the first call

    def availability(self) -> str | None:
        if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
            return "no GPU here; set TRITON_INTERPRET=1 to run Helion's kernels interpreted"
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        devices = {t.device.type for t in example_inputs if isinstance(t, torch.Tensor)}
        compiled = Compiled(fn, "CUDA" if "cuda" in devices else "CPU")
        compiled.warm_up(example_inputs)
        return compiled
