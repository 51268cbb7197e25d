"""Number conversions and rounding the kernel families share, and their masked output store.

The interpreter converts differently from GPUs and eager in a few places (fp32 -> bf16 and fp8
truncate; fp8 NaN/Inf become finite), so these are written out on the bits; `BF16_RNE`, set in
the interpreter, picks them where a GPU would round by itself.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def cdiv(a, b):
    return (a + b - 1) // b


@triton.jit
def tanh(x):
    # exp-based tanh; a short odd polynomial near 0 avoids the 1 - exp(-2|x|) cancellation
    ax = tl.abs(x)
    t = tl.exp(-2.0 * ax)
    big = (1.0 - t) / (1.0 + t)
    x2 = x * x
    small = ax * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0))))
    r = tl.where(ax < 0.0625, small, big)
    return tl.where(x < 0, -r, r)


@triton.jit
def sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def round_to_bf16(x):
    """fp32 -> the nearest bf16 value, ties to even, kept in fp32 (done on the bits)."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = bits + (((bits >> 16) & 1) + 0x7FFF)
    return ((bits >> 16) << 16).to(tl.float32, bitcast=True)


@triton.jit
def round_to_tf32(x):
    """fp32 -> the nearest TF32 value, ties away from zero, as cuBLAS rounds (cvt.rna.tf32)."""
    bits = x.to(tl.uint32, bitcast=True)
    return (((bits + 0x1000) >> 13) << 13).to(tl.float32, bitcast=True)


@triton.jit
def fp8_to_fp32(x):
    """fp8 -> fp32 keeping NaN (and e5m2's Inf), which the interpreter's conversion makes finite."""
    bits = x.to(tl.uint8, bitcast=True).to(tl.int32)
    magnitude = bits & 0x7F
    y = x.to(tl.float32)
    nan = tl.full(y.shape, 0x7FC00000, tl.int32).to(tl.float32, bitcast=True)
    inf = tl.full(y.shape, 0x7F800000, tl.int32).to(tl.float32, bitcast=True)
    if x.dtype == tl.float8e4nv:
        y = tl.where(magnitude == 0x7F, nan, y)
    else:
        y = tl.where(magnitude > 0x7C, nan, y)
        y = tl.where(magnitude == 0x7C, tl.where(bits > 0x7F, -inf, inf), y)
    return y


@triton.jit
def round_to_fp8(x, MANTISSA: tl.constexpr, MIN_EXP: tl.constexpr, MAX: tl.constexpr):
    """fp32 -> the nearest fp8 value (ties to even), kept in fp32, as torch's `.to()` rounds:
    e4m3fn saturates at +-448 (even infinities), e5m2 overflows to +-inf. The interpreter's own
    conversion truncates, so it gets values that are already representable."""
    bits = x.to(tl.uint32, bitcast=True)
    exponent = ((bits >> 23) & 0xFF).to(tl.int32) - 127
    ulp_exp = tl.maximum(exponent, MIN_EXP) - MANTISSA
    ulp = ((ulp_exp + 127) << 23).to(tl.float32, bitcast=True)
    magic = 12582912.0  # 1.5 * 2**23: adding and subtracting it rounds to an integer, ties even
    y = ((x / ulp + magic) - magic) * ulp
    y = tl.where(x != x, x, y)  # NaN stays NaN
    if MANTISSA == 3:
        y = tl.where(y > MAX, MAX, tl.where(y < -MAX, -MAX, y))
    else:
        inf = tl.full(y.shape, 0x7F800000, tl.int32).to(tl.float32, bitcast=True)
        y = tl.where(y > MAX, inf, tl.where(y < -MAX, -inf, y))
    return y


@triton.jit
def store_tile(c_ptr, acc, offs_m, offs_n, M, N, stride_cm, stride_cn, BF16_RNE: tl.constexpr):
    """Masked store of an fp32 tile, converted to the output's element type (BF16_RNE, set in
    the interpreter, rounds bf16 and fp8 outputs to nearest there, as GPUs and eager do)."""
    if BF16_RNE and c_ptr.dtype.element_ty == tl.bfloat16:
        acc = round_to_bf16(acc)
    if BF16_RNE and c_ptr.dtype.element_ty == tl.float8e4nv:
        acc = round_to_fp8(acc, 3, -6, 448.0)
    if BF16_RNE and c_ptr.dtype.element_ty == tl.float8e5:
        acc = round_to_fp8(acc, 2, -14, 57344.0)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)
