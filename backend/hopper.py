"""The sm90 GEMM kernel with a producer warp feeding two consumer warpgroups, written in Gluon
(Triton's lower-level language) to get that split: medium and large fp8 `_scaled_mm` without
`use_fast_accum`, and medium and large bf16/fp16 `mm`/`linear`, on Hopper.

Why a second kernel: the Triton kernels' software-pipelined K loop has every warp meet at a CTA
barrier each K step. On fp8 at 8192^3 that held `gemm_persistent_kernel` at 0.72-0.86x cuBLAS:
Nsight Compute put 62% of its stall cycles at that barrier and its tensor pipe idled 40% of the
time (BENCHMARKS.md, "2026-11-26, 02b9214"). cuBLAS runs a producer and consumer warpgroups
instead, and so does this kernel (BENCHMARKS.md: as benchmark items bf16 0.98-1.05x cuBLAS,
964a600; fp8 without fast accumulation 1.00-1.24x, 68e21b2).

The structure, per program (one per SM, walking output tiles of 128 x BLOCK_N in GROUP_M order):
- the loader partition (one warp) streams, for each K tile, A's two 64-row halves and B's tile
  into a ring of STAGES shared-memory slots through TMA. Slot s has a `ready` barrier (the TMA
  bytes landed) and an `empty` barrier (both consumers are done with it);
- consumer h (a warpgroup: h = 0 is the default partition, h = 1 a worker) multiplies rows
  64h..64h+63 of the tile. With PROMOTE (fp8 without fast accumulation, 128-column tiles) each
  K tile's wgmma instructions chain into a fresh product, which is then added into the fp32
  accumulator: the class of error cuBLAS has, and the same products and additions, in the same
  order, as the Triton kernel's "mma" variant (bitwise equal on an H100). K tile i+1's product
  is in flight while tile i's is added, in a second set of registers (`_promoted_k_loop` says
  why the two sets alternate). Without it (16-bit types) the K tiles chain into one
  accumulator, one wgmma group kept in flight while the previous tile's slot is freed;
- the epilogue scales (fp8: tensorwise or rowwise), converts and stores the consumer's rows
  through shared memory with a TMA store, which overlaps what follows.

Operands: A (M, K) K-contiguous; B K-contiguous as (N, K) (`B_KN` False, the only layout fp8
wgmma reads) or N-contiguous as (K, N) (`B_KN` True, 16-bit types); the output (M, N) with unit
column stride (the launcher allocates every output contiguous). `launcher.hopper_plan` checks
the operands and sizes the ring to shared memory. Gluon kernels cannot run in the Triton
interpreter: on a CPU this kernel is only cross-compiled (its IR for the code checks);
its numerics are checked on an sm90 GPU.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

HALF_M = gl.constexpr(64)  # rows per consumer warpgroup (a warpgroup's wgmma has M = 64)
CONSUMER_REGS = gl.constexpr(232)  # registers per thread of the worker consumer (setmaxnreg)
LOADER_REGS = gl.constexpr(40)  # and of the loader warp


@gluon.jit
def _tile_of(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """Output tile `tile`'s (row, column), GROUP_M tile rows at a time (L2 reuse of B)."""
    per_group = GROUP_M * num_pid_n
    first_m = (tile // per_group) * GROUP_M
    rows = gl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


@gluon.jit
def _loader(
    a_desc,
    b_desc,
    a_bufs,
    b_bufs,
    ready,
    empty,
    num_pid_m,
    num_pid_n,
    k_tiles,
    BLOCK_N: gl.constexpr,
    BLOCK_K: gl.constexpr,
    STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    NUM_PROGRAMS: gl.constexpr,
    B_KN: gl.constexpr,
):
    half: gl.constexpr = a_desc.block_type.shape[0]
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS):
        pid_m, pid_n = _tile_of(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * 2 * half
        off_n = pid_n * BLOCK_N
        for kt in range(k_tiles):
            s = step % STAGES
            # a slot's first use waits for the phase before the barrier's first: it passes
            mbarrier.wait(empty.index(s), ((step // STAGES) & 1) ^ 1)
            mbarrier.expect(
                ready.index(s),
                2 * a_desc.block_type.nbytes + b_desc.block_type.nbytes,
            )
            k = kt * BLOCK_K
            tma.async_copy_global_to_shared(a_desc, [off_m, k], ready.index(s), a_bufs.index(2 * s))
            tma.async_copy_global_to_shared(
                a_desc, [off_m + half, k], ready.index(s), a_bufs.index(2 * s + 1)
            )
            b_at = [k, off_n] if B_KN else [off_n, k]
            tma.async_copy_global_to_shared(b_desc, b_at, ready.index(s), b_bufs.index(s))
            step += 1


@gluon.jit
def _consumer(
    shared,
    HALF: gl.constexpr,
    BLOCK_N: gl.constexpr,
    STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    NUM_PROGRAMS: gl.constexpr,
    B_KN: gl.constexpr,
    PROMOTE: gl.constexpr,
    SCALING: gl.constexpr,
):
    """Consumer warpgroup HALF: rows 64 * HALF.. of each tile (`shared`: both consumers' inputs)."""
    (a_bufs, b_bufs, ready, empty, c_desc, c_bufs, a_scale_ptr, b_scale_ptr) = shared[:8]
    (M, N, stride_sam, stride_sbn, num_pid_m, num_pid_n, k_tiles) = shared[8:]
    half: gl.constexpr = c_desc.block_type.shape[0]
    k_step: gl.constexpr = 256 // a_bufs.dtype.primitive_bitwidth  # a wgmma's K
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, k_step]
    )
    epilogue = (c_desc, c_bufs.index(HALF), a_scale_ptr, b_scale_ptr, M, N, stride_sam, stride_sbn)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS):
        pid_m, pid_n = _tile_of(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * 2 * half + HALF * half
        off_n = pid_n * BLOCK_N
        if PROMOTE:
            acc, step = _promoted_k_loop(
                a_bufs, b_bufs, ready, empty, step, k_tiles, HALF, BLOCK_N, STAGES, layout
            )
        else:
            acc, step = _chained_k_loop(
                a_bufs, b_bufs, ready, empty, step, k_tiles, HALF, BLOCK_N, STAGES, B_KN, layout
            )
        _store(acc, off_m, off_n, epilogue, SCALING, layout)
    tma.store_wait(0)


@gluon.jit
def _issue_product(a_bufs, b_bufs, ready, step, HALF: gl.constexpr, STAGES: gl.constexpr, like):
    """K tile `step`'s product for consumer HALF, issued once its slot's bytes have landed and
    left in flight; `like` gives only the result's type and registers (use_acc=False)."""
    s = step % STAGES
    mbarrier.wait(ready.index(s), (step // STAGES) & 1)
    b = b_bufs.index(s).permute((1, 0))  # B read as (N, K): K-major, as fp8 wants
    return warpgroup_mma(a_bufs.index(2 * s + HALF), b, like, use_acc=False, is_async=True)


@gluon.jit
def _promoted_k_loop(
    a_bufs,
    b_bufs,
    ready,
    empty,
    step,
    k_tiles,
    HALF: gl.constexpr,
    BLOCK_N: gl.constexpr,
    STAGES: gl.constexpr,
    layout: gl.constexpr,
):
    """fp8 without fast accumulation, one tile's K loop: each K tile's wgmma instructions chain
    into a fresh product, which is added into the fp32 accumulator once complete; K tile i+1's
    product is issued before tile i's is added, so the addition runs while the tensor cores
    work (without that, each consumer's tensor work stopped for every addition: 0.91-0.95x
    cuBLAS on some H100s, BENCHMARKS.md "2026-11-26, 1c1f754"; with it 1.00-1.24x,
    "2026-11-27, 68e21b2").
    The two products live in two register sets used alternately, two K tiles a loop step: an
    instruction that reads or copies the registers of a wgmma in flight (as `part = ahead`
    across one set would) makes ptxas serialize every wgmma (warning C7514, 21-27% slower).
    A slot is freed once its product is complete. Registers: the accumulator and two products,
    64x128 fp32 each."""
    acc = gl.zeros([HALF_M, BLOCK_N], gl.float32, layout)
    odd = gl.zeros([HALF_M, BLOCK_N], gl.float32, layout)
    even = _issue_product(a_bufs, b_bufs, ready, step, HALF, STAGES, acc)
    for _ in range((k_tiles - 1) // 2):
        odd = _issue_product(a_bufs, b_bufs, ready, step + 1, HALF, STAGES, odd)
        acc, even = _add_product(acc, even, empty, step, STAGES, 1)
        even = _issue_product(a_bufs, b_bufs, ready, step + 2, HALF, STAGES, even)
        acc, odd = _add_product(acc, odd, empty, step + 1, STAGES, 1)
        step += 2
    # `even` holds the last K tile's product (k_tiles odd) or the one before it (even); the
    # branches keep only the sum, since a branch may not change a loop-carried product's type
    if k_tiles % 2 == 0:
        last = _issue_product(a_bufs, b_bufs, ready, step + 1, HALF, STAGES, odd)
        acc = _add_product(acc, even, empty, step, STAGES, 1)[0]
        acc = _add_product(acc, last, empty, step + 1, STAGES, 0)[0]
        step += 2
    else:
        acc = _add_product(acc, even, empty, step, STAGES, 0)[0]
        step += 1
    return acc, step


@gluon.jit
def _add_product(acc, product, empty, step, STAGES: gl.constexpr, IN_FLIGHT: gl.constexpr):
    """K tile `step`'s product once complete (IN_FLIGHT: the wgmma groups left running), its
    slot freed, and added into `acc`. Returns the sum and the completed product, whose
    registers the caller may pass on as the next product's (`_issue_product`'s `like`)."""
    product = warpgroup_mma_wait(num_outstanding=IN_FLIGHT, deps=(product,))
    mbarrier.arrive(empty.index(step % STAGES), count=1)
    return acc + product, product


@gluon.jit
def _chained_k_loop(
    a_bufs,
    b_bufs,
    ready,
    empty,
    step,
    k_tiles,
    HALF: gl.constexpr,
    BLOCK_N: gl.constexpr,
    STAGES: gl.constexpr,
    B_KN: gl.constexpr,
    layout: gl.constexpr,
):
    """16-bit types, one tile's K loop: every K tile chains into one accumulator; waiting down
    to one wgmma group in flight finishes the previous K tile's, whose slot is then free."""
    acc = gl.zeros([HALF_M, BLOCK_N], gl.float32, layout)
    prev = 0
    for kt in range(k_tiles):
        s = step % STAGES
        mbarrier.wait(ready.index(s), (step // STAGES) & 1)
        if B_KN:
            b = b_bufs.index(s)
        else:
            b = b_bufs.index(s).permute((1, 0))
        acc = warpgroup_mma(a_bufs.index(2 * s + HALF), b, acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
        if kt > 0:
            mbarrier.arrive(empty.index(prev), count=1)
        prev = s
        step += 1
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    mbarrier.arrive(empty.index(prev), count=1)
    return acc, step


@gluon.jit
def _store(acc, off_m, off_n, epilogue, SCALING: gl.constexpr, layout: gl.constexpr):
    """Scale (fp8: tensorwise or rowwise), convert and store `acc` at (off_m, off_n) through
    this consumer's shared-memory buffer with a TMA store, which overlaps what follows."""
    (c_desc, c_smem, a_scale_ptr, b_scale_ptr, M, N, stride_sam, stride_sbn) = epilogue
    half: gl.constexpr = c_desc.block_type.shape[0]
    cols: gl.constexpr = c_desc.block_type.shape[1]
    if SCALING == "tensorwise":
        acc = acc * gl.load(a_scale_ptr) * gl.load(b_scale_ptr)
    elif SCALING == "rowwise":  # (M, 1) and (1, N) scales
        rows = off_m + gl.arange(0, half, layout=gl.SliceLayout(1, layout))
        columns = off_n + gl.arange(0, cols, layout=gl.SliceLayout(0, layout))
        scale_a = gl.load(a_scale_ptr + rows * stride_sam, mask=rows < M, other=0.0)
        scale_b = gl.load(b_scale_ptr + columns * stride_sbn, mask=columns < N, other=0.0)
        acc = acc * scale_a[:, None] * scale_b[None, :]
    tma.store_wait(0)  # the previous store has read the buffer
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)


# long: Gluon's shared buffers, barriers and warp_specialize call stay in the one kernel body
@gluon.jit
def hopper_gemm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale_ptr,
    b_scale_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_sam,
    stride_sbn,
    BLOCK_N: gl.constexpr,
    BLOCK_K: gl.constexpr,
    STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    NUM_PROGRAMS: gl.constexpr,
    B_KN: gl.constexpr,
    PROMOTE: gl.constexpr,
    SCALING: gl.constexpr,
):
    """C = scale(A @ B) for A (M, K) K-contiguous and B (K, N), K- or N-contiguous (`B_KN`);
    one program per SM."""
    half: gl.constexpr = HALF_M
    a_ty: gl.constexpr = a_ptr.dtype.element_ty
    b_ty: gl.constexpr = b_ptr.dtype.element_ty
    c_ty: gl.constexpr = c_ptr.dtype.element_ty
    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([half, BLOCK_K], a_ty)
    c_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([half, BLOCK_N], c_ty)
    a_desc = tma.make_tensor_descriptor(
        a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[half, BLOCK_K], layout=a_layout
    )
    # B's tile as it sits in memory: (K, N) where N is contiguous (B_KN), else (N, K)
    b_block: gl.constexpr = [BLOCK_K, BLOCK_N] if B_KN else [BLOCK_N, BLOCK_K]
    b_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for(b_block, b_ty)
    b_desc = tma.make_tensor_descriptor(
        b_ptr,
        shape=[K, N] if B_KN else [N, K],
        strides=[stride_bk, 1] if B_KN else [stride_bn, 1],
        block_shape=b_block,
        layout=b_layout,
    )
    b_bufs = gl.allocate_shared_memory(b_ty, [STAGES, b_block[0], b_block[1]], b_layout)
    c_desc = tma.make_tensor_descriptor(
        c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[half, BLOCK_N], layout=c_layout
    )
    a_bufs = gl.allocate_shared_memory(a_ty, [2 * STAGES, half, BLOCK_K], a_layout)
    c_bufs = gl.allocate_shared_memory(c_ty, [2, half, BLOCK_N], c_layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)  # one arrival per consumer
    fence_async_shared()

    num_pid_m = gl.cdiv(M, 2 * half)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    shared = (a_bufs, b_bufs, ready, empty, c_desc, c_bufs, a_scale_ptr, b_scale_ptr)
    shared += (M, N, stride_sam, stride_sbn, num_pid_m, num_pid_n, k_tiles)
    LOW: gl.constexpr = 0
    HIGH: gl.constexpr = 1
    gl.warp_specialize(
        [
            (
                _consumer,
                (
                    shared,
                    LOW,
                    BLOCK_N,
                    STAGES,
                    GROUP_M,
                    NUM_PROGRAMS,
                    B_KN,
                    PROMOTE,
                    SCALING,
                ),
            ),
            (
                _consumer,
                (
                    shared,
                    HIGH,
                    BLOCK_N,
                    STAGES,
                    GROUP_M,
                    NUM_PROGRAMS,
                    B_KN,
                    PROMOTE,
                    SCALING,
                ),
            ),
            (
                _loader,
                (
                    a_desc,
                    b_desc,
                    a_bufs,
                    b_bufs,
                    ready,
                    empty,
                    num_pid_m,
                    num_pid_n,
                    k_tiles,
                    BLOCK_N,
                    BLOCK_K,
                    STAGES,
                    GROUP_M,
                    NUM_PROGRAMS,
                    B_KN,
                ),
            ),
        ],
        [4, 1],
        [CONSUMER_REGS, LOADER_REGS],
    )
