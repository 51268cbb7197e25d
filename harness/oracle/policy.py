"""The oracle's tolerance policy: one row (`Policy`) per kind of output and accumulation, in
`POLICIES`, with the measurements behind each number, and `policy_for`, which picks the row an
output is judged by. What the numbers mean is gemmconf.oracle's docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from gemmconf.gemm.dtypes import DTYPES, FLOAT8, scaled


@dataclass(frozen=True)
class Policy:
    """How an output is judged; one row of `POLICIES`."""

    name: str
    max_ratio: float  # backend error may be at most this multiple of max(eager error, floor)
    floor_eps: float  # epsilon of the accumulation a correct backend uses; scales the floor
    exact: bool  # values must equal eager's (integer outputs)
    rtol: float = 0.0  # used only without an fp64 reference (assert_close's value for the dtype)
    trust_eager: bool = True  # False: eager's own error does not widen the tolerance (fp64 alone)
    # Relative error each product may carry from rounding its inputs (TF32), bounded per element
    # by input_rounding * rounding_i, rounding being |alpha| * (|A| @ |B|) (judge's `rounding`).
    input_rounding: float = 0.0
    # Whether the floor grows with sqrt(K): an accumulation's rounding does; an input rounding's
    # relative error (TF32) is the same at every K (see the measurements above POLICIES).
    floor_grows_with_k: bool = True

    def floor(self, k: int, rms: float) -> float:
        """What a correct backend may be off by even where eager is exact: `floor_eps` times
        RMS(ref), times sqrt(K) where the accumulation sets it."""
        growth = math.sqrt(max(k, 1)) if self.floor_grows_with_k else 1.0
        return self.floor_eps * growth * rms


_FP32_ACC = 2.0**-22  # two fp32 ulps per sqrt(K): see the measurements above POLICIES


# Why these numbers (inputs randn/K^0.25, ratios against max(eager error, floor)):
# - max_ratio 3.0: docs/measurements.md measured fp16/bf16 accumulation in the input dtype
#   (32-wide chunks) at 4.6-8.2x eager's error for K=1024 and 9.1-16.7x for K=4096, so 3.0
#   catches that bug from
#   K=1024 on; over 40 seeds (64x64 outputs) its smallest ratio was 3.13 at K=1024 (bf16), 4.7
#   at K=2048 and 7.1 at K=4096. Correct backends measure about 1.0 on CPU (other summation
#   orders, split-K, K=16..65536) and 0.88-1.04 on an H200 (Triton and cuBLAS fp32, fp16, bf16,
#   fp8; outputs up to 4096x4096, K up to 65536).
# - fp32 accumulation, floor_eps 2^-22: sequential FMA accumulation (Triton `ieee` tl.dot, cuBLAS
#   SGEMM) reached a max error of 2^-22.1 * sqrt(K) * RMS(ref) over 4M outputs on an H200; eager on
#   the CPU (MKL) is ~5x more accurate, so the floor decides and must cover that order (with
#   2^-23 it measured 1.95).
# - fp32 computed as TF32 has ~2,300x eager's error (docs/measurements.md), 70-1,600x with this
#   floor for K=16..16384, so fp32 stays tight and "tf32" is its own row (floor: two input
#   roundings of
#   2^-11 per product; TF32 results measure 0.02-0.4 under it). Tensor cores fed fp32 *truncate*
#   to TF32 (Triton's tl.dot, so inductor's templates), twice cuBLAS's round-to-nearest error,
#   and eager may skip TF32 altogether (at K=1 on an H200 its error stayed under the floor, as an
#   fp32 result's would; the same inputs with CPU fp32 as eager gave the GPU's 4.8x). At small K the
#   largest product dwarfs RMS(ref), so the floor alone failed a correct truncating backend
#   (inductor's TRITON addmm at K=1: 4.8x; over 30 seeds up to 3.2x even with 2^-9): each
#   element may also be off by its own input-rounding bound, (2^-10 + 2^-10 + 2^-20) * |alpha| *
#   (|A|@|B|)_i (`input_rounding`). At large K the floor is larger than that bound, so it loosens
#   nothing there. The floor does not grow with sqrt(K): an input rounding's relative error is
#   the same at every K, and a floor of 2^-10 * sqrt(K) * RMS(ref) (until 2026-12-02) was 64x
#   looser at K = 65536 than at K = 16, so a torchao trial's int8 products (7 bits) passed tf32
#   items from K = 1024 on (err_ratio 0.15 at K = 65536). Emulated on the CPU (64x64 outputs,
#   randn/K^0.25 inputs, K = 16..65536): truncation to TF32 errs by 2.7-3.8 * 2^-10 * RMS(ref),
#   round-to-nearest 1.0-1.8, int8 rows and columns 31-57; the floor 2^-8 * RMS(ref) (the old one
#   at K = 16) keeps truncation at 0.7-1.0 of it and fails int8 from 10x its bar.
# - fp8 inputs with use_fast_accum=False accumulate in fp32 (cuBLAS, and a Triton kernel adding
#   each K tile into an fp32 accumulator: 1.00-1.04). With use_fast_accum=True, Hopper
#   accumulates in the tensor core's reduced precision: cuBLAS and Triton measured
#   2^-11.1 * sqrt(K) * RMS(ref), 1.3-5.2x exact eager for K=1024-32768; "fp8_fast_accum" allows
#   2^-10 (they measure 0.43-0.71). A backend that ignores use_fast_accum=False fails from
#   K~16384 on (4.1-5.2x).
POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("fp64", max_ratio=3.0, floor_eps=2.0**-51, exact=False, rtol=1e-7),
        Policy("fp32", max_ratio=3.0, floor_eps=_FP32_ACC, exact=False, rtol=1.3e-6),
        Policy(
            "tf32",
            max_ratio=3.0,
            floor_eps=2.0**-8,
            exact=False,
            rtol=1e-3,
            input_rounding=(1 + 2.0**-10) ** 2 - 1,
            floor_grows_with_k=False,
        ),
        Policy("fp16", max_ratio=3.0, floor_eps=_FP32_ACC, exact=False, rtol=1e-3),
        Policy("bf16", max_ratio=3.0, floor_eps=_FP32_ACC, exact=False, rtol=1.6e-2),
        Policy("fp8", max_ratio=3.0, floor_eps=_FP32_ACC, exact=False, rtol=1.6e-2),
        Policy("fp8_fast_accum", max_ratio=3.0, floor_eps=2.0**-10, exact=False, rtol=1.6e-2),
        Policy("int", max_ratio=1.0, floor_eps=0.0, exact=True),
        Policy("exact", max_ratio=1.0, floor_eps=0.0, exact=True),
    )
}


# The row an output of a (non-8-bit) float dtype is judged by; complex outputs as their parts.
_ROW_BY_OUTPUT = {
    torch.float64: "fp64",
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.complex128: "fp64",
    torch.complex64: "fp32",
}


def without_eager(policy: Policy) -> Policy:
    """`policy` for `numeric: fp64`: eager's own error does not widen the tolerance, so the floor
    must cover every accumulation a correct backend may use. For fp8 inputs that is Hopper's
    tensor-core accumulation, which even without use_fast_accum keeps fewer than fp32's bits
    inside a wgmma (an H200, 2026-11-22: eager and the reference backend both 2^-13 * sqrt(K) *
    RMS(ref) from fp64 on blockwise GEMMs, 50-77x the fp32 floor): the fp8_fast_accum floor."""
    floor_eps = policy.floor_eps
    if policy.name == "fp8":
        floor_eps = max(floor_eps, POLICIES["fp8_fast_accum"].floor_eps)
    return replace(policy, trust_eager=False, floor_eps=floor_eps)


def policy_for(
    out_dtype: torch.dtype, *, compute: str | None = None, fast_accum: bool = False
) -> Policy:
    """The policy for an output of `out_dtype` from a GEMM whose inputs are `compute`.

    `compute` names the scenario's input dtype ("fp32", "tf32", "fp16", "bf16", "e4m3fn", "e5m2",
    "int8"); it matters for TF32 (an fp32 output judged with the TF32 row) and fp8 inputs, where
    `fast_accum` (`_scaled_mm(..., use_fast_accum=True)`) selects the reduced-precision row.
    """
    if compute is not None and compute not in DTYPES:
        raise ValueError(f"unknown compute {compute!r}; known: {', '.join(DTYPES)}")
    if out_dtype == torch.bool:
        return POLICIES["exact"]
    if not (out_dtype.is_floating_point or out_dtype.is_complex):
        return POLICIES["int"]
    if compute is not None and scaled(compute) and fast_accum:
        return POLICIES["fp8_fast_accum"]
    if out_dtype in FLOAT8 or (compute is not None and scaled(compute)):
        return POLICIES["fp8"]
    if compute == "tf32" and out_dtype in (torch.float32, torch.complex64):
        return POLICIES["tf32"]
    try:
        return POLICIES[_ROW_BY_OUTPUT[out_dtype]]
    except KeyError:
        raise ValueError(f"no tolerance policy for output dtype {out_dtype}") from None


def item_policy(
    out_dtype: torch.dtype,
    *,
    compute: str,
    fast_accum: bool = False,
    exact: bool = False,
    max_ratio: float | None = None,
    fp64_alone: bool = False,
) -> Policy:
    """The row a scenario's result is judged by: `exact` (`checks: {numeric: exact}`) the exact
    row, else `policy_for`'s, with the scenario's own `max_ratio` where it sets one, and without
    eager (`without_eager`) where the result is judged against fp64 alone."""
    if exact:
        return POLICIES["exact"]
    policy = policy_for(out_dtype, compute=compute, fast_accum=fast_accum)
    if max_ratio is not None:
        policy = replace(policy, max_ratio=max_ratio)
    return without_eager(policy) if fp64_alone else policy
