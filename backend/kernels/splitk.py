"""The split-K kernel: a dense GEMM whose K loop is cut into slices, one program per (output tile,
K slice), for problems whose output tiles leave most SMs idle (decode: M = 16 against a weight
of thousands of columns; `launcher.split_count` says when).

Each program runs the dense `mainloop` over its slice (the operands' pointers moved to the
slice's start, K the slice's length: the masks and tensor descriptors then stop at its end) and
writes its fp32 partial sum into a workspace, one BLOCK_M x BLOCK_N block per (slice, tile), rows
past M left out. Then it counts itself in the tile's arrival counter (an atomic add); the program
that arrives last, whichever it is, adds the tile's partials in slice order 0, 1, ..., resets the
counter to 0 for the next launch, and finishes the tile as the dense kernels do (`finish_tile`:
fp8 scales, the epilogue's slots, the output's conversion). The atomic only counts: which
program sums is timing's choice, the order of the sum is not, so two calls give the same bits.

The order of a row's sum differs from the unsplit kernel's (a sum per slice, then the slices'
sums in order), and depends on the number of slices, which the launcher derives from the
problem's tile count and K: configs.py's docstring says which calls that makes differ.

Why one kernel rather than a partial-sums kernel followed by a reducing one: on an H200 the one
kernel was faster in 109 of 120 bf16 decode candidates, by 1.3-2.1 us at each projection's best
(BENCHMARKS.md, "2026-11-29, c85eccb to 03e2355"); it needs no second launch, the partials
being summed by programs already running.
"""

from __future__ import annotations

import triton
import triton.language as tl

from gemmconf_reference.kernels.dense import finish_tile
from gemmconf_reference.kernels.mainloop import mainloop
from gemmconf_reference.kernels.numerics import cdiv


@triton.jit
def splitk_tile(pid_m, pid_n, a, b, c, scales, slots, workspace, M, N, K,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                A_DESC: tl.constexpr, B_DESC: tl.constexpr, SCALING: tl.constexpr,
                DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                FAST_ACCUM: tl.constexpr, EPI: tl.constexpr,
                BF16_RNE: tl.constexpr):  # fmt: skip
    """This program's K slice of output tile (pid_m, pid_n) into the workspace; the whole tile,
    finished and stored into `c`, by the slice that arrives last. `workspace` is (partials
    pointer, counters pointer)."""
    a_ptr, _, stride_am, stride_ak = a
    b_ptr, _, stride_bk, stride_bn = b
    ws_ptr, count_ptr = workspace
    pid_s = tl.program_id(2)
    splits = tl.num_programs(2)
    span = cdiv(cdiv(K, BLOCK_K), splits) * BLOCK_K
    k_start = pid_s * span
    k_len = tl.maximum(tl.minimum(K - k_start, span), 0)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc = mainloop(
        (a_ptr + k_start * stride_ak, stride_am, stride_ak),
        (b_ptr + k_start * stride_bk, stride_bk, stride_bn),
        scales, M, N, k_len, off_m, off_n, BLOCK_M, BLOCK_N, BLOCK_K, A_DESC, B_DESC, SCALING,
        False, DOT_UPCAST, INPUT_PRECISION, FAST_ACCUM, "mma", False,
    )  # fmt: skip

    tiles = tl.num_programs(0) * tl.num_programs(1)
    tile = pid_m * tl.num_programs(1) + pid_n
    rows = tl.arange(0, BLOCK_M)
    block = rows[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    live = (off_m + rows)[:, None] < M  # rows past M are never read back
    tl.store(ws_ptr + (pid_s * tiles + tile) * (BLOCK_M * BLOCK_N) + block, acc, mask=live)
    tl.debug_barrier()  # every thread's partial stored before the arrival releases them
    arrived = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")
    if arrived == splits - 1:
        total = tl.load(ws_ptr + tile * (BLOCK_M * BLOCK_N) + block, mask=live, other=0.0,
                        cache_modifier=".cg")  # fmt: skip
        for s in range(1, splits):
            part = ws_ptr + (s * tiles + tile) * (BLOCK_M * BLOCK_N) + block
            total += tl.load(part, mask=live, other=0.0, cache_modifier=".cg")
        tl.atomic_xchg(count_ptr + tile, 0)  # ready for the next launch
        offs_m = off_m + rows
        offs_n = off_n + tl.arange(0, BLOCK_N)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        finish_tile(total, 0, offs_m, offs_n, mask, c, scales, slots, M, N, SCALING, EPI,
                    BF16_RNE)  # fmt: skip


# gemm_kernel's launch ABI (dense.py) and the workspace: partial sums (fp32, slices x tiles x
# BLOCK_M x BLOCK_N) and one arrival counter per tile (int32, 0 between launches)
@triton.jit
def splitk_gemm_kernel(
    a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, x0_ptr, x1_ptr, x2_ptr, x3_ptr, M, N, K,
    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    stride_sam, stride_sak, stride_sbk, stride_sbn,
    stride_x0b, stride_x0m, stride_x0n, stride_x1b, stride_x1m, stride_x1n,
    stride_x2b, stride_x2m, stride_x2n, stride_x3b, stride_x3m, stride_x3n,
    e0s0, e0s1, e1s0, e1s1, e2s0, e2s1, e3s0, e3s1,
    ws_ptr, count_ptr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    A_DESC: tl.constexpr, B_DESC: tl.constexpr, SCALING: tl.constexpr,
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr, FAST_ACCUM: tl.constexpr,
    EPI0: tl.constexpr, EPI1: tl.constexpr, EPI2: tl.constexpr, EPI3: tl.constexpr,
    BF16_RNE: tl.constexpr,
):  # fmt: skip
    """One program per (output tile, K slice); grid = (tiles along M, tiles along N, slices).
    One batch, 32-bit offsets, a floating-point accumulator (the launcher sends no others)."""
    splitk_tile(
        tl.program_id(0), tl.program_id(1),
        (a_ptr, stride_ab, stride_am, stride_ak),
        (b_ptr, stride_bb, stride_bk, stride_bn),
        (c_ptr, stride_cb, stride_cm, stride_cn),
        (a_scale_ptr, b_scale_ptr, stride_sam, stride_sak, stride_sbk, stride_sbn),
        ((x0_ptr, stride_x0b, stride_x0m, stride_x0n, e0s0, e0s1),
         (x1_ptr, stride_x1b, stride_x1m, stride_x1n, e1s0, e1s1),
         (x2_ptr, stride_x2b, stride_x2m, stride_x2n, e2s0, e2s1),
         (x3_ptr, stride_x3b, stride_x3m, stride_x3n, e3s0, e3s1)),
        (ws_ptr, count_ptr),
        M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, A_DESC, B_DESC, SCALING, DOT_UPCAST,
        INPUT_PRECISION, FAST_ACCUM, (EPI0, EPI1, EPI2, EPI3), BF16_RNE,
    )  # fmt: skip


SPLITK = "splitk_gemm_kernel"
