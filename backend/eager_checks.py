"""Inputs eager rejects only inside its kernels, which the meta functions let through.

Dynamo traces with fake tensors, so every check in an op's meta function raises before the
backend sees the graph. A few checks live only in eager's CUDA implementations (cuBLAS
constraints), one in the CPU kernel (no blockwise scaling) and one in both (`_scaled_mm`'s meta
never compares K); without mirroring them the compiled function would return a result where
eager raises. The predicates below say when eager rejects a call (CUDA rules as observed with
torch 2.11 on an H200); the call plan then calls the eager op itself, so the exception class and
message are eager's own, whatever the torch version (they differ: ValueError in 2.13 where 2.11
raises RuntimeError for some `_scaled_mm` configurations). If eager accepts after all, the
backend's kernel runs as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def int_mm_rejected(m: int, k: int, n: int) -> bool:
    """cuBLASLt int8 GEMM limits: M > 16, K and N positive multiples of 8."""
    return m <= 16 or k <= 0 or k % 8 != 0 or n <= 0 or n % 8 != 0


def _outer_dim_major(scale: torch.Tensor) -> bool:
    return scale.shape[0] <= 1 or scale.stride(0) == 1


def scaled_mm_rejected(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    bias: torch.Tensor | None,
    out_dtype: torch.dtype,
    scaling: str,
    use_fast_accum: bool,
    capability: int,
    *,
    blockwise_on_cpu: bool = False,
) -> bool:
    """Whether eager's `_scaled_mm` on these tensors' device raises (meta lets these through)."""
    if a.shape[1] != b.shape[0]:
        return True  # the meta function never compares K
    if not a.is_cuda:
        # the CPU kernel has tensorwise and rowwise scaling only
        return scaling == "blockwise" and not blockwise_on_cpu
    if capability < 89:
        return True  # no fp8 tensor cores
    if bias is not None and (out_dtype == torch.float32 or bias.dtype != out_dtype):
        return True  # "Bias is not supported when out_dtype is set to Float32", "Bias must be .."
    if a.dtype == b.dtype == torch.float8_e5m2:
        return True  # "Multiplication of two Float8_e5m2 matrices is not supported"
    if scaling == "blockwise":
        # "doesn't support fast accum with 128x128 blockwise scaling"; both scales must be
        # outer-dim-major; no empty dimension ("Invalid scaling configuration")
        empty = 0 in (a.shape[0], a.shape[1], b.shape[1])
        layout_ok = _outer_dim_major(scale_a) and _outer_dim_major(scale_b)
        return use_fast_accum or empty or not layout_ok
    return False


def raise_like_eager(eager_call: Callable[[], Any]) -> None:
    """Runs the eager op so that it raises its own error; returns if eager accepts."""
    eager_call()
