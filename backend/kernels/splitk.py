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

Stream-K (`STREAM`, `split_k="stream"`): one program per SM (fewer where the problem has fewer
steps), the problem's (tile, K tile) steps laid out tile after tile and cut into equal shares,
one per program. A program walks its share: a tile it holds whole it finishes itself; a part of
a tile (its share's first and last, at most) goes to its two workspace slots, and the tile's
last arriving part sums the parts in program order, as above. Which programs hold a tile's
parts follows from the share bounds (`stream_owner`), so the order is fixed by the problem and
the program count: two calls give the same bits; GPUs with other SM counts may differ.

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
    # slice s's partial in slot s * tiles + tile
    arrive_and_finish(acc, workspace, tile, pid_s * tiles + tile, tile, tile, tiles, splits, off_m,
                      off_n, c, scales, slots, M, N, BLOCK_M, BLOCK_N, SCALING, EPI,
                      BF16_RNE)  # fmt: skip


@triton.jit
def arrive_and_finish(acc, workspace, tile, slot, first, base, step, count, off_m, off_n, c,
                      scales, slots, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      SCALING: tl.constexpr, EPI: tl.constexpr,
                      BF16_RNE: tl.constexpr):  # fmt: skip
    """Store this program's partial sum `acc` of `tile` in workspace slot `slot` and count it in
    the tile's arrival counter; the program that arrives `count`-th sums the tile's partials in
    the order of their slots (`first`, then `base + step`, `base + 2 * step`, ... `count` of
    them), resets the counter and finishes the tile: the order is the slots', whoever sums."""
    ws_ptr, count_ptr = workspace
    rows = tl.arange(0, BLOCK_M)
    block = rows[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    live = (off_m + rows)[:, None] < M  # rows past M are never read back
    tl.store(ws_ptr + slot * (BLOCK_M * BLOCK_N) + block, acc, mask=live)
    tl.debug_barrier()  # every thread's partial stored before the arrival releases them
    arrived = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")
    if arrived == count - 1:
        total = tl.load(ws_ptr + first * (BLOCK_M * BLOCK_N) + block, mask=live, other=0.0,
                        cache_modifier=".cg")  # fmt: skip
        for j in range(1, count):
            part = ws_ptr + (base + j * step) * (BLOCK_M * BLOCK_N) + block
            total += tl.load(part, mask=live, other=0.0, cache_modifier=".cg")
        tl.atomic_xchg(count_ptr + tile, 0)  # ready for the next launch
        offs_m = off_m + rows
        offs_n = off_n + tl.arange(0, BLOCK_N)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        finish_tile(total, 0, offs_m, offs_n, mask, c, scales, slots, M, N, SCALING, EPI,
                    BF16_RNE)  # fmt: skip


@triton.jit
def share_start(program, programs, total):
    """The first of the `total` (tile, K tile) steps in `program`'s share: program p takes steps
    [share_start(p), share_start(p + 1))."""
    return program * total // programs


@triton.jit
def stream_owner(x, programs, total):
    """The program whose share of the `total` (tile, K tile) steps holds step `x`."""
    return ((x + 1) * programs - 1) // total


@triton.jit
def streamk_tiles(a, b, c, scales, slots, workspace, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  A_DESC: tl.constexpr, B_DESC: tl.constexpr, SCALING: tl.constexpr,
                  DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                  FAST_ACCUM: tl.constexpr, EPI: tl.constexpr,
                  BF16_RNE: tl.constexpr):  # fmt: skip
    """This program's equal share of all tiles' K steps (tile after tile, each tile's K tiles in
    order): a tile it covers whole it finishes itself; a part of a tile (at most the first and
    the last of its share) goes to its two workspace slots, 2p (the part its share starts with)
    and 2p + 1, and the tile's last arriving part sums them in program order."""
    a_ptr, _, stride_am, stride_ak = a
    b_ptr, _, stride_bk, stride_bn = b
    program = tl.program_id(0)
    programs = tl.num_programs(0)
    tiles_n = cdiv(N, BLOCK_N)
    steps = cdiv(K, BLOCK_K)  # K tiles per output tile
    total = cdiv(M, BLOCK_M) * tiles_n * steps
    start = share_start(program, programs, total)
    end = share_start(program + 1, programs, total)
    x = start
    while x < end:
        tile = x // steps
        tile_start = tile * steps
        part_end = tl.minimum(end, tile_start + steps)
        k_start = (x - tile_start) * BLOCK_K
        k_len = tl.minimum(K - k_start, (part_end - x) * BLOCK_K)
        off_m = (tile // tiles_n) * BLOCK_M
        off_n = (tile % tiles_n) * BLOCK_N
        acc = mainloop(
            (a_ptr + k_start * stride_ak, stride_am, stride_ak),
            (b_ptr + k_start * stride_bk, stride_bk, stride_bn),
            scales, M, N, k_len, off_m, off_n, BLOCK_M, BLOCK_N, BLOCK_K, A_DESC, B_DESC,
            SCALING, False, DOT_UPCAST, INPUT_PRECISION, FAST_ACCUM, "mma", False,
        )  # fmt: skip
        first_owner = stream_owner(tile_start, programs, total)
        parts = stream_owner(tile_start + steps - 1, programs, total) - first_owner + 1
        if parts == 1:
            offs_m = off_m + tl.arange(0, BLOCK_M)
            offs_n = off_n + tl.arange(0, BLOCK_N)
            mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
            finish_tile(acc, 0, offs_m, offs_n, mask, c, scales, slots, M, N, SCALING, EPI,
                        BF16_RNE)  # fmt: skip
        else:
            # the first owner's part is its share's last (slot 2p + 1) unless its share starts
            # with this tile; every later owner's share starts in this tile (slot 2p)
            owner_start = share_start(first_owner, programs, total)
            first = 2 * first_owner + (owner_start != tile_start).to(tl.int32)
            slot = 2 * program + (x != start).to(tl.int32)
            arrive_and_finish(acc, workspace, tile, slot, first, 2 * first_owner, 2, parts, off_m,
                              off_n, c, scales, slots, M, N, BLOCK_M, BLOCK_N, SCALING, EPI,
                              BF16_RNE)  # fmt: skip
        x = part_end


# gemm_kernel's launch ABI (dense.py) and the workspace: partial sums (fp32; split-K: slices x
# tiles x BLOCK_M x BLOCK_N, stream-K: programs x 2 x BLOCK_M x BLOCK_N) and one arrival counter
# per tile (int32, 0 between launches)
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
    BF16_RNE: tl.constexpr, STREAM: tl.constexpr,
):  # fmt: skip
    """Split-K: one program per (output tile, K slice), grid = (tiles along M, tiles along N,
    slices). Stream-K (`STREAM`): grid = (programs,), each an equal share of all tiles' K steps.
    One batch, 32-bit offsets, a floating-point accumulator (the launcher sends no others)."""
    a = (a_ptr, stride_ab, stride_am, stride_ak)
    b = (b_ptr, stride_bb, stride_bk, stride_bn)
    c = (c_ptr, stride_cb, stride_cm, stride_cn)
    scales = (a_scale_ptr, b_scale_ptr, stride_sam, stride_sak, stride_sbk, stride_sbn)
    slots = ((x0_ptr, stride_x0b, stride_x0m, stride_x0n, e0s0, e0s1),
             (x1_ptr, stride_x1b, stride_x1m, stride_x1n, e1s0, e1s1),
             (x2_ptr, stride_x2b, stride_x2m, stride_x2n, e2s0, e2s1),
             (x3_ptr, stride_x3b, stride_x3m, stride_x3n, e3s0, e3s1))  # fmt: skip
    if STREAM:
        streamk_tiles(a, b, c, scales, slots, (ws_ptr, count_ptr), M, N, K, BLOCK_M, BLOCK_N,
                      BLOCK_K, A_DESC, B_DESC, SCALING, DOT_UPCAST, INPUT_PRECISION, FAST_ACCUM,
                      (EPI0, EPI1, EPI2, EPI3), BF16_RNE)  # fmt: skip
    else:
        splitk_tile(tl.program_id(0), tl.program_id(1), a, b, c, scales, slots,
                    (ws_ptr, count_ptr), M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, A_DESC, B_DESC,
                    SCALING, DOT_UPCAST, INPUT_PRECISION, FAST_ACCUM, (EPI0, EPI1, EPI2, EPI3),
                    BF16_RNE)  # fmt: skip


SPLITK = "splitk_gemm_kernel"
