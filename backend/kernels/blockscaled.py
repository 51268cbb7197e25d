"""The block-scaled GEMM kernel: `F.scaled_mm` with MX (e8m0), NVFP4 or fp32 block scales.

Operands travel as `(ptr, stride_rows, stride_k)` tuples (b read as (N, K)), their scales as
`(scale_ptr, stride_rows, stride_k)`, and the scales' layout as the constexpr tuple
`(K_PER_SCALE, SCALE_FMT, SWIZZLED)`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from gemmconf_reference.kernels.numerics import cdiv, fp8_to_fp32, store_tile


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
def load_quantized(operand, rows, K, off_r, k0, R: tl.constexpr, BK: tl.constexpr,
                   FP4: tl.constexpr):  # fmt: skip
    """A (R, BK) tile along (rows, K) of an fp8 operand, or of an fp4 one packed two to a byte
    along K (element 2j in the low nibble), as fp32 values; zero outside the matrix."""
    ptr, stride_r, stride_k = operand
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
def load_block_scales(scales, rows, K, off_r, k0, R: tl.constexpr, NKB: tl.constexpr,
                      ROWS_PER_SCALE: tl.constexpr, LAYOUT: tl.constexpr):  # fmt: skip
    """The (R, NKB) scales of rows off_r.. and K blocks from k0, as fp32. SWIZZLED reads
    cuBLAS's block-scaling layout (SWIZZLE_32_4_4): 128-row x 4-block tiles of 512 bytes, one
    after another along K blocks, then along rows; inside a tile, row r and block c sit at
    (r % 32) * 16 + (r // 32) * 4 + c. Otherwise the strides address (row block, K block)."""
    scale_ptr, stride_r, stride_k = scales
    K_PER_SCALE: tl.constexpr = LAYOUT[0]
    SCALE_FMT: tl.constexpr = LAYOUT[1]
    SWIZZLED: tl.constexpr = LAYOUT[2]
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


@triton.jit
def blockscaled_gemm_kernel(
    a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, a_global_ptr, b_global_ptr, bias_ptr, M, N, K,
    stride_am, stride_ak, stride_bn, stride_bk, stride_cm, stride_cn,
    stride_sar, stride_sak, stride_sbr, stride_sbk, stride_bias,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    A_FP4: tl.constexpr, B_FP4: tl.constexpr, SCALE_FMT: tl.constexpr,
    A_ROWS_PER_SCALE: tl.constexpr, B_ROWS_PER_SCALE: tl.constexpr, K_PER_SCALE: tl.constexpr,
    SWIZZLED: tl.constexpr, SCALE_AFTER_DOT: tl.constexpr, DOT_DTYPE: tl.constexpr,
    GLOBAL_SCALE: tl.constexpr, HAS_BIAS: tl.constexpr, BF16_RNE: tl.constexpr,
):  # fmt: skip
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
    a_operand, a_scales = (a_ptr, stride_am, stride_ak), (a_scale_ptr, stride_sar, stride_sak)
    b_operand, b_scales = (b_ptr, stride_bn, stride_bk), (b_scale_ptr, stride_sbr, stride_sbk)
    LAYOUT: tl.constexpr = (K_PER_SCALE, SCALE_FMT, SWIZZLED)
    # scales per K tile: one when they multiply the tile's product, else one per K block
    NKB: tl.constexpr = 1 if SCALE_AFTER_DOT else BLOCK_K // K_PER_SCALE
    acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = load_quantized(a_operand, M, K, off_m, k0, BLOCK_M, BLOCK_K, A_FP4)
        b = load_quantized(b_operand, N, K, off_n, k0, BLOCK_N, BLOCK_K, B_FP4)
        sa = load_block_scales(a_scales, M, K, off_m, k0, BLOCK_M, NKB, A_ROWS_PER_SCALE, LAYOUT)
        sb = load_block_scales(b_scales, N, K, off_n, k0, BLOCK_N, NKB, B_ROWS_PER_SCALE, LAYOUT)
        if SCALE_AFTER_DOT:
            part = tl.dot(to_dot_dtype(a, DOT_DTYPE), to_dot_dtype(b, DOT_DTYPE).T)
            acc += part * tl.reshape(sa, (BLOCK_M,))[:, None] * tl.reshape(sb, (BLOCK_N,))[None, :]
        else:
            a = scale_tile(a, sa, BLOCK_M, BLOCK_K, NKB)
            b = scale_tile(b, sb, BLOCK_N, BLOCK_K, NKB)
            acc = tl.dot(to_dot_dtype(a, DOT_DTYPE), to_dot_dtype(b, DOT_DTYPE).T, acc)
    if GLOBAL_SCALE:
        acc = acc * tl.load(a_global_ptr) * tl.load(b_global_ptr)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_n * stride_bias, mask=offs_n < N, other=0.0)
        acc += bias.to(tl.float32)[None, :]
    store_tile(c_ptr, acc, offs_m, offs_n, M, N, stride_cm, stride_cn, BF16_RNE)
