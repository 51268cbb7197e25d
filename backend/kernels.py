"""The reference backend's Triton template: one GEMM kernel family built from named pieces.

Every GEMM the backend lowers (mm, addmm, bmm, baddbmm, `_int_mm`, `_scaled_mm`) runs one of two
entry points, `gemm_kernel` (one program per output tile, 3-D grid: tile row, tile column, batch)
and `gemm_persistent_kernel` (a fixed number of programs walking all tiles, for large problems on
a GPU). Both call `gemm_tile`, which is composed of the pieces below, each picked by constexpr
flags the way Triton tutorial 03 plugs in its activation:

- operand loads: `load_a` / `load_b` read a tile through masked pointers (`A_DESC == "none"`) or
  through an in-kernel tensor descriptor (`"mk"`/`"km"` for A, `"kn"`/`"nk"` for B: the order of
  the descriptor's dimensions, the last one contiguous). The host decides per call whether a
  descriptor is legal (16-byte aligned base, 16-byte multiple leading strides, unit last stride).
- `dot_operand`: the interpreter multiplies bf16 bit patterns as integers (triton#11584) and
  converts fp8 NaN/Inf to finite numbers, so there bf16 and fp8 operands are upcast to fp32
  first (`DOT_UPCAST == "fp32"`); targets without fp8 MMA get fp16 (`"fp16"`, exact for fp8).
- the K loop accumulates in fp32 (int32 when `INT_ACC`), fp32 inputs at `INPUT_PRECISION`
  ("ieee" unless the run allows TF32; TF32 inputs are rounded to nearest as cuBLAS does, where
  tensor cores would truncate). fp8 without `FAST_ACCUM` promotes partial products into the fp32
  accumulator, because Hopper's fp8 MMA accumulates with fewer bits than fp32 (cuBLAS promotes
  likewise unless `use_fast_accum`), every K tile (`FP8_ACCUM`): "mma", the dense kernels',
  leaves it to Triton's MMA lowering (`max_num_imprecise_acc=BLOCK_K`: promotion inside the
  dot); "tile", the grouped kernel's, adds each K tile's fresh product into the fp32 one.
- fp8 scaling (`SCALING`): "tensorwise" (0-dim scales), "rowwise" ((M,1) and (1,N)), or
  "blockwise" (1x128 activation scales and 128x128 weight scales, applied to each 128-wide K slab,
  so BLOCK_K must divide 128).
- the epilogue: up to `MAX_EPILOGUE_STEPS` slots, each an op name (`EPI0`..`EPI3`), two scalars and
  one optional tensor broadcast to the output tile (`x0`..`x3`, any strides, 0 for broadcast dims).
- the masked store, converting to the output's element type. The interpreter truncates fp32 to
  bf16 (`.to(tl.bfloat16)`), so there `BF16_RNE` rounds to nearest even on the bits first, as
  GPUs and eager do.

This module imports only Triton: the cross-compiler imports it in a process without the
interpreter. Helpers from Triton's own standard library (`tl.zeros`, `tl.cdiv`, `tl.sigmoid`)
are not used, because they break in the interpreter when Triton was imported before
TRITON_INTERPRET was set; the few needed are written out here.
"""

from __future__ import annotations

import inspect
from typing import Any

import triton
import triton.language as tl

from gemmconf_reference import compat

if compat.interpreting():
    compat.memoize_interpreter_patching()
    compat.skip_nested_interpreter_patching()
    compat.memoize_interpreter_types()

MAX_EPILOGUE_STEPS = 4

EPILOGUE_OPS = (
    "none",
    "axpby",  # s0 * acc + s1 * x        (addmm/baddbmm C, bias, add/sub of a tensor)
    "mul_tensor",  # acc * x
    "div_tensor",  # acc / x
    "affine",  # acc * s0 + s1           (scalar mul/add/sub, alpha)
    "div_scalar",  # acc / s0
    "relu",
    "gelu_erf",
    "gelu_tanh",
    "silu",
    "tanh",
    "sigmoid",
    "clamp",  # min(max(acc, s0), s1)
    "clamp_min",  # max(acc, s0)
    "clamp_max",  # min(acc, s0)
    "round_bf16",  # acc.to(bf16).to(fp32): eager rounds here before a dtype change
    "round_fp16",
    "to_fp32",  # int32 accumulator to fp32 (int_mm followed by float ops)
)


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
def load_a(
    a_ptr,
    M,
    K,
    stride_am,
    stride_ak,
    off_m,
    k0,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
    A_DESC: tl.constexpr,
    INDEX_64: tl.constexpr,
):
    """A[off_m:off_m+BLOCK_M, k0:k0+BLOCK_K], zero outside the matrix."""
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
def load_b(
    b_ptr,
    N,
    K,
    stride_bk,
    stride_bn,
    off_n,
    k0,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    B_DESC: tl.constexpr,
    INDEX_64: tl.constexpr,
):
    """B[k0:k0+BLOCK_K, off_n:off_n+BLOCK_N], zero outside the matrix."""
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
def load_operands(
    a_ptr,
    b_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    off_m,
    off_n,
    k0,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    A_DESC: tl.constexpr,
    B_DESC: tl.constexpr,
    DOT_UPCAST: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    INDEX_64: tl.constexpr,
):
    """The A and B tiles of K slab k0, as the dot takes them."""
    a = load_a(a_ptr, M, K, stride_am, stride_ak, off_m, k0, BLOCK_M, BLOCK_K, A_DESC, INDEX_64)
    b = load_b(b_ptr, N, K, stride_bk, stride_bn, off_n, k0, BLOCK_N, BLOCK_K, B_DESC, INDEX_64)
    return (
        dot_operand(a, DOT_UPCAST, INPUT_PRECISION),
        dot_operand(b, DOT_UPCAST, INPUT_PRECISION),
    )


# long: the K loop's constexpr variants in one body; its calls spell every argument one a line
@triton.jit
def mainloop(
    a_ptr,
    b_ptr,
    a_scale_ptr,
    b_scale_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_sam,
    stride_sak,
    stride_sbk,
    stride_sbn,
    off_m,
    off_n,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    A_DESC: tl.constexpr,
    B_DESC: tl.constexpr,
    SCALING: tl.constexpr,
    INT_ACC: tl.constexpr,
    DOT_UPCAST: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    FAST_ACCUM: tl.constexpr,
    FP8_ACCUM: tl.constexpr,
    INDEX_64: tl.constexpr,
):
    """The K loop: the BLOCK_M x BLOCK_N tile of A @ B (blockwise fp8 scales applied per slab)."""
    if INT_ACC:
        acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.int32)
    else:
        acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.float32)
    if SCALING == "blockwise":
        offs_m = off_m + tl.arange(0, BLOCK_M)
        offs_n = off_n + tl.arange(0, BLOCK_N)
    for k0 in range(0, K, BLOCK_K):
        a, b = load_operands(
            a_ptr,
            b_ptr,
            M,
            N,
            K,
            stride_am,
            stride_ak,
            stride_bk,
            stride_bn,
            off_m,
            off_n,
            k0,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
            A_DESC,
            B_DESC,
            DOT_UPCAST,
            INPUT_PRECISION,
            INDEX_64,
        )
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
def apply_scaling(
    acc,
    a_scale_ptr,
    b_scale_ptr,
    M,
    N,
    stride_sam,
    stride_sbn,
    offs_m,
    offs_n,
    SCALING: tl.constexpr,
):
    """fp8 dequantisation of the accumulator (blockwise is applied inside the K loop)."""
    if SCALING == "tensorwise":
        acc = acc * tl.load(a_scale_ptr) * tl.load(b_scale_ptr)
    elif SCALING == "rowwise":
        sa = load_row_scale(a_scale_ptr, offs_m, M, stride_sam)
        sb = load_row_scale(b_scale_ptr, offs_n, N, stride_sbn)
        acc = acc * sa[:, None] * sb[None, :]
    return acc


@triton.jit
def epilogue_step(  # noqa: C901 a constexpr branch per epilogue op; Triton compiles one
    acc,
    x_ptr,
    stride_xb,
    stride_xm,
    stride_xn,
    s0,
    s1,
    pid_b,
    offs_m,
    offs_n,
    mask,
    OP: tl.constexpr,
    BF16_RNE: tl.constexpr,
):
    """One fused pointwise op on the accumulator tile; `x` is broadcast by its strides."""
    if OP == "axpby" or OP == "mul_tensor" or OP == "div_tensor":
        x_ptrs = (
            x_ptr + pid_b * stride_xb + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn
        )
        x = tl.load(x_ptrs, mask=mask, other=0.0)
        x = x.to(acc.dtype)
        if OP == "axpby":
            acc = s0 * acc + s1 * x
        elif OP == "mul_tensor":
            acc = acc * x
        else:
            acc = acc / x
    elif OP == "affine":
        acc = acc * s0 + s1
    elif OP == "div_scalar":
        acc = acc / s0
    elif OP == "relu":
        acc = tl.where(acc < 0, 0, acc)  # keeps NaN, like torch.relu
    elif OP == "gelu_erf":
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    elif OP == "gelu_tanh":
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = 0.5 * acc * (1.0 + tanh(inner))
    elif OP == "silu":
        acc = acc * sigmoid(acc)
    elif OP == "tanh":
        acc = tanh(acc)
    elif OP == "sigmoid":
        acc = sigmoid(acc)
    elif OP == "clamp":
        acc = tl.where(acc < s0, s0, acc)
        acc = tl.where(acc > s1, s1, acc)
    elif OP == "clamp_min":
        acc = tl.where(acc < s0, s0, acc)
    elif OP == "clamp_max":
        acc = tl.where(acc > s0, s0, acc)
    elif OP == "round_bf16":
        if BF16_RNE:
            acc = round_to_bf16(acc)
        else:
            acc = acc.to(tl.bfloat16).to(tl.float32)
    elif OP == "round_fp16":
        acc = acc.to(tl.float16).to(tl.float32)
    elif OP == "to_fp32":
        acc = acc.to(tl.float32)
    return acc


# long: K loop, scaling and epilogue slots of one tile; its calls spell every argument one a line
@triton.jit
def gemm_tile(
    pid_b,
    pid_m,
    pid_n,
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale_ptr,
    b_scale_ptr,
    x0_ptr,
    x1_ptr,
    x2_ptr,
    x3_ptr,
    M,
    N,
    K,
    stride_ab,
    stride_am,
    stride_ak,
    stride_bb,
    stride_bk,
    stride_bn,
    stride_cb,
    stride_cm,
    stride_cn,
    stride_sam,
    stride_sak,
    stride_sbk,
    stride_sbn,
    stride_x0b,
    stride_x0m,
    stride_x0n,
    stride_x1b,
    stride_x1m,
    stride_x1n,
    stride_x2b,
    stride_x2m,
    stride_x2n,
    stride_x3b,
    stride_x3m,
    stride_x3n,
    e0s0,
    e0s1,
    e1s0,
    e1s1,
    e2s0,
    e2s1,
    e3s0,
    e3s1,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    A_DESC: tl.constexpr,
    B_DESC: tl.constexpr,
    SCALING: tl.constexpr,
    INT_ACC: tl.constexpr,
    DOT_UPCAST: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    FAST_ACCUM: tl.constexpr,
    EPI0: tl.constexpr,
    EPI1: tl.constexpr,
    EPI2: tl.constexpr,
    EPI3: tl.constexpr,
    INDEX_64: tl.constexpr,
    BF16_RNE: tl.constexpr,
):
    """Computes and stores output tile (pid_m, pid_n) of batch pid_b."""
    if INDEX_64:
        pid_b = pid_b.to(tl.int64)
        pid_m = pid_m.to(tl.int64)
        pid_n = pid_n.to(tl.int64)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    offs_m = off_m + tl.arange(0, BLOCK_M)
    offs_n = off_n + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)

    acc = mainloop(
        a_ptr + pid_b * stride_ab,
        b_ptr + pid_b * stride_bb,
        a_scale_ptr,
        b_scale_ptr,
        M,
        N,
        K,
        stride_am,
        stride_ak,
        stride_bk,
        stride_bn,
        stride_sam,
        stride_sak,
        stride_sbk,
        stride_sbn,
        off_m,
        off_n,
        BLOCK_M,
        BLOCK_N,
        BLOCK_K,
        A_DESC,
        B_DESC,
        SCALING,
        INT_ACC,
        DOT_UPCAST,
        INPUT_PRECISION,
        FAST_ACCUM,
        "mma",  # FP8_ACCUM: 4-6% faster than "tile" at fp8 8192^3 (H100, H200; 2026-11-25)
        INDEX_64,
    )
    acc = apply_scaling(
        acc, a_scale_ptr, b_scale_ptr, M, N, stride_sam, stride_sbn, offs_m, offs_n, SCALING
    )
    acc = epilogue_step(
        acc,
        x0_ptr,
        stride_x0b,
        stride_x0m,
        stride_x0n,
        e0s0,
        e0s1,
        pid_b,
        offs_m,
        offs_n,
        mask,
        EPI0,
        BF16_RNE,
    )
    acc = epilogue_step(
        acc,
        x1_ptr,
        stride_x1b,
        stride_x1m,
        stride_x1n,
        e1s0,
        e1s1,
        pid_b,
        offs_m,
        offs_n,
        mask,
        EPI1,
        BF16_RNE,
    )
    acc = epilogue_step(
        acc,
        x2_ptr,
        stride_x2b,
        stride_x2m,
        stride_x2n,
        e2s0,
        e2s1,
        pid_b,
        offs_m,
        offs_n,
        mask,
        EPI2,
        BF16_RNE,
    )
    acc = epilogue_step(
        acc,
        x3_ptr,
        stride_x3b,
        stride_x3m,
        stride_x3n,
        e3s0,
        e3s1,
        pid_b,
        offs_m,
        offs_n,
        mask,
        EPI3,
        BF16_RNE,
    )

    if BF16_RNE and c_ptr.dtype.element_ty == tl.bfloat16:
        acc = round_to_bf16(acc)
    c_ptrs = c_ptr + pid_b * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


# long: a launch's parameters, one a line, handed on to gemm_tile whole
@triton.jit
def gemm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale_ptr,
    b_scale_ptr,
    x0_ptr,
    x1_ptr,
    x2_ptr,
    x3_ptr,
    M,
    N,
    K,
    stride_ab,
    stride_am,
    stride_ak,
    stride_bb,
    stride_bk,
    stride_bn,
    stride_cb,
    stride_cm,
    stride_cn,
    stride_sam,
    stride_sak,
    stride_sbk,
    stride_sbn,
    stride_x0b,
    stride_x0m,
    stride_x0n,
    stride_x1b,
    stride_x1m,
    stride_x1n,
    stride_x2b,
    stride_x2m,
    stride_x2n,
    stride_x3b,
    stride_x3m,
    stride_x3n,
    e0s0,
    e0s1,
    e1s0,
    e1s1,
    e2s0,
    e2s1,
    e3s0,
    e3s1,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    A_DESC: tl.constexpr,
    B_DESC: tl.constexpr,
    SCALING: tl.constexpr,
    INT_ACC: tl.constexpr,
    DOT_UPCAST: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    FAST_ACCUM: tl.constexpr,
    EPI0: tl.constexpr,
    EPI1: tl.constexpr,
    EPI2: tl.constexpr,
    EPI3: tl.constexpr,
    INDEX_64: tl.constexpr,
    BF16_RNE: tl.constexpr,
):
    """One program per output tile; grid = (tiles along M, tiles along N, batch)."""
    gemm_tile(
        tl.program_id(2),
        tl.program_id(0),
        tl.program_id(1),
        a_ptr,
        b_ptr,
        c_ptr,
        a_scale_ptr,
        b_scale_ptr,
        x0_ptr,
        x1_ptr,
        x2_ptr,
        x3_ptr,
        M,
        N,
        K,
        stride_ab,
        stride_am,
        stride_ak,
        stride_bb,
        stride_bk,
        stride_bn,
        stride_cb,
        stride_cm,
        stride_cn,
        stride_sam,
        stride_sak,
        stride_sbk,
        stride_sbn,
        stride_x0b,
        stride_x0m,
        stride_x0n,
        stride_x1b,
        stride_x1m,
        stride_x1n,
        stride_x2b,
        stride_x2m,
        stride_x2n,
        stride_x3b,
        stride_x3m,
        stride_x3n,
        e0s0,
        e0s1,
        e1s0,
        e1s1,
        e2s0,
        e2s1,
        e3s0,
        e3s1,
        BLOCK_M,
        BLOCK_N,
        BLOCK_K,
        A_DESC,
        B_DESC,
        SCALING,
        INT_ACC,
        DOT_UPCAST,
        INPUT_PRECISION,
        FAST_ACCUM,
        EPI0,
        EPI1,
        EPI2,
        EPI3,
        INDEX_64,
        BF16_RNE,
    )


# long: the persistent tile loop over gemm_tile, every argument spelled one a line
@triton.jit
def gemm_persistent_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale_ptr,
    b_scale_ptr,
    x0_ptr,
    x1_ptr,
    x2_ptr,
    x3_ptr,
    M,
    N,
    K,
    BATCH,
    stride_ab,
    stride_am,
    stride_ak,
    stride_bb,
    stride_bk,
    stride_bn,
    stride_cb,
    stride_cm,
    stride_cn,
    stride_sam,
    stride_sak,
    stride_sbk,
    stride_sbn,
    stride_x0b,
    stride_x0m,
    stride_x0n,
    stride_x1b,
    stride_x1m,
    stride_x1n,
    stride_x2b,
    stride_x2m,
    stride_x2n,
    stride_x3b,
    stride_x3m,
    stride_x3n,
    e0s0,
    e0s1,
    e1s0,
    e1s1,
    e2s0,
    e2s1,
    e3s0,
    e3s1,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    A_DESC: tl.constexpr,
    B_DESC: tl.constexpr,
    SCALING: tl.constexpr,
    INT_ACC: tl.constexpr,
    DOT_UPCAST: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    FAST_ACCUM: tl.constexpr,
    EPI0: tl.constexpr,
    EPI1: tl.constexpr,
    EPI2: tl.constexpr,
    EPI3: tl.constexpr,
    INDEX_64: tl.constexpr,
    BF16_RNE: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    """NUM_PROGRAMS programs stride over all batch x tile ids, GROUP_M tile rows at a time.
    WARP_SPECIALIZE asks Triton to split the tile loop into a producer warp (the loads) and the
    MMA warp groups, so a tile's epilogue and fp8 promotion overlap the next tile's loads."""
    tiles_m = cdiv(M, BLOCK_M)
    tiles_n = cdiv(N, BLOCK_N)
    tiles_per_batch = tiles_m * tiles_n
    tiles_per_group = GROUP_M * tiles_n
    for tile in tl.range(
        tl.program_id(0),
        BATCH * tiles_per_batch,
        NUM_PROGRAMS,
        warp_specialize=WARP_SPECIALIZE,
    ):
        pid_b = tile // tiles_per_batch
        t = tile % tiles_per_batch
        first_m = (t // tiles_per_group) * GROUP_M
        group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (t % tiles_per_group) % group_rows
        pid_n = (t % tiles_per_group) // group_rows
        gemm_tile(
            pid_b,
            pid_m,
            pid_n,
            a_ptr,
            b_ptr,
            c_ptr,
            a_scale_ptr,
            b_scale_ptr,
            x0_ptr,
            x1_ptr,
            x2_ptr,
            x3_ptr,
            M,
            N,
            K,
            stride_ab,
            stride_am,
            stride_ak,
            stride_bb,
            stride_bk,
            stride_bn,
            stride_cb,
            stride_cm,
            stride_cn,
            stride_sam,
            stride_sak,
            stride_sbk,
            stride_sbn,
            stride_x0b,
            stride_x0m,
            stride_x0n,
            stride_x1b,
            stride_x1m,
            stride_x1n,
            stride_x2b,
            stride_x2m,
            stride_x2n,
            stride_x3b,
            stride_x3m,
            stride_x3n,
            e0s0,
            e0s1,
            e1s0,
            e1s1,
            e2s0,
            e2s1,
            e3s0,
            e3s1,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
            A_DESC,
            B_DESC,
            SCALING,
            INT_ACC,
            DOT_UPCAST,
            INPUT_PRECISION,
            FAST_ACCUM,
            EPI0,
            EPI1,
            EPI2,
            EPI3,
            INDEX_64,
            BF16_RNE,
        )


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


@triton.jit
def group_extent(offs_ptr, g, start, M, N, K, GROUPED: tl.constexpr):
    """(end, m, n, k) of group g of a grouped GEMM: `offs[g]` ends the group's slice of the
    jagged dim ("m": rows of a 2-D a, "n": columns of a 2-D b, "k": the shared K of 2-D a and
    b); "none" (3-D a and b) has no jagged dim."""
    if GROUPED == "none":
        end = start
        m = M
        n = N
        k = K
    else:
        end = tl.load(offs_ptr + g)
        size = end - start
        m = size if GROUPED == "m" else M
        n = size if GROUPED == "n" else N
        k = size if GROUPED == "k" else K
    return end, m, n, k


# long: the walk over groups and their tiles in one body; its calls spell every argument
@triton.jit
def grouped_gemm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    offs_ptr,
    a_scale_ptr,
    b_scale_ptr,
    G,
    M,
    N,
    K,
    stride_ag,
    stride_am,
    stride_ak,
    stride_bg,
    stride_bk,
    stride_bn,
    stride_cg,
    stride_cm,
    stride_cn,
    stride_sag,
    stride_sam,
    stride_sbg,
    stride_sbn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUPED: tl.constexpr,
    SCALING: tl.constexpr,
    DOT_UPCAST: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    FAST_ACCUM: tl.constexpr,
    INDEX_64: tl.constexpr,
    BF16_RNE: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
):
    """`torch._grouped_mm` / `_scaled_grouped_mm` (rowwise): NUM_PROGRAMS programs walk every
    group's output tiles in turn (group sizes are read from `offs` on the device, so the host
    never waits for them). Strides with a `g` step between groups of 3-D operands (and of the
    3-D output of 2-D x 2-D); a group's slice of a 2-D operand starts at its offset."""
    pid = tl.program_id(0)
    start = tl.full((), 0, tl.int32)
    tile_base = tl.full((), 0, tl.int32)
    for g in range(G):
        end, m, n, k = group_extent(offs_ptr, g, start, M, N, K, GROUPED)
        gi = g
        first = start
        if INDEX_64:
            gi = gi.to(tl.int64)
            first = first.to(tl.int64)
        a_g = a_ptr + gi * stride_ag
        b_g = b_ptr + gi * stride_bg
        c_g = c_ptr + gi * stride_cg
        sa_g = a_scale_ptr
        sb_g = b_scale_ptr
        if SCALING == "rowwise":
            sa_g = a_scale_ptr + gi * stride_sag
            sb_g = b_scale_ptr + gi * stride_sbg
            if GROUPED == "m":
                sa_g += first * stride_sam
            elif GROUPED == "n":
                sb_g += first * stride_sbn
        if GROUPED == "m":
            a_g += first * stride_am
            c_g += first * stride_cm
        elif GROUPED == "n":
            b_g += first * stride_bn
            c_g += first * stride_cn
        elif GROUPED == "k":
            a_g += first * stride_ak
            b_g += first * stride_bk
        tiles_n = cdiv(n, BLOCK_N)
        tiles = cdiv(m, BLOCK_M) * tiles_n
        # this program's first tile of the group: the next index equal to pid modulo the count
        mine = tile_base + (pid - tile_base % NUM_PROGRAMS + NUM_PROGRAMS) % NUM_PROGRAMS
        for tile in range(mine, tile_base + tiles, NUM_PROGRAMS):
            local = tile - tile_base
            off_m = (local // tiles_n) * BLOCK_M
            off_n = (local % tiles_n) * BLOCK_N
            offs_m = off_m + tl.arange(0, BLOCK_M)
            offs_n = off_n + tl.arange(0, BLOCK_N)
            acc = mainloop(
                a_g,
                b_g,
                a_scale_ptr,
                b_scale_ptr,
                m,
                n,
                k,
                stride_am,
                stride_ak,
                stride_bk,
                stride_bn,
                0,
                0,
                0,
                0,
                off_m,
                off_n,
                BLOCK_M,
                BLOCK_N,
                BLOCK_K,
                "none",
                "none",
                "none",
                False,
                DOT_UPCAST,
                INPUT_PRECISION,
                FAST_ACCUM,
                "tile",  # FP8_ACCUM: as grouped GEMMs always had (never timed against "mma")
                INDEX_64,
            )
            acc = apply_scaling(
                acc, sa_g, sb_g, m, n, stride_sam, stride_sbn, offs_m, offs_n, SCALING
            )
            store_tile(c_g, acc, offs_m, offs_n, m, n, stride_cm, stride_cn, BF16_RNE)
        tile_base += tiles
        start = end


@triton.jit
def e8m0_to_fp32(bits):
    """An MX scale (8 exponent bits, bias 127, no mantissa): 2**(bits - 127); 0xFF is NaN."""
    bits = bits.to(tl.int32)
    normal = (bits << 23).to(tl.float32, bitcast=True)
    tiny = tl.full(bits.shape, 0x00400000, tl.int32).to(tl.float32, bitcast=True)  # 2**-127
    nan = tl.full(bits.shape, 0x7FC00000, tl.int32).to(tl.float32, bitcast=True)
    return tl.where(bits == 255, nan, tl.where(bits == 0, tiny, normal))


@triton.jit
def to_dot_dtype(x, DOT_DTYPE: tl.constexpr):
    """Upcast fp32 tiles go into the dot as bf16 on a GPU (exact for the values that reach it:
    fp8 and fp8 x power-of-two or fp4 x e4m3 products) and stay fp32 in the interpreter."""
    if DOT_DTYPE == "bf16":
        x = x.to(tl.bfloat16)
    return x


@triton.jit
def e2m1_to_fp32(nibble):
    """One fp4 (e2m1) value: sign, 2 exponent bits (bias 1), 1 mantissa bit; no Inf or NaN."""
    nibble = nibble.to(tl.int32)
    exponent = (nibble >> 1) & 3
    mantissa = (nibble & 1).to(tl.float32)
    subnormal = mantissa * 0.5
    scale = (1 << tl.maximum(exponent - 1, 0)).to(tl.float32)
    normal = (1.0 + mantissa * 0.5) * scale
    magnitude = tl.where(exponent == 0, subnormal, normal)
    return tl.where((nibble & 8) != 0, -magnitude, magnitude)


@triton.jit
def load_quantized(
    ptr,
    rows,
    K,
    stride_r,
    stride_k,
    off_r,
    k0,
    R: tl.constexpr,
    BK: tl.constexpr,
    FP4: tl.constexpr,
):
    """A (R, BK) tile along (rows, K) of an fp8 operand, or of an fp4 one packed two to a byte
    along K (element 2j in the low nibble), as fp32 values; zero outside the matrix."""
    offs_r = off_r + tl.arange(0, R)
    if FP4:
        offs_k = k0 // 2 + tl.arange(0, BK // 2)
        ptrs = ptr + offs_r[:, None] * stride_r + offs_k[None, :] * stride_k
        mask = (offs_r[:, None] < rows) & (offs_k[None, :] < K // 2)
        packed = tl.load(ptrs, mask=mask, other=0)
        pairs = tl.join(e2m1_to_fp32(packed & 0xF), e2m1_to_fp32(packed >> 4))
        x = tl.reshape(pairs, (R, BK))
    else:
        offs_k = k0 + tl.arange(0, BK)
        ptrs = ptr + offs_r[:, None] * stride_r + offs_k[None, :] * stride_k
        mask = (offs_r[:, None] < rows) & (offs_k[None, :] < K)
        x = fp8_to_fp32(tl.load(ptrs, mask=mask, other=0.0))
    return x


@triton.jit
def load_block_scales(
    scale_ptr,
    rows,
    K,
    stride_r,
    stride_k,
    off_r,
    k0,
    R: tl.constexpr,
    NKB: tl.constexpr,
    ROWS_PER_SCALE: tl.constexpr,
    K_PER_SCALE: tl.constexpr,
    SCALE_FMT: tl.constexpr,
    SWIZZLED: tl.constexpr,
):
    """The (R, NKB) scales of rows off_r.. and K blocks from k0, as fp32. SWIZZLED reads
    cuBLAS's block-scaling layout (SWIZZLE_32_4_4): 128-row x 4-block tiles of 512 bytes, one
    after another along K blocks, then along rows; inside a tile, row r and block c sit at
    (r % 32) * 16 + (r // 32) * 4 + c. Otherwise the strides address (row block, K block)."""
    r = (off_r + tl.arange(0, R)) // ROWS_PER_SCALE
    kb = k0 // K_PER_SCALE + tl.arange(0, NKB)
    k_blocks = cdiv(K, K_PER_SCALE)
    mask = (r[:, None] < cdiv(rows, ROWS_PER_SCALE)) & (kb[None, :] < k_blocks)
    if SWIZZLED:
        tile = (r[:, None] // 128) * cdiv(k_blocks, 4) + kb[None, :] // 4
        inner = (r[:, None] % 32) * 16 + ((r[:, None] % 128) // 32) * 4 + kb[None, :] % 4
        ptrs = scale_ptr + tile * 512 + inner
    else:
        ptrs = scale_ptr + r[:, None] * stride_r + kb[None, :] * stride_k
    if SCALE_FMT == "e8m0":
        s = e8m0_to_fp32(tl.load(ptrs, mask=mask, other=127))
    elif SCALE_FMT == "e4m3":
        s = fp8_to_fp32(tl.load(ptrs, mask=mask, other=1.0))
    else:
        s = tl.load(ptrs, mask=mask, other=1.0)
    return s


@triton.jit
def scale_tile(x, s, R: tl.constexpr, BK: tl.constexpr, NKB: tl.constexpr):
    """x (R, BK) times its scales s (R, NKB), each scale covering BK // NKB consecutive K."""
    return tl.reshape(tl.reshape(x, (R, NKB, BK // NKB)) * s[:, :, None], (R, BK))


# long: the K loop's two ways of scaling in one body; its calls spell every argument
@triton.jit
def blockscaled_gemm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale_ptr,
    b_scale_ptr,
    a_global_ptr,
    b_global_ptr,
    bias_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bn,
    stride_bk,
    stride_cm,
    stride_cn,
    stride_sar,
    stride_sak,
    stride_sbr,
    stride_sbk,
    stride_bias,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    A_FP4: tl.constexpr,
    B_FP4: tl.constexpr,
    SCALE_FMT: tl.constexpr,
    A_ROWS_PER_SCALE: tl.constexpr,
    B_ROWS_PER_SCALE: tl.constexpr,
    K_PER_SCALE: tl.constexpr,
    SWIZZLED: tl.constexpr,
    SCALE_AFTER_DOT: tl.constexpr,
    DOT_DTYPE: tl.constexpr,
    GLOBAL_SCALE: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    BF16_RNE: tl.constexpr,
):
    """`F.scaled_mm` with block scales (1x16, 1x32, 1x128, 128x128) by upcasting. b is read as
    (N, K). Scales that are powers of two (MX e8m0) or whose products with the elements are exact
    in bf16 (NVFP4: e4m3 x e2m1) multiply each operand tile before a bf16 (fp32 in the
    interpreter) dot; fp32 block scales (1x128, 128x128, where BLOCK_K divides 128) multiply each
    K tile's product instead (SCALE_AFTER_DOT), as DeepSeek-style kernels do. NVFP4's second
    level, one fp32 scale per operand, multiplies the accumulator (GLOBAL_SCALE)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    offs_m = off_m + tl.arange(0, BLOCK_M)
    offs_n = off_n + tl.arange(0, BLOCK_N)
    acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = load_quantized(a_ptr, M, K, stride_am, stride_ak, off_m, k0, BLOCK_M, BLOCK_K, A_FP4)
        b = load_quantized(b_ptr, N, K, stride_bn, stride_bk, off_n, k0, BLOCK_N, BLOCK_K, B_FP4)
        if SCALE_AFTER_DOT:
            sa = load_block_scales(
                a_scale_ptr,
                M,
                K,
                stride_sar,
                stride_sak,
                off_m,
                k0,
                BLOCK_M,
                1,
                A_ROWS_PER_SCALE,
                K_PER_SCALE,
                SCALE_FMT,
                SWIZZLED,
            )
            sb = load_block_scales(
                b_scale_ptr,
                N,
                K,
                stride_sbr,
                stride_sbk,
                off_n,
                k0,
                BLOCK_N,
                1,
                B_ROWS_PER_SCALE,
                K_PER_SCALE,
                SCALE_FMT,
                SWIZZLED,
            )
            part = tl.dot(to_dot_dtype(a, DOT_DTYPE), to_dot_dtype(b, DOT_DTYPE).T)
            acc += part * tl.reshape(sa, (BLOCK_M,))[:, None] * tl.reshape(sb, (BLOCK_N,))[None, :]
        else:
            sa = load_block_scales(
                a_scale_ptr,
                M,
                K,
                stride_sar,
                stride_sak,
                off_m,
                k0,
                BLOCK_M,
                BLOCK_K // K_PER_SCALE,
                A_ROWS_PER_SCALE,
                K_PER_SCALE,
                SCALE_FMT,
                SWIZZLED,
            )
            sb = load_block_scales(
                b_scale_ptr,
                N,
                K,
                stride_sbr,
                stride_sbk,
                off_n,
                k0,
                BLOCK_N,
                BLOCK_K // K_PER_SCALE,
                B_ROWS_PER_SCALE,
                K_PER_SCALE,
                SCALE_FMT,
                SWIZZLED,
            )
            a = scale_tile(a, sa, BLOCK_M, BLOCK_K, BLOCK_K // K_PER_SCALE)
            b = scale_tile(b, sb, BLOCK_N, BLOCK_K, BLOCK_K // K_PER_SCALE)
            acc = tl.dot(to_dot_dtype(a, DOT_DTYPE), to_dot_dtype(b, DOT_DTYPE).T, acc)
    if GLOBAL_SCALE:
        acc = acc * tl.load(a_global_ptr) * tl.load(b_global_ptr)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_n * stride_bias, mask=offs_n < N, other=0.0)
        acc += bias.to(tl.float32)[None, :]
    store_tile(c_ptr, acc, offs_m, offs_n, M, N, stride_cm, stride_cn, BF16_RNE)


def parameters(kernel: Any) -> list[tuple[str, bool]]:
    """(name, is_constexpr) for each parameter of a kernel, jit wrapper or interpreter object."""
    raw = getattr(kernel, "fn", kernel)
    return [
        (p.name, "constexpr" in str(p.annotation))
        for p in inspect.signature(raw).parameters.values()
    ]


# `gemm_kernel` compiled without Triton's specialisation on 16-divisibility (of pointers and
# ints; ints equal to 1 still become constants, so unit strides stay known). Triton compiles a
# new variant for each pattern of divisible sizes, strides and offsets, and a suite of small odd
# GEMMs meets hundreds of them: on an H100, 1,330 of one run's 1,390 `gemm_kernel` compiles were
# small problems' (BENCHMARKS.md, 2026-11-26, 93414a2). `launcher.plan_launch` sends problems
# too small for vector widths to matter here (`launcher.unaligned_suffices`): their patterns
# share one compile. The results are the same: alignment changes how operands are loaded, not
# the sums.
UNALIGNED = "gemm_kernel_unaligned"
# per kernel: the runtime parameters compiled without alignment specialisation
ALIGNMENT_FREE: dict[str, frozenset[str]] = {
    UNALIGNED: frozenset(name for name, constexpr in parameters(gemm_kernel) if not constexpr)
}
gemm_kernel_unaligned = triton.jit(
    do_not_specialize_on_alignment=sorted(ALIGNMENT_FREE[UNALIGNED])
)(gemm_kernel.fn)

KERNELS = {
    "gemm_kernel": gemm_kernel,
    UNALIGNED: gemm_kernel_unaligned,
    "gemm_persistent_kernel": gemm_persistent_kernel,
    "grouped_gemm_kernel": grouped_gemm_kernel,
    "blockscaled_gemm_kernel": blockscaled_gemm_kernel,
}
# the sm90 kernel with a producer warp and two consumer warpgroups, in Gluon
# (triton.experimental.gluon; hopper.py): absent where this Triton has no Gluon
HOPPER = "hopper_gemm_kernel"
HOPPER_PIECES: tuple[Any, ...] = ()
try:
    from gemmconf_reference import hopper
except ImportError:  # pragma: no cover - every supported Triton (3.6+) has Gluon
    pass
else:
    KERNELS[HOPPER] = hopper.hopper_gemm_kernel
    HOPPER_PIECES = (
        hopper._tile_of,
        hopper._loader,
        hopper._consumer,
        hopper._promoted_k_loop,
        hopper._chained_k_loop,
        hopper._store,
        hopper.hopper_gemm_kernel,
    )

# every @triton.jit piece, in source order: what the "triton" artifact shows for a launch
PIECES = (
    cdiv,
    tanh,
    sigmoid,
    round_to_bf16,
    round_to_tf32,
    load_a,
    load_b,
    fp8_to_fp32,
    dot_operand,
    load_row_scale,
    load_operands,
    mainloop,
    apply_scaling,
    epilogue_step,
    gemm_tile,
    gemm_kernel,
    gemm_persistent_kernel,
    round_to_fp8,
    store_tile,
    group_extent,
    grouped_gemm_kernel,
    e8m0_to_fp32,
    to_dot_dtype,
    e2m1_to_fp32,
    load_quantized,
    load_block_scales,
    scale_tile,
    blockscaled_gemm_kernel,
)
