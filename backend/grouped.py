"""Grouped GEMMs: `torch._grouped_mm` (`F.grouped_mm`) and `torch._scaled_grouped_mm` (rowwise fp8).

A grouped GEMM is G independent GEMMs in one call. Which dimension is jagged follows from the
operands' ranks (as in eager):

| a | b | jagged | group g computes | output |
|---|---|---|---|---|
| 2-D (M_total, K) | 3-D (G, K, N) | "m": rows of a | a[rows] @ b[g] | (M_total, N) |
| 3-D (G, M, K) | 2-D (K, N_total) | "n": columns of b | a[g] @ b[:, cols] | (M, N_total) |
| 2-D (M, K_total) | 2-D (K_total, N) | "k": the shared K | a[:, ks] @ b[ks, :] | (G, M, N) |
| 3-D (G, M, K) | 3-D (G, K, N) | "none" | a[g] @ b[g] | (G, M, N) |

`offs` (int32, on the device) holds each group's end (group g spans offs[g-1]..offs[g], the
first from 0); groups may be empty, and a "k" group of size 0 writes zeros. The kernel reads the
offsets itself, so a call never waits for the device. The output is allocated as eager's meta
function lays it out (on a CUDA build the last dim's stride is padded to 16 bytes), so strides
match eager's. Rowwise fp8 scales: a's per row and b's per column, per group (1-D for a 2-D
operand, (G, rows) for a 3-D one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from gemmconf_reference import configs
from gemmconf_reference.launcher import (
    INT32_LIMIT,
    BackendOptions,
    KernelCall,
    LaunchPlan,
    Runtime,
    _max_offset,
)
from gemmconf_reference.target import Target

FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


@dataclass(frozen=True)
class GroupedProblem:
    """The facts of one grouped call that decide the kernel variant."""

    dtype: torch.dtype
    groups: int
    m: int  # rows of a group's output (all rows of a 2-D a when jagged in M)
    n: int
    k: int
    grouped: str  # "m", "n", "k" or "none"
    scaling: str  # "none" or "rowwise"
    fast_accum: bool
    index_64: bool

    @property
    def sizes(self) -> str:
        return f"G={self.groups} M={self.m} N={self.n} K={self.k}"

    def plan(self, target: Target, options: BackendOptions) -> LaunchPlan:
        del options  # no options apply: fp8 without fast accumulation promotes every K tile
        config = configs.lookup(
            target.arch_class, self.dtype, configs.size_class(1, self.m, self.n)
        )
        fp8 = self.dtype in FP8
        if target.interpreter and (self.dtype == torch.bfloat16 or fp8):
            upcast = "fp32"  # the interpreter's bf16 dot is wrong (triton#11584)
        elif fp8 and not target.has_fp8_mma:
            upcast = "fp16"
        else:
            upcast = "none"
        flags: dict[str, Any] = {
            "BLOCK_M": config.block_m,
            "BLOCK_N": config.block_n,
            "BLOCK_K": config.block_k,
            "GROUPED": self.grouped,
            "SCALING": self.scaling,
            "DOT_UPCAST": upcast,
            "INPUT_PRECISION": "ieee",
            "FAST_ACCUM": self.fast_accum,
            "INDEX_64": self.index_64,
            "BF16_RNE": target.interpreter,
            "NUM_PROGRAMS": target.num_sms,
        }
        return LaunchPlan("grouped_gemm_kernel", config, tuple(flags.items()), (target.num_sms,))


def output_layout(
    a: torch.Tensor, b: torch.Tensor, groups: int, dtype: torch.dtype
) -> tuple[list[int], list[int]]:
    """(sizes, strides) of eager's grouped output (`_create_grouped_mm_output_tensor`)."""
    if a.dim() == 2 and b.dim() == 2:
        sizes = [groups, a.shape[0], b.shape[1]]
    elif a.dim() == 2:
        sizes = [a.shape[0], b.shape[-1]]
    elif b.dim() == 2:
        sizes = [a.shape[1], b.shape[1]]
    else:
        sizes = [a.shape[0], a.shape[1], b.shape[-1]]
    last = sizes[-1]
    if torch.version.cuda:  # CUDA builds pad the row stride to 16 bytes
        align = max(1, 16 // dtype.itemsize)
        last = -(-last // align) * align
    strides = [sizes[1] * last, last, 1] if len(sizes) == 3 else [last, 1]
    return sizes, strides


class GroupedCall(KernelCall):
    """Replaces one `_grouped_mm` or `_scaled_grouped_mm` node."""

    def __init__(
        self,
        name: str,
        runtime: Runtime,
        *,
        op: str,
        out_dtype: torch.dtype,
        use_fast_accum: bool,
        node: str,
    ) -> None:
        super().__init__(name, runtime)
        self.op = op
        self.out_dtype = out_dtype
        self.use_fast_accum = use_fast_accum
        self.node = node

    def what(self) -> list[str]:
        return [f"{self.name} <- aten._{self.op} {self.node}: -> {_short(self.out_dtype)}"]

    def __call__(
        self,
        a: torch.Tensor,
        b: torch.Tensor,
        offs: torch.Tensor | None,
        scale_a: torch.Tensor | None = None,
        scale_b: torch.Tensor | None = None,
    ) -> torch.Tensor:
        self.calls += 1
        a2, b2 = a.dim() == 2, b.dim() == 2
        grouped = {(True, True): "k", (True, False): "m", (False, True): "n"}.get((a2, b2), "none")
        groups = offs.shape[0] if offs is not None else a.shape[0]
        sizes, strides = output_layout(a, b, groups, self.out_dtype)
        out = torch.empty_strided(sizes, strides, dtype=self.out_dtype, device=a.device)
        if out.numel() == 0 or groups == 0:
            return out
        m = a.shape[-2]
        n = b.shape[-1]
        k = a.shape[-1]
        scaled = scale_a is not None and scale_b is not None
        out3 = out if out.dim() == 3 else out.unsqueeze(0)
        tensors = [a, b, out]
        problem = GroupedProblem(
            dtype=a.dtype,
            groups=groups,
            m=m,
            n=n,
            k=k,
            grouped=grouped,
            scaling="rowwise" if scaled else "none",
            fast_accum=not scaled or self.use_fast_accum,
            index_64=any(_max_offset(t) >= INT32_LIMIT for t in tensors),
        )
        args: dict[str, Any] = {
            "a_ptr": a,
            "b_ptr": b,
            "c_ptr": out3,
            "offs_ptr": offs,
            "a_scale_ptr": scale_a,
            "b_scale_ptr": scale_b,
            "G": groups,
            "M": m,
            "N": n,
            "K": k,
            "stride_ag": 0 if a2 else a.stride(0),
            "stride_am": a.stride(-2),
            "stride_ak": a.stride(-1),
            "stride_bg": 0 if b2 else b.stride(0),
            "stride_bk": b.stride(-2),
            "stride_bn": b.stride(-1),
            "stride_cg": out3.stride(0) if grouped in ("k", "none") else 0,
            "stride_cm": out3.stride(1),
            "stride_cn": out3.stride(2),
            **_scale_strides(scale_a, scale_b, grouped, m, n),
        }
        plan = problem.plan(self.runtime.target, self.runtime.options)
        self._launch(plan, args, self._record(problem, plan, args))
        return out


def _scale_strides(
    scale_a: torch.Tensor | None, scale_b: torch.Tensor | None, grouped: str, m: int, n: int
) -> dict[str, int]:
    """Per-group and per-row steps of rowwise scales: a 3-D operand's are (G, rows); a 2-D
    operand's are 1-D, indexed by the jagged offset ("m", "n") or by group (2-D x 2-D: M or N
    scales per group, one after another)."""
    if scale_a is None or scale_b is None:
        return {"stride_sag": 0, "stride_sam": 0, "stride_sbg": 0, "stride_sbn": 0}
    sa_row, sb_row = scale_a.stride(-1), scale_b.stride(-1)
    sa_group = scale_a.stride(0) if scale_a.dim() == 2 else 0
    sb_group = scale_b.stride(0) if scale_b.dim() == 2 else 0
    if grouped == "k":
        sa_group, sb_group = m * sa_row, n * sb_row
    return {
        "stride_sag": sa_group,
        "stride_sam": sa_row,
        "stride_sbg": sb_group,
        "stride_sbn": sb_row,
    }


def _short(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
