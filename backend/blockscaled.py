"""`F.scaled_mm` (aten `_scaled_mm_v2`): every ScalingType pair eager accepts, by upcasting.

Each operand's scale is read as (rows, K blocks) of `ROWS_PER_SCALE` x `K_PER_SCALE` elements,
with a (row, K block) stride pair, or in cuBLAS's swizzled block-scaling layout
(`SwizzleType.SWIZZLE_32_4_4`, 1-D):

| recipe (ScalingType) | scale dtype | one scale covers | how its tensor is laid out |
|---|---|---|---|
| TensorWise | fp32 | the tensor | one element |
| RowWise | fp32 | a row of a / a column of b | a (M, 1), b (1, N) |
| BlockWise1x128 | fp32 | 1 x 128 along K | (rows, K/128), any strides |
| BlockWise128x128 | fp32 | 128 x 128 | (K/128 padded to 4, rows/128), any strides |
| BlockWise1x32 (MX) | e8m0 | 1 x 32 along K | swizzled (or (rows, K/32) strides) |
| BlockWise1x16 (NVFP4) | e4m3 | 1 x 16 along K | swizzled (or (rows, K/16) strides) |

NVFP4 adds a second level per operand: a TensorWise fp32 scale (the global scale).
Operands are fp8 (e4m3fn / e5m2) or fp4 (`float4_e2m1fn_x2`, two values per byte along K).
fp32 scales multiply each K tile's product (so BLOCK_K divides the block); MX and NVFP4 scales
multiply the operand tiles before a bf16 dot, which is exact for those products (module
`kernels`, `blockscaled_gemm_kernel`). Eager's kernels for MX and NVFP4 exist on sm100 only, and
on the CPU for TensorWise and RowWise only: this backend computes every recipe everywhere, and
raises only where eager rejects the *inputs* (a K mismatch, which the meta function lets through).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from gemmconf_reference import configs
from gemmconf_reference.launcher import BackendOptions, KernelCall, LaunchPlan, Runtime
from gemmconf_reference.target import Target

TENSORWISE, ROWWISE, BLOCK_1X16, BLOCK_1X32, BLOCK_1X128, BLOCK_128X128 = range(6)
NO_SWIZZLE, SWIZZLE_32_4_4 = 0, 1
FP4 = getattr(torch, "float4_e2m1fn_x2", None)
E8M0 = getattr(torch, "float8_e8m0fnu", None)
FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
# recipe pairs eager's meta function accepts (one recipe per operand, plus NVFP4's two levels)
PAIRS = {
    ((TENSORWISE,), (TENSORWISE,)): "tensorwise",
    ((ROWWISE,), (ROWWISE,)): "rowwise",
    ((BLOCK_1X128,), (BLOCK_1X128,)): "1x128_1x128",
    ((BLOCK_1X128,), (BLOCK_128X128,)): "1x128_128x128",
    ((BLOCK_128X128,), (BLOCK_1X128,)): "128x128_1x128",
    ((BLOCK_1X32,), (BLOCK_1X32,)): "mx",
    ((BLOCK_1X16,), (BLOCK_1X16,)): "nvfp4_single",
    ((BLOCK_1X16, TENSORWISE), (BLOCK_1X16, TENSORWISE)): "nvfp4",
}
SCALE_FORMATS = {"mx": "e8m0", "nvfp4": "e4m3", "nvfp4_single": "e4m3"}
K_PER_SCALE = {BLOCK_1X16: 16, BLOCK_1X32: 32, BLOCK_1X128: 128, BLOCK_128X128: 128}


def recipe_of(recipe_a: list[int], recipe_b: list[int]) -> str | None:
    """The recipe a `_scaled_mm_v2` call's ScalingType lists name; None for a pair eager rejects."""
    return PAIRS.get((tuple(recipe_a), tuple(recipe_b)))


@dataclass(frozen=True)
class BlockScaledProblem:
    """The facts of one block-scaled call that decide the kernel variant."""

    dtype: torch.dtype  # a's element type (fp4 operands are passed as bytes)
    m: int
    n: int
    k: int  # logical K (two fp4 values per byte)
    recipe: str
    a_fp4: bool
    b_fp4: bool
    a_rows_per_scale: int
    b_rows_per_scale: int
    k_per_scale: int  # 0: the whole K (tensorwise, rowwise)
    swizzled: bool
    has_bias: bool

    @property
    def sizes(self) -> str:
        return f"M={self.m} N={self.n} K={self.k}"

    @property
    def scale_fmt(self) -> str:
        return SCALE_FORMATS.get(self.recipe, "fp32")

    def plan(self, target: Target, options: BackendOptions) -> LaunchPlan:
        del options  # no options apply: fp32 accumulation always
        size = configs.size_class(1, self.m, self.n)
        config = configs.lookup(target.arch_class, torch.float8_e4m3fn, size)
        after_dot = self.scale_fmt == "fp32"
        block_k = config.block_k
        if self.k_per_scale and after_dot:
            block_k = min(block_k, self.k_per_scale)  # a K tile inside one scale block
        flags: dict[str, Any] = {
            "BLOCK_M": config.block_m,
            "BLOCK_N": config.block_n,
            "BLOCK_K": block_k,
            "A_FP4": self.a_fp4,
            "B_FP4": self.b_fp4,
            "SCALE_FMT": self.scale_fmt,
            "A_ROWS_PER_SCALE": self.a_rows_per_scale,
            "B_ROWS_PER_SCALE": self.b_rows_per_scale,
            "K_PER_SCALE": self.k_per_scale or block_k,
            "SWIZZLED": self.swizzled,
            "SCALE_AFTER_DOT": after_dot,
            "DOT_DTYPE": "fp32" if target.interpreter else "bf16",
            "GLOBAL_SCALE": self.recipe == "nvfp4",
            "HAS_BIAS": self.has_bias,
            "BF16_RNE": target.interpreter,
        }
        if config.block_k != block_k:
            config = configs.TileConfig(
                config.block_m, config.block_n, block_k, config.num_warps, config.num_stages
            )
        grid = (-(-self.m // config.block_m), -(-self.n // config.block_n))
        return LaunchPlan("blockscaled_gemm_kernel", config, tuple(flags.items()), grid)


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    """fp4 pairs and e8m0 scales go to the kernel as uint8 (Triton has no such pointer types)."""
    return t.view(torch.uint8) if t.dtype in (FP4, E8M0) else t


def _scale_strides(recipe: int, scale: torch.Tensor, operand: str) -> tuple[int, int, int]:
    """(rows per scale, stride per row block, stride per K block) of one operand's scale."""
    if recipe == TENSORWISE:
        return 1, 0, 0
    if recipe == ROWWISE:  # a (M, 1), b (1, N)
        return 1, scale.stride(0 if operand == "a" else 1), 0
    if recipe == BLOCK_128X128:  # (K blocks, row blocks)
        return 128, scale.stride(1), scale.stride(0)
    if scale.dim() == 2:  # (rows, K blocks): 1x128, and unswizzled MX / NVFP4
        return 1, scale.stride(0), scale.stride(1)
    return 1, 0, 0  # swizzled: the kernel computes the addresses


class BlockScaledCall(KernelCall):
    """Replaces one `_scaled_mm_v2` node."""

    def __init__(
        self,
        name: str,
        runtime: Runtime,
        *,
        recipe_a: list[int],
        recipe_b: list[int],
        swizzle_a: list[int],
        swizzle_b: list[int],
        out_dtype: torch.dtype,
        node: str,
    ) -> None:
        super().__init__(name, runtime)
        recipe = recipe_of(recipe_a, recipe_b)
        if recipe is None:
            raise ValueError(f"no kernel for ScalingType pair {recipe_a}, {recipe_b}")
        self.recipe = recipe
        self.recipe_a, self.recipe_b = recipe_a[0], recipe_b[0]
        self.swizzled = SWIZZLE_32_4_4 in (*swizzle_a[:1], *swizzle_b[:1])
        self.out_dtype = out_dtype
        self.node = node

    def what(self) -> list[str]:
        return [
            f"{self.name} <- aten._scaled_mm_v2 {self.node}: {self.recipe} scaling"
            f"{' (swizzled scales)' if self.swizzled else ''} -> {_short(self.out_dtype)}"
        ]

    def __call__(
        self,
        a: torch.Tensor,
        b: torch.Tensor,
        scales_a: list[torch.Tensor],
        scales_b: list[torch.Tensor],
        bias: torch.Tensor | None,
    ) -> torch.Tensor:
        self.calls += 1
        a_fp4, b_fp4 = a.dtype == FP4, b.dtype == FP4
        k = a.shape[1] * (2 if a_fp4 else 1)
        k_b = b.shape[0] * (2 if b_fp4 else 1)
        m, n = a.shape[0], b.shape[1]
        if k != k_b:  # the meta function never compares K: eager's own error
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k_b}x{n})")
        out = torch.empty((m, n), dtype=self.out_dtype, device=a.device)
        if out.numel() == 0:
            return out
        if k == 0:
            out.zero_()
            if bias is not None:
                out += bias.to(self.out_dtype)
            return out
        rows_a, sar, sak = _scale_strides(self.recipe_a, scales_a[0], "a")
        rows_b, sbr, sbk = _scale_strides(self.recipe_b, scales_b[0], "b")
        problem = BlockScaledProblem(
            dtype=a.dtype,
            m=m,
            n=n,
            k=k,
            recipe=self.recipe,
            a_fp4=a_fp4,
            b_fp4=b_fp4,
            a_rows_per_scale=rows_a,
            b_rows_per_scale=rows_b,
            k_per_scale=K_PER_SCALE.get(self.recipe_a, 0),
            swizzled=self.swizzled,
            has_bias=bias is not None,
        )
        args: dict[str, Any] = {
            "a_ptr": _as_bytes(a),
            "b_ptr": _as_bytes(b),
            "c_ptr": out,
            "a_scale_ptr": _as_bytes(scales_a[0]),
            "b_scale_ptr": _as_bytes(scales_b[0]),
            "a_global_ptr": scales_a[1] if len(scales_a) > 1 else None,
            "b_global_ptr": scales_b[1] if len(scales_b) > 1 else None,
            "bias_ptr": bias,
            "M": m,
            "N": n,
            "K": k,
            "stride_am": a.stride(0),
            "stride_ak": a.stride(1),
            "stride_bn": b.stride(1),
            "stride_bk": b.stride(0),
            "stride_cm": out.stride(0),
            "stride_cn": out.stride(1),
            "stride_sar": sar,
            "stride_sak": sak,
            "stride_sbr": sbr,
            "stride_sbk": sbk,
            "stride_bias": bias.stride(-1) if bias is not None else 0,
        }
        plan = problem.plan(self.runtime.target, self.runtime.options)
        self._launch(plan, args, self._record(problem, plan, args))
        return out


def _short(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
