"""torchao's float8 and MX GEMM paths behind a compile step of our own: a gemmconf backend.

    cd reports/published/2026-11-29-nvidia-h200-helion-torchao
    gemmconf run --backend torchao_gemm:TorchaoGemm -n 8
    PYTHONPATH=<that folder> pytest suites --backend torchao_gemm:TorchaoGemm   # from the root
    ... --backend torchao_gemm:TorchaoFloat8Linear   # also F.linear through Float8Linear

`compile(fn, example_inputs, *, dynamic)` traces the program with torch.fx and swaps its scaled
GEMM calls for torchao's where torchao has a path for the item (the rewritten graph is the
`python` artifact). torchao's scale is the factor that quantizes (fp8 = x * scale), the
reciprocal of the one `_scaled_mm` takes; the adapter passes reciprocals where torchao says so.

- `torch._scaled_mm` and `F.scaled_mm`, tensorwise or rowwise fp32 scales:
  `torchao.float8.float8_ops.addmm_float8_unwrapped`, what torchao's Float8 linear calls. It
  computes with `torch._scaled_mm` (PyTorch's kernel: the attribution says so), rowwise without
  fast accumulation as tensorwise with the scales applied to the bf16 result afterwards.
- Blockwise e4m3fn (1x128 scales for a, 128x128 or 128x1 for b): torchao's own Triton GEMMs,
  `triton_fp8_gemm_1x128_128x128` and `triton_fp8_gemm_1x128_128x1` (they take no bias: the
  adapter adds it to their result; operands and scales are copied into the layouts they assert).
- `F.scaled_mm` MX (e8m0 scales per 32, K a multiple of 32) and NVFP4: torchao's `MXTensor` and
  `NVFP4Tensor` from the operands' data and scales, multiplied with `torch.mm`. MX asks for
  torchao's real MX GEMM (`KernelPreference.AUTO`, cuBLAS) on sm100 and later and its emulation
  (dequantize, then a GEMM in the output dtype) below; NVFP4 has one path, cuBLAS's.
- With `TorchaoFloat8Linear`, also `F.linear` of bf16 or fp32 with K and N multiples of 16
  (torchao's float8 requirement), through `torchao.float8.Float8Linear` with tensorwise dynamic
  scaling: the activation and the weight are quantized to e4m3fn, so results carry fp8's error.

Everything else (other recipes, dtypes and ops, a program torch.fx cannot trace) runs as the
program wrote it: PyTorch computes it, and gemmconf's attribution says so.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torchao.float8 import Float8LinearConfig
from torchao.float8.float8_linear import Float8Linear
from torchao.float8.float8_ops import addmm_float8_unwrapped
from torchao.prototype.blockwise_fp8_training.kernels import (
    triton_fp8_gemm_1x128_128x1,
    triton_fp8_gemm_1x128_128x128,
)
from torchao.prototype.mx_formats.mx_tensor import MXTensor
from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor
from torchao.quantization.quantize_.common.kernel_preference import KernelPreference

BLOCK = 128  # torchao's blockwise fp8 kernels' block
FP32 = torch.float32
E4M3 = torch.float8_e4m3fn
E8M0 = torch.float8_e8m0fnu
FP4 = torch.float4_e2m1fn_x2
MX_BLOCK = 32
NVFP4_BLOCK = 16


def _col_major(x: torch.Tensor) -> torch.Tensor:
    return x if x.stride(-2) == 1 else x.t().contiguous().t()


def _row_major(x: torch.Tensor) -> torch.Tensor:
    return x if x.stride(-1) == 1 else x.contiguous()


def _amax_recipe(a, b, scale_a, scale_b) -> str | None:
    """The recipe of torch._scaled_mm's fp32 scales, from their shapes as eager reads them:
    tensorwise, rowwise or blockwise (1x128 for a, 128x128 for b); None for anything else."""
    if scale_a.dtype != FP32 or scale_b.dtype != FP32 or a.dim() != 2 or b.dim() != 2:
        return None
    (m, k), n = a.shape, b.shape[1]
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        return "tensorwise"
    if tuple(scale_a.shape) == (m, 1) and tuple(scale_b.shape) == (1, n):
        return "rowwise"
    k_blocks = math.ceil(k / BLOCK)
    if tuple(scale_a.shape) == (m, k_blocks) and tuple(scale_b.shape) == (
        k_blocks,
        math.ceil(n / BLOCK),
    ):
        return "blockwise"
    return None


# F.scaled_mm names its recipes (F.ScalingType's values, per operand): no guessing from shapes
V2_RECIPES = {
    (F.ScalingType.TensorWise.value, F.ScalingType.TensorWise.value): "tensorwise",
    (F.ScalingType.RowWise.value, F.ScalingType.RowWise.value): "rowwise",
    (F.ScalingType.BlockWise1x128.value, F.ScalingType.BlockWise128x128.value): "blockwise",
    (F.ScalingType.BlockWise1x128.value, F.ScalingType.BlockWise1x128.value): "blockwise_1x128",
}


def _float8(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum, scale_result=None):
    # torchao's scales quantize (x * scale -> fp8): the reciprocals of _scaled_mm's
    return addmm_float8_unwrapped(
        a, scale_a.reciprocal(), b, scale_b.reciprocal(), out_dtype, scale_result, bias,
        use_fast_accum,
    )  # fmt: skip


def _blockwise(recipe, a, b, scale_a, scale_b, bias, out_dtype):
    kb = math.ceil(a.shape[1] / BLOCK)
    a_s = _col_major(scale_a)
    if recipe == "blockwise":
        b_s = _col_major(scale_b[:kb])
        out = triton_fp8_gemm_1x128_128x128(
            _row_major(a), _col_major(b), a_s, b_s, BLOCK, out_dtype
        )
    else:
        b_s = scale_b.t().contiguous()  # F.scaled_mm's (N, K/128) as the kernel's (K/128, N)
        out = triton_fp8_gemm_1x128_128x1(_row_major(a), _col_major(b), a_s, b_s, BLOCK, out_dtype)
    return out if bias is None else (out + bias).to(out_dtype)


def _routes_blockwise(recipe, a, b, use_fast_accum) -> bool:
    return (
        recipe in ("blockwise", "blockwise_1x128")
        and a.is_cuda  # Triton kernels for CUDA
        and a.dtype == b.dtype == E4M3
        and a.shape[1] % BLOCK == 0
        and b.shape[1] % BLOCK == 0
        and not use_fast_accum
    )


def scaled_mm(
    a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False
):
    """torch._scaled_mm through torchao where it has a path (module docstring)."""
    recipe = _amax_recipe(a, b, scale_a, scale_b)
    out_dtype = out_dtype if out_dtype is not None else a.dtype
    if recipe in ("tensorwise", "rowwise"):
        return _float8(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum, scale_result)
    if scale_result is None and _routes_blockwise(recipe, a, b, use_fast_accum):
        return _blockwise(recipe, a, b, scale_a, scale_b, bias, out_dtype)
    return torch._scaled_mm(
        a, b, scale_a, scale_b, bias=bias, scale_result=scale_result, out_dtype=out_dtype,
        use_fast_accum=use_fast_accum,
    )  # fmt: skip


def _mx_preference(device: torch.device) -> KernelPreference:
    """torchao's MX GEMM on cuBLAS where it has one (sm100 and later), its emulation below."""
    if device.type == "cuda" and torch.cuda.get_device_capability(device) >= (10, 0):
        return KernelPreference.AUTO
    return KernelPreference.EMULATED


def _swizzled(scale: torch.Tensor, rows: int, k_blocks: int) -> torch.Tensor:
    """cuBLAS's 1-D block-scaling layout as torchao keeps it: (rows/128 * 32, blocks/4 * 16)."""
    return scale.reshape(math.ceil(rows / 128) * 32, math.ceil(k_blocks / 4) * 16)


def _mx(a, b, scale_a, scale_b, swizzled, bias, out_dtype):
    (m, k), n = a.shape, b.shape[1]
    preference = _mx_preference(a.device)

    def operand(data, scale, rows):
        if swizzled:
            scale = _swizzled(scale, rows, k // MX_BLOCK)
        return MXTensor.from_qdata_and_scales(
            data, scale, out_dtype, block_size=MX_BLOCK, kernel_preference=preference,
            is_swizzled_scales=swizzled,
        )  # fmt: skip

    # torchao's MX and NVFP4 tensors take contiguous data: a as (M, K), b as (N, K)
    a_mx = operand(a.contiguous(), scale_a, m)
    b_mx = operand(b.t().contiguous(), scale_b, n).t()  # seen as (K, N)
    return torch.mm(a_mx, b_mx) if bias is None else torch.addmm(bias, a_mx, b_mx)


def _nvfp4(a, b, scale_a, scale_b, globals_, swizzled, bias, out_dtype):
    (m, half_k), n = a.shape, b.shape[1]
    k = half_k * 2

    def operand(data, scale, rows, global_scale):
        if swizzled:
            scale = scale.reshape(math.ceil(rows / 128) * 32, math.ceil(k / 64) * 16)
        return NVFP4Tensor(
            data.view(torch.uint8), scale, NVFP4_BLOCK, out_dtype,
            per_tensor_scale=global_scale, is_swizzled_scales=swizzled,
        )  # fmt: skip

    a_nv = operand(a.contiguous(), scale_a, m, globals_[0])
    b_nv = operand(b.t().contiguous(), scale_b, n, globals_[1]).t()
    return torch.mm(a_nv, b_nv) if bias is None else torch.addmm(bias, a_nv, b_nv)


def scaled_mm_v2(
    a, b, scale_a, recipe_a, swizzle_a, scale_b, recipe_b, swizzle_b, bias=None,
    out_dtype=None, contraction_dim=(), use_fast_accum=False,
):  # fmt: skip
    """F.scaled_mm through torchao where it has a path (module docstring). torch.fx records
    F.scaled_mm as the op it calls, torch._scaled_mm_v2: scales, recipes and swizzles as lists
    (NVFP4's second scale is the per-tensor one), recipes and swizzles as integers."""
    sa, sb = scale_a[0], scale_b[0]
    global_a = scale_a[1] if len(scale_a) > 1 else None
    global_b = scale_b[1] if len(scale_b) > 1 else None
    out_dtype = out_dtype if out_dtype is not None else torch.bfloat16
    swizzled = bool(swizzle_a) and swizzle_a[0] == F.SwizzleType.SWIZZLE_32_4_4.value
    routed = not contraction_dim and a.dim() == 2 and b.dim() == 2
    high_precision_out = out_dtype in (torch.bfloat16, torch.float16, FP32)
    if routed and high_precision_out and sa.dtype == E8M0 and a.dtype in (E4M3, torch.float8_e5m2):
        if a.dtype == b.dtype and a.shape[1] % MX_BLOCK == 0:
            return _mx(a, b, sa, sb, swizzled, bias, out_dtype)
    elif routed and high_precision_out and a.dtype == b.dtype == FP4 and sa.dtype == E4M3:
        return _nvfp4(a, b, sa, sb, (global_a, global_b), swizzled, bias, out_dtype)
    elif routed and len(recipe_a) == len(recipe_b) == 1 and sa.dtype == sb.dtype == FP32:
        recipe = V2_RECIPES.get((int(recipe_a[0]), int(recipe_b[0])))
        if recipe in ("tensorwise", "rowwise"):
            return _float8(a, b, sa, sb, bias, out_dtype, use_fast_accum)
        if _routes_blockwise(recipe, a, b, use_fast_accum):
            return _blockwise(recipe, a, b, sa, sb, bias, out_dtype)
    return torch._scaled_mm_v2(
        a, b, scale_a, recipe_a, swizzle_a, scale_b, recipe_b, swizzle_b, bias, out_dtype,
        contraction_dim, use_fast_accum,
    )  # fmt: skip


def float8_linear(x, weight, bias=None):
    """F.linear through torchao's Float8Linear (tensorwise dynamic scaling) where it applies."""
    n, k = weight.shape
    applies = (
        x.is_cuda and x.dtype == weight.dtype and x.dtype in (torch.bfloat16, FP32)
        and x.dim() in (2, 3) and weight.dim() == 2 and k % 16 == 0 and n % 16 == 0
        and x.shape[-1] == k and (bias is None or bias.dtype == x.dtype)
    )  # fmt: skip
    if not applies:
        return F.linear(x, weight, bias)
    module = torch.nn.Linear(k, n, bias=bias is not None, device="meta", dtype=x.dtype)
    module.weight = torch.nn.Parameter(weight, requires_grad=weight.requires_grad)
    if bias is not None:
        module.bias = torch.nn.Parameter(bias, requires_grad=bias.requires_grad)
    return Float8Linear.from_float(module, config=Float8LinearConfig())(x)


SCALED_SWAPS = {torch._scaled_mm: scaled_mm, torch._scaled_mm_v2: scaled_mm_v2}
LINEAR_SWAPS = {**SCALED_SWAPS, F.linear: float8_linear}


class Compiled:
    def __init__(self, fn, module: torch.fx.GraphModule | None):
        self.fn = module if module is not None else fn
        self.code = module.code if module is not None else ""

    def __call__(self, *inputs):
        return self.fn(*inputs)

    def artifacts(self) -> dict[str, str]:
        return {"python": self.code} if self.code else {}

    def compiles(self) -> int:
        return 1  # one trace serves every shape


class TorchaoGemm:
    name = "torchao-gemm"
    swaps = SCALED_SWAPS
    compile_timeout_s = 120.0  # torchao's blockwise Triton kernels autotune at a new shape

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        try:
            module = torch.fx.symbolic_trace(fn)
        except Exception:  # not traceable: the program runs as written (PyTorch's kernels)
            return Compiled(fn, None)
        swapped = [
            n for n in module.graph.nodes if n.op == "call_function" and n.target in self.swaps
        ]
        if not swapped:  # nothing of torchao's applies: the program as written
            return Compiled(fn, None)
        for node in swapped:
            node.target = self.swaps[node.target]
        module.recompile()
        return Compiled(fn, module)


class TorchaoFloat8Linear(TorchaoGemm):
    name = "torchao-float8-linear"
    swaps = LINEAR_SWAPS
