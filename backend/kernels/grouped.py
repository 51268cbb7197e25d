"""The grouped GEMM kernel: `torch._grouped_mm` and `_scaled_grouped_mm` (rowwise scales)."""

from __future__ import annotations

import triton
import triton.language as tl

from gemmconf_reference.kernels.mainloop import apply_scaling, mainloop
from gemmconf_reference.kernels.numerics import cdiv, store_tile


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


@triton.jit
def grouped_gemm_kernel(
    a_ptr, b_ptr, c_ptr, offs_ptr, a_scale_ptr, b_scale_ptr, G, M, N, K,
    stride_ag, stride_am, stride_ak, stride_bg, stride_bk, stride_bn,
    stride_cg, stride_cm, stride_cn,
    stride_sag, stride_sam, stride_sbg, stride_sbn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUPED: tl.constexpr,
    SCALING: tl.constexpr, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    FAST_ACCUM: tl.constexpr, INDEX_64: tl.constexpr, BF16_RNE: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
):  # fmt: skip
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
            # the scales are applied after the K loop (rowwise only), so the loop sees none
            acc = mainloop(
                (a_g, stride_am, stride_ak), (b_g, stride_bk, stride_bn),
                (a_scale_ptr, b_scale_ptr, 0, 0, 0, 0), m, n, k, off_m, off_n,
                BLOCK_M, BLOCK_N, BLOCK_K, "none", "none", "none", False, DOT_UPCAST,
                INPUT_PRECISION, FAST_ACCUM,
                "tile",  # FP8_ACCUM: as grouped GEMMs always had (never timed against "mma")
                INDEX_64,
            )  # fmt: skip
            if SCALING == "rowwise":  # the group's scales; unscaled GEMMs have none (None)
                group_scales = (sa_g, sb_g, stride_sam, 0, 0, stride_sbn)
                acc = apply_scaling(acc, group_scales, m, n, offs_m, offs_n, SCALING)
            store_tile(c_g, acc, offs_m, offs_n, m, n, stride_cm, stride_cn, BF16_RNE)
        tile_base += tiles
        start = end
