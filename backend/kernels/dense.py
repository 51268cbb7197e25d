"""The dense GEMM kernels: mm, addmm, bmm, baddbmm, `_int_mm` and `_scaled_mm`.

`gemm_kernel` runs one program per output tile (3-D grid: tile row, tile column, batch);
`gemm_persistent_kernel` a fixed number of programs walking all tiles, for large problems on a
GPU; `gemm_kernel_unaligned` is `gemm_kernel` compiled without alignment specialisation, for
small problems. Each computes a tile with `gemm_tile`: the K loop (`mainloop`), fp8 scaling,
the epilogue's slots, the store.

The kernels' parameters are flat, one per runtime value and constexpr flag: that list is the
launch ABI the launcher fills by name and slot, Triton specialises per parameter and the
cross-compiler's requests spell out. They are grouped into tuples (`mainloop.py`,
`epilogue.py`) once, at the entry.
"""

from __future__ import annotations

import triton
import triton.language as tl

from gemmconf_reference.kernels.epilogue import EPILOGUE_SLOTS, epilogue_step
from gemmconf_reference.kernels.mainloop import apply_scaling, mainloop
from gemmconf_reference.kernels.numerics import cdiv, round_to_bf16


@triton.jit
def gemm_tile(pid_b, pid_m, pid_n, a, b, c, scales, slots, M, N, K,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              A_DESC: tl.constexpr, B_DESC: tl.constexpr, SCALING: tl.constexpr,
              INT_ACC: tl.constexpr, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
              FAST_ACCUM: tl.constexpr, EPI: tl.constexpr, INDEX_64: tl.constexpr,
              BF16_RNE: tl.constexpr):  # fmt: skip
    """Computes and stores output tile (pid_m, pid_n) of batch pid_b. `a`, `b` and `c` are
    (ptr, batch stride, row stride, column stride); `slots` the epilogue's, one per EPI op."""
    a_ptr, stride_ab, stride_am, stride_ak = a
    b_ptr, stride_bb, stride_bk, stride_bn = b
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
        (a_ptr + pid_b * stride_ab, stride_am, stride_ak),
        (b_ptr + pid_b * stride_bb, stride_bk, stride_bn),
        scales, M, N, K, off_m, off_n, BLOCK_M, BLOCK_N, BLOCK_K, A_DESC, B_DESC, SCALING,
        INT_ACC, DOT_UPCAST, INPUT_PRECISION, FAST_ACCUM,
        "mma",  # FP8_ACCUM: 4-6% faster than "tile" at fp8 8192^3 (H100, H200; 2026-11-25)
        INDEX_64,
    )  # fmt: skip
    finish_tile(acc, pid_b, offs_m, offs_n, mask, c, scales, slots, M, N, SCALING, EPI, BF16_RNE)


@triton.jit
def finish_tile(acc, pid_b, offs_m, offs_n, mask, c, scales, slots, M, N, SCALING: tl.constexpr,
                EPI: tl.constexpr, BF16_RNE: tl.constexpr):  # fmt: skip
    """The tile's whole K sum `acc` (rows `offs_m`, columns `offs_n` of batch pid_b, `mask`
    those inside M x N) scaled, through the epilogue's slots, converted and stored into `c`
    (ptr, batch, row, col strides)."""
    c_ptr, stride_cb, stride_cm, stride_cn = c
    acc = apply_scaling(acc, scales, M, N, offs_m, offs_n, SCALING)
    for i in tl.static_range(EPILOGUE_SLOTS):
        acc = epilogue_step(acc, slots[i], pid_b, offs_m, offs_n, mask, EPI[i], BF16_RNE)

    if BF16_RNE and c_ptr.dtype.element_ty == tl.bfloat16:
        acc = round_to_bf16(acc)
    c_ptrs = c_ptr + pid_b * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


# The launch ABI, one line per group; both kernels below take it (the persistent one adds BATCH
# and its own constexprs), and hand it to gemm_tile as tuples.
@triton.jit
def gemm_kernel(
    a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, x0_ptr, x1_ptr, x2_ptr, x3_ptr, M, N, K,
    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    stride_sam, stride_sak, stride_sbk, stride_sbn,
    stride_x0b, stride_x0m, stride_x0n, stride_x1b, stride_x1m, stride_x1n,
    stride_x2b, stride_x2m, stride_x2n, stride_x3b, stride_x3m, stride_x3n,
    e0s0, e0s1, e1s0, e1s1, e2s0, e2s1, e3s0, e3s1,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    A_DESC: tl.constexpr, B_DESC: tl.constexpr, SCALING: tl.constexpr, INT_ACC: tl.constexpr,
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr, FAST_ACCUM: tl.constexpr,
    EPI0: tl.constexpr, EPI1: tl.constexpr, EPI2: tl.constexpr, EPI3: tl.constexpr,
    INDEX_64: tl.constexpr, BF16_RNE: tl.constexpr,
):  # fmt: skip
    """One program per output tile; grid = (tiles along M, tiles along N, batch)."""
    gemm_tile(
        tl.program_id(2), tl.program_id(0), tl.program_id(1),
        (a_ptr, stride_ab, stride_am, stride_ak),
        (b_ptr, stride_bb, stride_bk, stride_bn),
        (c_ptr, stride_cb, stride_cm, stride_cn),
        (a_scale_ptr, b_scale_ptr, stride_sam, stride_sak, stride_sbk, stride_sbn),
        ((x0_ptr, stride_x0b, stride_x0m, stride_x0n, e0s0, e0s1),
         (x1_ptr, stride_x1b, stride_x1m, stride_x1n, e1s0, e1s1),
         (x2_ptr, stride_x2b, stride_x2m, stride_x2n, e2s0, e2s1),
         (x3_ptr, stride_x3b, stride_x3m, stride_x3n, e3s0, e3s1)),
        M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, A_DESC, B_DESC, SCALING, INT_ACC, DOT_UPCAST,
        INPUT_PRECISION, FAST_ACCUM, (EPI0, EPI1, EPI2, EPI3), INDEX_64, BF16_RNE,
    )  # fmt: skip


@triton.jit
def gemm_persistent_kernel(
    a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, x0_ptr, x1_ptr, x2_ptr, x3_ptr, M, N, K, BATCH,
    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    stride_sam, stride_sak, stride_sbk, stride_sbn,
    stride_x0b, stride_x0m, stride_x0n, stride_x1b, stride_x1m, stride_x1n,
    stride_x2b, stride_x2m, stride_x2n, stride_x3b, stride_x3m, stride_x3n,
    e0s0, e0s1, e1s0, e1s1, e2s0, e2s1, e3s0, e3s1,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    A_DESC: tl.constexpr, B_DESC: tl.constexpr, SCALING: tl.constexpr, INT_ACC: tl.constexpr,
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr, FAST_ACCUM: tl.constexpr,
    EPI0: tl.constexpr, EPI1: tl.constexpr, EPI2: tl.constexpr, EPI3: tl.constexpr,
    INDEX_64: tl.constexpr, BF16_RNE: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
):  # fmt: skip
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
            pid_b, pid_m, pid_n,
            (a_ptr, stride_ab, stride_am, stride_ak),
            (b_ptr, stride_bb, stride_bk, stride_bn),
            (c_ptr, stride_cb, stride_cm, stride_cn),
            (a_scale_ptr, b_scale_ptr, stride_sam, stride_sak, stride_sbk, stride_sbn),
            ((x0_ptr, stride_x0b, stride_x0m, stride_x0n, e0s0, e0s1),
             (x1_ptr, stride_x1b, stride_x1m, stride_x1n, e1s0, e1s1),
             (x2_ptr, stride_x2b, stride_x2m, stride_x2n, e2s0, e2s1),
             (x3_ptr, stride_x3b, stride_x3m, stride_x3n, e3s0, e3s1)),
            M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, A_DESC, B_DESC, SCALING, INT_ACC, DOT_UPCAST,
            INPUT_PRECISION, FAST_ACCUM, (EPI0, EPI1, EPI2, EPI3), INDEX_64, BF16_RNE,
        )  # fmt: skip


def parameters(kernel: object) -> list[tuple[str, bool]]:
    """(name, is_constexpr) for each parameter of a kernel, jit wrapper or interpreter object."""
    import inspect

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
# the runtime parameters `gemm_kernel_unaligned` is compiled without alignment specialisation for
UNALIGNED_PARAMETERS = frozenset(
    name for name, constexpr in parameters(gemm_kernel) if not constexpr
)
gemm_kernel_unaligned = triton.jit(do_not_specialize_on_alignment=sorted(UNALIGNED_PARAMETERS))(
    gemm_kernel.fn
)
