"""The K loop of the dense and grouped kernels: operand loads, the dot, fp8 scaling.

An operand travels as a tuple `(ptr, stride_rows, stride_k)` for A, `(ptr, stride_k, stride_cols)`
for B (the batch or group offset already added to the pointer); the fp8 scales as
`(a_scale_ptr, b_scale_ptr, stride_sam, stride_sak, stride_sbk, stride_sbn)`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from gemmconf_reference.kernels.numerics import cdiv, fp8_to_fp32, round_to_tf32


@triton.jit
def load_a(a, M, K, off_m, k0, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
           A_DESC: tl.constexpr, INDEX_64: tl.constexpr):  # fmt: skip
    """A[off_m:off_m+BLOCK_M, k0:k0+BLOCK_K], zero outside the matrix."""
    a_ptr, stride_am, stride_ak = a
    if A_DESC == "mk":
        desc = tl.make_tensor_descriptor(
            a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K]
        )
        a = desc.load([off_m, k0])
    elif A_DESC == "km":
        desc = tl.make_tensor_descriptor(
            a_ptr, shape=[K, M], strides=[stride_ak, 1], block_shape=[BLOCK_K, BLOCK_M]
        )
        a = desc.load([k0, off_m]).T
    else:
        offs_m = off_m + tl.arange(0, BLOCK_M)
        offs_k = k0 + tl.arange(0, BLOCK_K)
        if INDEX_64:
            offs_k = offs_k.to(tl.int64)
        ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        a = tl.load(ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
    return a


@triton.jit
def load_b(b, N, K, off_n, k0, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
           B_DESC: tl.constexpr, INDEX_64: tl.constexpr):  # fmt: skip
    """B[k0:k0+BLOCK_K, off_n:off_n+BLOCK_N], zero outside the matrix."""
    b_ptr, stride_bk, stride_bn = b
    if B_DESC == "kn":
        desc = tl.make_tensor_descriptor(
            b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N]
        )
        b = desc.load([k0, off_n])
    elif B_DESC == "nk":
        desc = tl.make_tensor_descriptor(
            b_ptr, shape=[N, K], strides=[stride_bn, 1], block_shape=[BLOCK_N, BLOCK_K]
        )
        b = desc.load([off_n, k0]).T
    else:
        offs_k = k0 + tl.arange(0, BLOCK_K)
        if INDEX_64:
            offs_k = offs_k.to(tl.int64)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        b = tl.load(ptrs, mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
    return b


@triton.jit
def dot_operand(x, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    if DOT_UPCAST == "fp32":
        if x.dtype == tl.float8e4nv or x.dtype == tl.float8e5:
            x = fp8_to_fp32(x)
        else:
            x = x.to(tl.float32)
    elif DOT_UPCAST == "fp16":
        x = x.to(tl.float16)
    elif INPUT_PRECISION == "tf32" and x.dtype == tl.float32:
        x = round_to_tf32(x)  # tensor cores would truncate the low mantissa bits instead
    return x


@triton.jit
def load_row_scale(scale_ptr, offs, n, stride):
    return tl.load(scale_ptr + offs * stride, mask=offs < n, other=0.0)


@triton.jit
def load_operands(a, b, M, N, K, off_m, off_n, k0, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, A_DESC: tl.constexpr, B_DESC: tl.constexpr,
                  DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                  INDEX_64: tl.constexpr):  # fmt: skip
    """The A and B tiles of K slab k0, as the dot takes them."""
    a = load_a(a, M, K, off_m, k0, BLOCK_M, BLOCK_K, A_DESC, INDEX_64)
    b = load_b(b, N, K, off_n, k0, BLOCK_N, BLOCK_K, B_DESC, INDEX_64)
    return dot_operand(a, DOT_UPCAST, INPUT_PRECISION), dot_operand(b, DOT_UPCAST, INPUT_PRECISION)


@triton.jit
def mainloop(a_operand, b_operand, scales, M, N, K, off_m, off_n,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
             A_DESC: tl.constexpr, B_DESC: tl.constexpr, SCALING: tl.constexpr,
             INT_ACC: tl.constexpr, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
             FAST_ACCUM: tl.constexpr, FP8_ACCUM: tl.constexpr,
             INDEX_64: tl.constexpr):  # fmt: skip
    """The K loop: the BLOCK_M x BLOCK_N tile of A @ B (blockwise fp8 scales applied per slab)."""
    a_scale_ptr, b_scale_ptr, stride_sam, stride_sak, stride_sbk, stride_sbn = scales
    if INT_ACC:
        acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.int32)
    else:
        acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.float32)
    if SCALING == "blockwise":
        offs_m = off_m + tl.arange(0, BLOCK_M)
        offs_n = off_n + tl.arange(0, BLOCK_N)
    for k0 in range(0, K, BLOCK_K):
        a, b = load_operands(
            a_operand, b_operand, M, N, K, off_m, off_n, k0, BLOCK_M, BLOCK_N, BLOCK_K,
            A_DESC, B_DESC, DOT_UPCAST, INPUT_PRECISION, INDEX_64,
        )  # fmt: skip
        if INT_ACC:
            acc = tl.dot(a, b, acc, out_dtype=tl.int32)
        elif SCALING == "blockwise":
            # one scale per (row, 128-wide K slab) for A and per (128x128 block) for B
            kb = k0 // 128
            sa = load_row_scale(a_scale_ptr + kb * stride_sak, offs_m, M, stride_sam)
            sb = load_row_scale(
                b_scale_ptr + kb * stride_sbk, offs_n // 128, cdiv(N, 128), stride_sbn
            )
            acc += tl.dot(a, b) * sa[:, None] * sb[None, :]
        elif FAST_ACCUM:
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        elif FP8_ACCUM == "mma":
            # the MMA lowering promotes into the fp32 accumulator every BLOCK_K products
            acc = tl.dot(a, b, acc, max_num_imprecise_acc=BLOCK_K)
        else:
            # fp8: Hopper's MMA accumulates with fewer bits than fp32, so each K tile's product
            # starts fresh and is added into the fp32 accumulator
            acc += tl.dot(a, b)
    return acc


@triton.jit
def apply_scaling(acc, scales, M, N, offs_m, offs_n, SCALING: tl.constexpr):
    """fp8 dequantisation of the accumulator (blockwise is applied inside the K loop)."""
    a_scale_ptr, b_scale_ptr, stride_sam, _, _, stride_sbn = scales
    if SCALING == "tensorwise":
        acc = acc * tl.load(a_scale_ptr) * tl.load(b_scale_ptr)
    elif SCALING == "rowwise":
        sa = load_row_scale(a_scale_ptr, offs_m, M, stride_sam)
        sb = load_row_scale(b_scale_ptr, offs_n, N, stride_sbn)
        acc = acc * sa[:, None] * sb[None, :]
    return acc
